"""Provenance of reproduced training documents: their metadata, the licence found in their text, and the
personal data (e-mail addresses, phone numbers, keys and tokens) in the spans a model reproduces
(`lmaudit provenance`; docs/provenance.md)."""
