"""A small blocking Kafka client for broker-to-broker requests.

One connection, one request at a time: the replica fetcher (and the
controller's channel) send a request and wait for its answer. Every socket
call has a timeout; any failure closes the connection and raises
BrokerConnectionError, and the next request connects again, so retry policy
(backoff, how often) stays with the caller.
"""

from __future__ import annotations

import io
import logging
import socket
import struct
import threading
from functools import cache

from kio.serial import entity_reader, entity_writer

from kafkactl.cluster import fatal
from kafkactl.cluster.broker.network import recv_exactly_into
from kafkactl.cluster.protocol.codec import response_class
from kafkactl.cluster.protocol.control_writer import EncodedRequest
from kafkactl.cluster.protocol.framing import read_unsigned_varint

log = logging.getLogger(__name__)

API_VERSIONS_KEY = 18              # its responses always use header v0
MAX_RESPONSE_BYTES = 256 * 1024 * 1024
# Responses are received into one buffer per connection, reused while they
# fit in this size (replica.fetch.response.max.bytes is 10 MiB by default):
# a follower receiving ~1 MiB per fetch would otherwise allocate, zero and
# copy a megabyte per response. A larger response gets a buffer of its own.
REUSED_RESPONSE_BUFFER_MAX = 16 * 1024 * 1024


class BrokerConnectionError(ConnectionError):
    """The broker could not be reached, or the connection failed mid-request."""


@cache
def _writer(cls):
    return entity_writer(cls)


@cache
def _reader(cls):
    return entity_reader(cls)


def encode_request(request, correlation_id: int, client_id: str | None) -> bytes:
    """A size-prefixed request frame: header v1, or v2 when the API version is flexible."""
    header = struct.pack(">hhi", request.__api_key__, request.__version__, correlation_id)
    if client_id is None:
        header += struct.pack(">h", -1)
    else:
        encoded = client_id.encode()
        header += struct.pack(">h", len(encoded)) + encoded
    if request.__flexible__:
        header += b"\x00"  # no tagged fields
    if isinstance(request, EncodedRequest):   # the controller's big requests, written directly
        payload = header + request.body
    else:
        body = io.BytesIO()
        _writer(type(request))(body, request)
        payload = header + body.getvalue()
    return struct.pack(">i", len(payload)) + payload


def decode_response(frame: bytes | memoryview, response_cls, expected_correlation_id: int):
    """The response body of `frame` (after its size prefix). `response_cls` is
    kio's class, or a class with a `read(frame, position)` of its own (such as
    protocol.fetch_response.FetchResponseV12, whose result refers to `frame`)."""
    (correlation_id,) = struct.unpack_from(">i", frame, 0)
    if correlation_id != expected_correlation_id:
        raise BrokerConnectionError(
            f"correlation id {correlation_id} where {expected_correlation_id} was expected")
    position = 4
    if response_cls.__flexible__ and response_cls.__api_key__ != API_VERSIONS_KEY:
        count, position = read_unsigned_varint(frame, position)
        for _ in range(count):
            _, position = read_unsigned_varint(frame, position)
            size, position = read_unsigned_varint(frame, position)
            position += size
    read = getattr(response_cls, "read", None) or _reader(response_cls)
    response, size = read(frame, position)
    if position + size != len(frame):
        raise BrokerConnectionError(f"{response_cls.__name__}: {len(frame) - position - size} trailing bytes")
    return response


class BrokerClient:
    def __init__(self, host: str, port: int, client_id: str,
                 connect_timeout_s: float = 10.0, request_timeout_s: float = 30.0) -> None:
        self.host = host
        self.port = port
        self.client_id = client_id
        self.connect_timeout_s = connect_timeout_s
        self.request_timeout_s = request_timeout_s
        self._sock: socket.socket | None = None
        self._correlation_id = 0
        self._lock = threading.Lock()   # guards _sock against close() from another thread
        self._shut_down = False         # for good: no reconnecting (see shutdown)
        self._buffer = bytearray(64 * 1024)   # see REUSED_RESPONSE_BUFFER_MAX

    def request(self, request, timeout_s: float | None = None, response_cls=None):
        """Send `request` and return the decoded response (kio's class unless given).

        kio's objects own their data. A `response_cls` with its own `read`
        may return views of the receive buffer: they are valid until the next
        request on this client."""
        cls = response_cls or response_class(request.__api_key__, request.__version__)
        frame, correlation_id = self.encode(request)
        return self.exchange(frame, correlation_id, cls, timeout_s)

    def encode(self, request) -> tuple[bytes, int]:
        """The request's frame with the next correlation id, and that id."""
        self._correlation_id = (self._correlation_id + 1) & 0x7FFFFFFF
        return encode_request(request, self._correlation_id, self.client_id), self._correlation_id

    def exchange(self, frame: bytes, correlation_id: int, cls, timeout_s: float | None = None):
        """Send an encoded request frame and return its decoded response."""
        sock = self._connected()
        try:
            sock.settimeout(self.request_timeout_s if timeout_s is None else timeout_s)
            sock.sendall(frame)
            (size,) = struct.unpack(">i", _recv_exactly(sock, 4))
            if not 4 <= size <= MAX_RESPONSE_BYTES:
                raise BrokerConnectionError(f"response frame of {size} bytes")
            payload = self._receive(sock, size)
        except BrokerConnectionError:
            self.close()
            raise
        except (OSError, struct.error) as error:  # socket.timeout is an OSError
            self.close()
            raise BrokerConnectionError(f"{self.host}:{self.port}: {error or type(error).__name__}") from error
        try:
            return decode_response(payload, cls, correlation_id)
        except BrokerConnectionError:
            self.close()
            raise
        except Exception as error:  # kio's native reader raises several kinds
            fatal.halt_if_fatal(error, f"decoding {cls.__name__}")
            self.close()
            raise BrokerConnectionError(f"malformed {cls.__name__}: {error}") from error

    def _receive(self, sock: socket.socket, size: int) -> memoryview:
        buffer = self._buffer
        if size > len(buffer):
            buffer = bytearray(size)
            if size <= REUSED_RESPONSE_BUFFER_MAX:
                self._buffer = buffer
        view = memoryview(buffer)[:size]
        _recv_into(sock, view)
        return view.toreadonly()   # kio's reader takes read-only buffers only

    def connect(self) -> None:
        """Connect now if not connected (BrokerConnectionError if it cannot)."""
        self._connected()

    def _connected(self) -> socket.socket:
        with self._lock:
            if self._shut_down:
                raise BrokerConnectionError(f"{self.host}:{self.port}: client shut down")
            if self._sock is not None:
                return self._sock
        try:
            sock = socket.create_connection((self.host, self.port), timeout=self.connect_timeout_s)
        except OSError as error:
            raise BrokerConnectionError(f"cannot connect to {self.host}:{self.port}: {error}") from error
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self._lock:
            if not self._shut_down:
                self._sock = sock
                return sock
        sock.close()                    # shut down while connecting
        raise BrokerConnectionError(f"{self.host}:{self.port}: client shut down")

    def shutdown(self) -> None:
        """Close for good, from any thread: a pending request fails at once, and
        so does every later one (close() alone lets the next one reconnect)."""
        with self._lock:
            self._shut_down = True
        self.close()

    def close(self) -> None:
        """Close the connection; safe from another thread, which unblocks a pending request."""
        with self._lock:
            sock, self._sock = self._sock, None
        if sock is None:
            return
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        sock.close()


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    buffer = bytearray(size)
    _recv_into(sock, memoryview(buffer))
    return bytes(buffer)


def _recv_into(sock: socket.socket, view: memoryview) -> None:
    recv_exactly_into(sock, view, lambda: BrokerConnectionError("connection closed by the broker"))
