"""User-facing errors.

A `UserError` is a problem with the user's input or environment (a malformed file, a missing index, a
forbidden path). The CLI prints its message as one line, without a traceback, and exits with status 2.
A `StepFailed` is a step that ran and did not succeed (a dbt build whose models or tests fail): one line,
exit status 1, so that `lmaudit build && lmaudit export` stops. Everything else is a bug: the CLI prints
one line naming the file that holds its traceback, and exits 1.
"""


class UserError(Exception):
    """A problem the user can fix; the message names the problem and the fix in one line."""

    exit_code = 2

    def __init__(self, message: str):
        super().__init__(" ".join(message.split()))


class StepFailed(UserError):
    """A step that ran and failed (e.g. dbt models or tests); the message is the one-line summary."""

    exit_code = 1
