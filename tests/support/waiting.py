"""Waiting for a condition in tests, with a deadline that names what was awaited.

The one polling helper of the suite: a failure says what the test waited for
and, when the caller can tell more (partition states, a log tail), why.
"""

from __future__ import annotations

import time
from typing import Callable, TypeVar

T = TypeVar("T")


def wait_for(predicate: Callable[[], T], timeout_s: float, what: str, interval_s: float = 0.1,
             diagnose: Callable[[], str] | None = None) -> T:
    """predicate()'s first truthy value, polled every `interval_s`.

    After `timeout_s` it fails with an AssertionError naming `what`, followed
    by `diagnose()` when given. The predicate is evaluated once more at the
    deadline, so a condition that became true while the test slept counts.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            detail = f"\n{diagnose()}" if diagnose is not None else ""
            raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}{detail}")
        time.sleep(interval_s)
