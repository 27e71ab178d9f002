"""SimpleTrace: trace generations against the full training corpus (docs/propme-method.md, sections 2 and 3)."""
