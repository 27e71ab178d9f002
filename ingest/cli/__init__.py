"""The `lmaudit` command line."""
