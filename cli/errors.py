"""Errors the CLI reports as one line on stderr, with their exit codes.

Command code raises these (or translates a library's typed exceptions into
them); `main()` prints the message and exits with `exit_code`. Anything else
that escapes is a bug and is reported as an internal error.
"""

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


class CliError(Exception):
    """The operation failed (exit 1). `details` go on the lines after the message."""

    exit_code = EXIT_FAILED

    def __init__(self, message: str, details: str = ""):
        super().__init__(message)
        self.message = message
        self.details = details


class CliUsageError(CliError):
    """Bad usage or input: wrong option, bad value, unknown name (exit 2)."""

    exit_code = EXIT_USAGE
