"""TCP front end: one thread per connection, bounded in number.

Kafka clients keep few connections and pipeline on each; a request is
answered before the next is read, which keeps per-connection ordering
without queues. File regions go out with `socket.sendfile` (zero copy).
"""

from __future__ import annotations

import logging
import os
import select
import socket
import threading

from kafkactl.cluster.protocol.codec import SplicedResponse
from kafkactl.cluster.protocol.framing import FrameError, check_frame_size

log = logging.getLogger(__name__)

IDLE_TIMEOUT_S = 600.0       # Kafka's connections.max.idle.ms
SEND_TIMEOUT_S = 120.0


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
        try:
            while not self._stopping.is_set():
                connection.settimeout(IDLE_TIMEOUT_S)
                frame = self._read_frame(connection)
                response = self.dispatcher.dispatch(frame)
                if response is not None:
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
            with self._lock:
                self._connections.discard(connection)
            connection.close()

    def _read_frame(self, connection: socket.socket) -> bytes:
        size = check_frame_size(_read_exactly(connection, 4), self.max_frame_bytes)
        return _read_exactly(connection, size)


def _read_exactly(connection: socket.socket, size: int) -> bytes:
    buffer = bytearray(size)
    view = memoryview(buffer)
    received = 0
    while received < size:
        count = connection.recv_into(view[received:], size - received)
        if count == 0:
            raise ConnectionClosed()
        received += count
    return bytes(buffer)


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
