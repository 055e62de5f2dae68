"""Sending answers: in request order, pipelined acks=-1 produce, zero copy.

While acks=-1 produce requests of a connection wait for their ISR, the
connection goes on appending the produce requests that follow (up to
PIPELINED_PRODUCE_MAX); an `AnswerQueue` sends their answers in order from a
pooled thread. Apache Kafka reads nothing more from a connection until the
answer is sent, which holds one producer connection to one replication round
trip per request. Any other request waits until every earlier answer is
sent, so it sees what they committed, as in Kafka. File regions go out with
`os.sendfile` (zero copy).
"""

from __future__ import annotations

import logging
import os
import select
import socket
import threading
from collections import deque

from kafkactl.cluster import fatal
from kafkactl.cluster.broker.deferred import DeferredResponse
from kafkactl.cluster.broker.network.frames import ConnectionClosed
from kafkactl.cluster.protocol.codec import SplicedResponse

log = logging.getLogger("kafkactl.cluster.broker.network")

SEND_TIMEOUT_S = 120.0
# Produce requests of one connection appended while earlier ones still wait
# for their ISR: Kafka's own producer keeps at most 5 requests in flight
# (max.in.flight.requests.per.connection, the idempotent limit).
PIPELINED_PRODUCE_MAX = 5


class AnswerQueue:
    """The answers of one connection not yet sent, in request order. A
    DeferredResponse is finished (waits for its ISR) before it is sent.
    Bounded: `put` blocks while PIPELINED_PRODUCE_MAX are queued, so a
    producer that sends faster than its requests commit stops being read.

    The sender runs as a task of the worker pool (`submit`) while anything is
    queued, and ends when the queue is empty: an idle connection holds no
    thread. Only the sender sends while anything is queued; the connection's
    worker sends again once `busy()` is false."""

    def __init__(self, connection: socket.socket, address, submit) -> None:
        self._connection = connection
        self._address = address
        self._submit = submit
        self._queue: deque = deque()
        self._changed = threading.Condition()
        self._sending = False
        self._closed = False
        self.failed = False

    def busy(self) -> bool:
        """Answers queued or being sent (while so, only the sender sends)."""
        with self._changed:
            return bool(self._queue)

    def put(self, response) -> None:
        with self._changed:
            while len(self._queue) >= PIPELINED_PRODUCE_MAX and not self.failed:
                self._changed.wait()
            if self.failed:
                raise ConnectionClosed()
            self._queue.append(response)
            self._changed.notify_all()
            if not self._sending:
                self._sending = True
                self._submit(self._run)

    def drain(self) -> None:
        """Wait until every queued answer is sent."""
        with self._changed:
            while self._queue and not self.failed:
                self._changed.wait()
            if self.failed:
                raise ConnectionClosed()

    def close(self) -> None:
        """The connection is ending: answers not yet sent are dropped."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def _run(self) -> None:
        while True:
            with self._changed:
                if self._closed or not self._queue:
                    self._sending = False
                    return
                response = self._queue[0]
            try:
                if isinstance(response, DeferredResponse):
                    response = response.finish()
                send(self._connection, response)
            except Exception as error:
                fatal.halt_if_fatal(error, f"answering {self._address}")
                self._fail(error)
                return
            with self._changed:
                self._queue.popleft()
                self._changed.notify_all()

    def _fail(self, error: Exception) -> None:
        if not isinstance(error, (ConnectionError, socket.timeout, OSError)):
            log.exception("closing connection from %s after an internal error", self._address)
        with self._changed:
            self.failed = True
            self._sending = False
            self._changed.notify_all()
        try:   # wakes the connection's worker out of its wait
            self._connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def send(connection: socket.socket, response) -> None:
    if not isinstance(response, SplicedResponse):
        connection.sendall(response)
        return
    pending = bytearray()
    for part in response.parts:
        if isinstance(part, (bytes, bytearray)):
            pending += part
            continue
        if pending:
            connection.sendall(pending)
            pending = bytearray()
        sendfile(connection, part)
    if pending:
        connection.sendall(pending)


def sendfile(connection: socket.socket, region) -> None:
    """os.sendfile by position: never moves the segment file's own offset."""
    fd = region.file if isinstance(region.file, int) else region.file.fileno()
    sent_total = 0
    while sent_total < region.length:
        try:
            sent = os.sendfile(connection.fileno(), fd, region.position + sent_total,
                               region.length - sent_total)
        except BlockingIOError:  # the socket has a timeout, so it is non-blocking
            if not writable(connection, SEND_TIMEOUT_S):
                raise socket.timeout("send timed out") from None
            continue
        if sent == 0:
            raise ConnectionError("segment file shorter than the region being sent")
        sent_total += sent


def writable(connection: socket.socket, timeout_s: float) -> bool:
    # poll, not select: a broker holding thousands of connections has
    # descriptors above select's limit of 1024.
    poller = select.poll()
    poller.register(connection, select.POLLOUT)
    return bool(poller.poll(timeout_s * 1000))


def readable(connection: socket.socket, timeout_s: float) -> bool:
    poller = select.poll()
    poller.register(connection, select.POLLIN)
    return bool(poller.poll(timeout_s * 1000))
