"""Connections to a cluster's brokers for the length of one kafkactl command.

One session per broker, opened on first use (ApiVersions v0, then the
highest version both sides speak: broker_queries._Session), all under the
command's deadline: a connection or a request gets at most
REQUEST_TIMEOUT_S, and never more than what is left of the deadline. A
broker that cannot be reached, or whose connection breaks, raises
`BrokerUnavailable` (its session is dropped, so the next request
reconnects); the clients above decide whether to retry and where.
Exponential backoff between their rounds is `Backoff`'s.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from kafkactl.cluster.admin.broker_queries import BrokerAddress

REQUEST_TIMEOUT_S = 15.0          # one request; the command's deadline bounds it further


class BrokerUnavailable(Exception):
    """The broker could not be reached, its connection broke, or the deadline passed."""


class BrokerSessions:
    def __init__(self, timeout_s: float, connect: Callable | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._connect = connect or _connect
        self._clock = clock
        self._deadline = clock() + timeout_s
        self._sessions: dict[tuple[str, int], object] = {}

    def remaining_s(self) -> float:
        return max(0.0, self._deadline - self._clock())

    def version(self, address: BrokerAddress, api: tuple[int, int, int]) -> int | None:
        """The version of `api` (key, lowest, highest wanted) to use; None: the broker has none of them."""
        return self.session(address).version(api)

    def send(self, address: BrokerAddress, api: tuple[int, int, int], build: Callable[[int], object],
             unsupported: Callable[[], Exception]):
        """`build(version)` sent to the broker, its response decoded;
        `unsupported()` is raised when the broker lacks the API."""
        from kafkactl.cluster.protocol.codec import response_class

        version = self.version(address, api)
        if version is None:
            raise unsupported()
        session = self.session(address)
        timeout_s = min(self.remaining_s(), REQUEST_TIMEOUT_S)
        if timeout_s <= 0:
            raise BrokerUnavailable("the deadline passed")
        try:
            return session.client.request(build(version), timeout_s=timeout_s,
                                          response_cls=response_class(api[0], version))
        except ConnectionError as error:   # BrokerConnectionError: the client closed the socket
            self._sessions.pop((address.host, address.port), None)
            session.close()
            raise BrokerUnavailable(str(error)) from None

    def session(self, address: BrokerAddress):
        key = (address.host, address.port)
        if key not in self._sessions:
            if self.remaining_s() <= 0:
                raise BrokerUnavailable("the deadline passed")
            try:
                self._sessions[key] = self._connect(address, min(self.remaining_s(), REQUEST_TIMEOUT_S))
            except ConnectionError as error:
                raise BrokerUnavailable(str(error)) from None
        return self._sessions[key]

    def close(self) -> None:
        for session in self._sessions.values():
            session.close()
        self._sessions.clear()


class Backoff:
    """Doubling waits between retry rounds, each cut short by the deadline:
    `wait()` sleeps and returns True, or returns False when the next wait
    would reach past the deadline (time to give up)."""

    def __init__(self, first_s: float, max_s: float, remaining_s: Callable[[], float],
                 sleep: Callable[[float], None]) -> None:
        self._next_s = first_s
        self._max_s = max_s
        self._remaining_s = remaining_s
        self._sleep = sleep

    def wait(self) -> bool:
        if self._remaining_s() <= self._next_s:
            return False
        self._sleep(self._next_s)
        self._next_s = min(2 * self._next_s, self._max_s)
        return True


def _connect(address: BrokerAddress, timeout_s: float):
    from kafkactl.cluster.admin.broker_queries import _Session

    return _Session(address, timeout_s)
