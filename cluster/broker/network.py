"""TCP front end: one thread per connection, bounded in number.

Kafka clients keep few connections and pipeline on each. Requests are
handled in the order they arrive and answered in that order. A request is
answered before the next is read, with one exception: while acks=-1
produce requests wait for their ISR, the connection goes on appending the
produce requests that follow (up to PIPELINED_PRODUCE_MAX), and a second
thread answers them in order. Apache Kafka reads nothing more from the
connection until the answer is sent, which holds one producer connection to
one replication round trip per request. Any other request waits until
every earlier answer is sent, so it sees what they committed, as in Kafka.
File regions go out with `socket.sendfile` (zero copy).
"""

from __future__ import annotations

import logging
import os
import select
import socket
import threading
from collections import deque

from kafkactl.cluster.broker.deferred import DeferredResponse
from kafkactl.cluster.protocol import apis
from kafkactl.cluster.protocol.codec import SplicedResponse
from kafkactl.cluster.protocol.framing import FrameError, check_frame_size, peek_api

log = logging.getLogger(__name__)

IDLE_TIMEOUT_S = 600.0       # Kafka's connections.max.idle.ms
SEND_TIMEOUT_S = 120.0
# Each connection reads its requests into one buffer, reused while frames fit
# in this size (produce requests are up to ~1 MB with default client settings);
# a larger frame gets a buffer of its own, so an idle connection never holds
# more than this.
REUSED_FRAME_BUFFER_MAX = 4 * 1024 * 1024
# Produce requests of one connection appended while earlier ones still wait
# for their ISR: Kafka's own producer keeps at most 5 requests in flight
# (max.in.flight.requests.per.connection, the idempotent limit).
PIPELINED_PRODUCE_MAX = 5


class ConnectionClosed(Exception):
    pass


class SocketServer:
    def __init__(self, host: str, port: int, dispatcher, max_connections: int, max_frame_bytes: int) -> None:
        self.dispatcher = dispatcher
        self.max_connections = max_connections
        self.max_frame_bytes = max_frame_bytes
        self.listener = socket.create_server((host or "0.0.0.0", port), backlog=128, reuse_port=False)
        self.port = self.listener.getsockname()[1]
        self._connections: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._accept_thread = threading.Thread(target=self._accept_loop, name="acceptor", daemon=True)

    def start(self) -> None:
        self._accept_thread.start()

    def stop(self) -> None:
        self._stopping.set()
        try:
            self.listener.close()
        except OSError:
            pass
        with self._lock:
            for connection in list(self._connections):
                try:
                    connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def _accept_loop(self) -> None:
        while not self._stopping.is_set():
            try:
                connection, address = self.listener.accept()
            except OSError:
                if self._stopping.is_set():
                    return
                continue
            with self._lock:
                if len(self._connections) >= self.max_connections:
                    log.warning("refusing connection from %s: max.connections reached", address)
                    connection.close()
                    continue
                self._connections.add(connection)
            threading.Thread(
                target=self._serve, args=(connection, address), name=f"conn-{address[1]}", daemon=True
            ).start()

    def _serve(self, connection: socket.socket, address) -> None:
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        frames = FrameReader(connection, self.max_frame_bytes)
        answers = None   # an AnswerQueue once a produce request is deferred
        try:
            while not self._stopping.is_set():
                connection.settimeout(IDLE_TIMEOUT_S)
                frame = frames.read()
                if answers is not None and peek_api(frame)[0] != apis.PRODUCE:
                    answers.drain()
                response = self.dispatcher.dispatch(frame)
                if isinstance(response, DeferredResponse):
                    if answers is None:
                        answers = AnswerQueue(connection, address)
                    answers.put(response)
                elif response is None:
                    continue
                elif answers is not None and answers.busy():
                    answers.put(response)   # after the answers queued before it
                else:
                    connection.settimeout(SEND_TIMEOUT_S)
                    _send(connection, response)
        except (ConnectionClosed, ConnectionError, socket.timeout):
            pass
        except FrameError as error:
            log.warning("closing connection from %s: %s", address, error)
        except OSError as error:
            log.info("connection from %s ended: %s", address, error)
        except Exception:
            log.exception("closing connection from %s after an internal error", address)
        finally:
            if answers is not None:
                answers.close()
            with self._lock:
                self._connections.discard(connection)
            connection.close()


class AnswerQueue:
    """The answers of one connection not yet sent, in request order, and the
    thread that sends them: a DeferredResponse is finished (waits for its ISR)
    first. Bounded: `put` blocks while PIPELINED_PRODUCE_MAX are queued, so a
    producer that sends faster than its requests commit stops being read.

    Only this thread sends while anything is queued; the connection's own
    thread sends again once `busy()` is false. Its sends run under whichever
    timeout the connection's thread last set (idle or send), both bounded."""

    def __init__(self, connection: socket.socket, address) -> None:
        self._connection = connection
        self._address = address
        self._queue: deque = deque()
        self._changed = threading.Condition()
        self._closed = False
        self._failed = False
        self._thread = threading.Thread(target=self._run, name=f"answers-{address[1]}", daemon=True)
        self._thread.start()

    def busy(self) -> bool:
        """Answers queued or being sent (while so, only this queue sends)."""
        with self._changed:
            return bool(self._queue)

    def put(self, response) -> None:
        with self._changed:
            while len(self._queue) >= PIPELINED_PRODUCE_MAX and not self._failed:
                self._changed.wait()
            if self._failed:
                raise ConnectionClosed()
            self._queue.append(response)
            self._changed.notify_all()

    def drain(self) -> None:
        """Wait until every queued answer is sent."""
        with self._changed:
            while self._queue and not self._failed:
                self._changed.wait()
            if self._failed:
                raise ConnectionClosed()

    def close(self) -> None:
        """The connection is ending: answers not yet sent are dropped."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def _run(self) -> None:
        while True:
            with self._changed:
                while not self._queue and not self._closed:
                    self._changed.wait()
                if self._closed:
                    return
                response = self._queue[0]
            try:
                if isinstance(response, DeferredResponse):
                    response = response.finish()
                _send(self._connection, response)
            except Exception as error:
                self._fail(error)
                return
            with self._changed:
                self._queue.popleft()
                self._changed.notify_all()

    def _fail(self, error: Exception) -> None:
        if not isinstance(error, (ConnectionError, socket.timeout, OSError)):
            log.exception("closing connection from %s after an internal error", self._address)
        with self._changed:
            self._failed = True
            self._changed.notify_all()
        try:   # wakes the connection's thread out of its read
            self._connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class FrameReader:
    """Reads the size-prefixed request frames of one connection.

    `read` returns a read-only view of the frame that is valid until the next
    `read`: the buffer is reused. The dispatcher only decodes it, and decoding
    copies what it keeps (kio returns `bytes` for record data), so nothing
    refers to the buffer once a request is handled. Reuse spares each request
    an allocation, its zero-filling and a copy into `bytes`.
    """

    def __init__(self, connection: socket.socket, max_frame_bytes: int) -> None:
        self._connection = connection
        self._max_frame_bytes = max_frame_bytes
        self._prefix = bytearray(4)
        self._buffer = bytearray(64 * 1024)

    def read(self) -> memoryview:
        _recv_exactly(self._connection, memoryview(self._prefix))
        size = check_frame_size(self._prefix, self._max_frame_bytes)
        buffer = self._buffer
        if size > len(buffer):
            buffer = bytearray(size)
            if size <= REUSED_FRAME_BUFFER_MAX:
                self._buffer = buffer
        view = memoryview(buffer)[:size]
        _recv_exactly(self._connection, view)
        return view.toreadonly()


def recv_exactly_into(connection: socket.socket, view: memoryview, closed=ConnectionClosed) -> None:
    """Fill `view` from the connection; `closed()` is raised at end of stream.

    No SO_RCVLOWAT at the frame's size, though it would wake the reader
    once per frame rather than once per loopback segment: tried, a follower
    was seen asleep with 870 KB of a 1 MB response queued and its leader done
    sending, until the request timed out (the kernel wakes a reader, and
    poll() reports it readable, only once the mark is reached; and setting
    the mark clamps the receive window to it)."""
    received, size = 0, len(view)
    while received < size:
        count = connection.recv_into(view[received:], size - received)
        if count == 0:
            raise closed()
        received += count


def _recv_exactly(connection: socket.socket, view: memoryview) -> None:
    """Fill `view` from the connection; ConnectionClosed at end of stream."""
    recv_exactly_into(connection, view)


def _send(connection: socket.socket, response) -> None:
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
        _sendfile(connection, part)
    if pending:
        connection.sendall(pending)


def _sendfile(connection: socket.socket, region) -> None:
    """os.sendfile by position: never moves the segment file's own offset."""
    fd = region.file if isinstance(region.file, int) else region.file.fileno()
    sent_total = 0
    while sent_total < region.length:
        try:
            sent = os.sendfile(connection.fileno(), fd, region.position + sent_total,
                               region.length - sent_total)
        except BlockingIOError:  # the socket has a timeout, so it is non-blocking
            if not select.select([], [connection], [], SEND_TIMEOUT_S)[1]:
                raise socket.timeout("send timed out") from None
            continue
        if sent == 0:
            raise ConnectionError("segment file shorter than the region being sent")
        sent_total += sent
