"""A response that is decided later than its request was handled.

Kept apart from the dispatcher, which builds them, so that the network
layer, which sends them, need not import every handler.
"""

from __future__ import annotations

import time

from kafkactl.cluster.protocol.codec import encode_response


class PendingAnswer:
    """What a handler returns when its answer must wait: an acks=-1 produce
    whose batches wait for the ISR, a Metadata request that waits for the
    controller's first UpdateMetadata. `answer` blocks (on the connection's
    answer sender, never on the thread that reads requests), with a bound,
    and returns the response object."""

    __slots__ = ()

    def answer(self):
        raise NotImplementedError


class FutureAnswer(PendingAnswer):
    """The answer built from a Future completed on another thread (the group
    coordinator's owners, the admin-work thread): `build(result)` once it is
    done, or `build(on_timeout)` after `timeout_s`. A Future that failed
    gives `build` its exception."""

    __slots__ = ("_future", "_timeout_s", "_build", "_on_timeout")

    def __init__(self, future, timeout_s: float, build, on_timeout) -> None:
        self._future = future
        self._timeout_s = timeout_s
        self._build = build
        self._on_timeout = on_timeout

    def answer(self):
        try:
            result = self._future.result(timeout=self._timeout_s)
        except TimeoutError:
            result = self._on_timeout
        except Exception as error:     # the work's own failure: the handler maps it
            result = error
        return self._build(result)


class DeferredResponse:
    """A request that is handled but not yet answerable (a PendingAnswer).
    `finish` blocks until it is and returns the encoded response; the
    request's latency is counted then."""

    __slots__ = ("_pending", "_correlation_id", "_stats", "_started")

    def __init__(self, pending, correlation_id: int, stats, started: float) -> None:
        self._pending = pending
        self._correlation_id = correlation_id
        self._stats = stats
        self._started = started

    def finish(self) -> bytes:
        try:
            return encode_response(self._pending.answer(), self._correlation_id)
        except BaseException:
            self._stats.errors += 1
            raise
        finally:
            self._stats.observe(time.perf_counter() - self._started)
