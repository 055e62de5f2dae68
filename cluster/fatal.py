"""Stopping the process when a guaranteed property did not hold.

An InvariantViolation (invariant.py) is a bug, never bad input: the state
of the thread that met it cannot be trusted, and a broker or controller
that runs on with it may spread the damage (a wrong leader, a lost
record). So it is fatal everywhere, as Kafka halts on its fatal errors:

- `halt(reason)` logs, flushes the log handlers and standard streams, and
  ends the process at once with a non-zero status (os._exit: no cleanup
  that could itself hang or act on the broken state). It is a plain call,
  never an `assert`: `python -O` must not strip it.
- Every broad `except Exception` in cluster/ that keeps a thread alive
  (network, fetchers, writers, timers, the controller's event thread) lets
  an InvariantViolation through to `halt_if_fatal` first.
- `install_thread_hook()` (the broker's entry point) halts on one that
  escapes a thread's run function entirely.

Tests replace `_exit` (the one place the process ends) to observe a halt.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from typing import NoReturn

from kafkactl.cluster.invariant import InvariantViolation

log = logging.getLogger(__name__)

EXIT_STATUS = 70          # EX_SOFTWARE: an internal error


def _exit(status: int) -> NoReturn:
    os._exit(status)


def halt(reason: str, error: BaseException | None = None) -> NoReturn:
    try:
        log.critical("halting: %s", reason, exc_info=error)
        for handler in logging.getLogger().handlers:
            handler.flush()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        _exit(EXIT_STATUS)


def is_fatal(error: BaseException) -> bool:
    return isinstance(error, InvariantViolation)


def halt_if_fatal(error: BaseException, where: str) -> None:
    """In a broad handler, before carrying on: a violated invariant halts."""
    if isinstance(error, InvariantViolation):
        halt(f"{where}: invariant violated: {error}", error)


def install_thread_hook() -> None:
    """Halt on an InvariantViolation that ends a thread; others as before."""
    previous = threading.excepthook

    def hook(args) -> None:
        if args.exc_value is not None and is_fatal(args.exc_value):
            thread = args.thread.name if args.thread is not None else "?"
            halt(f"thread {thread}: invariant violated: {args.exc_value}", args.exc_value)
        previous(args)

    threading.excepthook = hook
