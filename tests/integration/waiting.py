"""Waiting for a condition in integration tests, with a deadline that names what was awaited."""

import time


def wait_for(predicate, timeout_s: float, what: str, interval_s: float = 0.1):
    """predicate()'s first truthy value; AssertionError naming `what` after timeout_s."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval_s)
    raise AssertionError(f"timed out waiting for {what}")
