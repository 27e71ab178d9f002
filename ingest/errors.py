"""User-facing errors.

A `UserError` is a problem with the user's input or environment (a malformed file, a missing index, a
forbidden path). The CLI prints its message as one line, without a traceback, and exits with status 2.
Everything else is a bug and keeps its traceback.
"""


class UserError(Exception):
    """A problem the user can fix; the message names the problem and the fix in one line."""

    exit_code = 2

    def __init__(self, message: str):
        super().__init__(" ".join(message.split()))
