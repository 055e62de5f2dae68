"""Typed errors of the local-cluster machinery.

The CLI maps them to exit codes: `LocalClusterUsageError` and its subclasses
are the caller's mistake (exit 2), every other `LocalClusterError` is an
operation that failed (exit 1).
"""


class LocalClusterError(Exception):
    """Starting, stopping or inspecting a local cluster failed."""


class LocalClusterUsageError(LocalClusterError):
    """The request itself is wrong: fix the arguments, then retry."""


class ShapeMismatchError(LocalClusterUsageError):
    """A directory already holds a cluster of a different shape."""


class NotAClusterDirError(LocalClusterUsageError):
    """A directory does not look like one of ours, so we will not touch it."""


class StartupError(LocalClusterError):
    """A process died or did not become ready before its deadline."""

    def __init__(self, message: str, log_file: str | None = None, log_tail: str = ""):
        super().__init__(message)
        self.log_file = log_file
        self.log_tail = log_tail
