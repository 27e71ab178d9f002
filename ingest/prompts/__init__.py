"""Prompt sets of the five PropMe settings (docs/propme-method.md, section 1)."""
