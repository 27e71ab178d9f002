"""SimpleTrace: trace generations against the full training corpus (spec/propme.md, sections 2 and 3)."""
