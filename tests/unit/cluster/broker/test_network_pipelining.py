"""One connection's acks=-1 produce requests: appended while earlier ones wait
for their ISR, answered in request order; anything else waits its turn.

The dispatcher is a stand-in that records what it was given and holds each
produce answer until the test releases it: this isolates the socket layer's
ordering rules (the real produce path is covered by the integration tests).
"""

import socket
import struct
import threading
import time

import pytest

from kafkactl.cluster.broker.deferred import DeferredResponse
from kafkactl.cluster.broker.network import PIPELINED_PRODUCE_MAX, SocketServer

PRODUCE, METADATA = 0, 3
WAIT_S = 5.0


class HeldAnswer(DeferredResponse):
    """A produce answer that is ready only when released (or fails)."""

    __slots__ = ("correlation_id", "released", "error")

    def __init__(self, correlation_id: int) -> None:
        self.correlation_id = correlation_id
        self.released = threading.Event()
        self.error: Exception | None = None

    def finish(self) -> bytes:
        assert self.released.wait(WAIT_S), "never released"
        if self.error is not None:
            raise self.error
        return answer_frame(self.correlation_id)


class RecordingDispatcher:
    def __init__(self) -> None:
        self.dispatched: list[tuple[int, int]] = []   # (api_key, correlation_id)
        self.held: dict[int, HeldAnswer] = {}
        self.changed = threading.Condition()

    def dispatch(self, frame, client_ip=""):
        api_key, _, correlation_id = struct.unpack_from(">hhi", frame, 0)
        with self.changed:
            self.dispatched.append((api_key, correlation_id))
            self.changed.notify_all()
        if api_key != PRODUCE:
            return answer_frame(correlation_id)
        held = self.held[correlation_id] = HeldAnswer(correlation_id)
        return held

    def wait_dispatched(self, count: int) -> list[tuple[int, int]]:
        with self.changed:
            assert self.changed.wait_for(lambda: len(self.dispatched) >= count, WAIT_S), self.dispatched
            return list(self.dispatched)


def answer_frame(correlation_id: int) -> bytes:
    return struct.pack(">ii", 4, correlation_id)


def request_frame(api_key: int, correlation_id: int) -> bytes:
    body = struct.pack(">hhih", api_key, 9, correlation_id, -1)   # header v1, null client id
    return struct.pack(">i", len(body)) + body


@pytest.fixture
def served():
    dispatcher = RecordingDispatcher()
    server = SocketServer("127.0.0.1", 0, dispatcher, max_connections=4, max_frame_bytes=1 << 20)
    server.start()
    client = socket.create_connection(("127.0.0.1", server.port), timeout=WAIT_S)
    try:
        yield dispatcher, client
    finally:
        for held in dispatcher.held.values():
            held.released.set()
        client.close()
        server.stop()


def read_answer(client: socket.socket) -> int:
    data = b""
    while len(data) < 8:
        chunk = client.recv(8 - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    size, correlation_id = struct.unpack(">ii", data)
    assert size == 4
    return correlation_id


def test_produce_requests_are_appended_while_earlier_ones_wait_and_answered_in_order(served):
    dispatcher, client = served
    client.sendall(b"".join(request_frame(PRODUCE, c) for c in (1, 2, 3)))
    # All three were handed over (appended) although no answer is ready yet.
    assert dispatcher.wait_dispatched(3) == [(PRODUCE, 1), (PRODUCE, 2), (PRODUCE, 3)]
    for correlation_id in (3, 2):               # later ones commit first
        dispatcher.held[correlation_id].released.set()
    client.settimeout(0.3)
    with pytest.raises(socket.timeout):         # 2 and 3 wait behind 1
        client.recv(1)
    client.settimeout(WAIT_S)
    dispatcher.held[1].released.set()
    assert [read_answer(client) for _ in range(3)] == [1, 2, 3]


def test_another_request_waits_until_the_produce_answers_before_it_are_sent(served):
    dispatcher, client = served
    client.sendall(request_frame(PRODUCE, 1) + request_frame(METADATA, 2))
    dispatcher.wait_dispatched(1)
    time.sleep(0.3)
    assert dispatcher.dispatched == [(PRODUCE, 1)]   # metadata not handled yet
    dispatcher.held[1].released.set()
    assert [read_answer(client) for _ in range(2)] == [1, 2]
    assert dispatcher.dispatched == [(PRODUCE, 1), (METADATA, 2)]


def test_a_connection_stops_being_read_at_the_bound_of_waiting_produce_requests(served):
    dispatcher, client = served
    count = PIPELINED_PRODUCE_MAX + 3
    client.sendall(b"".join(request_frame(PRODUCE, c) for c in range(1, count + 1)))
    # PIPELINED_PRODUCE_MAX queued; one more handled, its thread blocked on the queue.
    dispatcher.wait_dispatched(PIPELINED_PRODUCE_MAX + 1)
    time.sleep(0.3)
    assert len(dispatcher.dispatched) == PIPELINED_PRODUCE_MAX + 1
    dispatcher.held[1].released.set()
    assert read_answer(client) == 1
    dispatcher.wait_dispatched(PIPELINED_PRODUCE_MAX + 2)
    for correlation_id in range(2, count + 1):
        dispatcher.wait_dispatched(correlation_id)
        dispatcher.held[correlation_id].released.set()
    assert [read_answer(client) for _ in range(count - 1)] == list(range(2, count + 1))


def test_an_answer_that_fails_closes_the_connection(served):
    dispatcher, client = served
    client.sendall(request_frame(PRODUCE, 1) + request_frame(PRODUCE, 2))
    dispatcher.wait_dispatched(2)
    dispatcher.held[1].error = RuntimeError("internal")
    dispatcher.held[1].released.set()
    assert client.recv(8) == b""     # closed, nothing sent for 1 nor 2
