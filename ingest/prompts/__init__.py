"""Prompt sets of the five PropMe settings (spec/propme.md, section 1)."""
