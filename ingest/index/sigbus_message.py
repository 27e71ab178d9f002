"""The environment variable that carries the SIGBUS handler's message: set by `ingest.index.sigbus` (Python, on
every index open) and read by the compiled handler (`ingest.index.sigbus_handler`), defined once here so that
neither of those two modules imports the other for it."""

ENV_VAR = "LMAUDIT_SIGBUS_MESSAGE"
