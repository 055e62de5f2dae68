"""A blocking Kafka protocol connection, for broker-to-broker traffic.

Used by the controller's channel to each broker (and usable by replica
fetchers and tools): one request at a time, every socket call bounded by a
timeout, response frames bounded in size, correlation ids checked. Requests
are kio entities or the project's own kio-style control classes.
"""

from __future__ import annotations

import io
import socket
import struct

from kio.serial import entity_reader, entity_writer

from kafkactl.cluster.protocol.framing import FrameError

DEFAULT_TIMEOUT_S = 30.0
MAX_RESPONSE_BYTES = 100 * 1024 * 1024
_SIZE = struct.Struct(">i")


class ConnectionClosedError(ConnectionError):
    pass


class KafkaConnection:
    def __init__(self, host: str, port: int, client_id: str, timeout_s: float = DEFAULT_TIMEOUT_S,
                 connect_timeout_s: float | None = None) -> None:
        self.host, self.port = host, port
        self._client_id = client_id.encode("utf-8")
        self._sock = socket.create_connection((host, port), timeout=connect_timeout_s or timeout_s)
        self._sock.settimeout(timeout_s)
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._correlation_id = 0

    def close(self) -> None:
        try:
            self._sock.close()
        except OSError:
            pass

    def __enter__(self) -> KafkaConnection:
        return self

    def __exit__(self, *_) -> None:
        self.close()

    def request(self, request, response_cls):
        """Send `request`, wait for and decode its response as `response_cls`."""
        self.send(request)
        return self.receive(response_cls)

    def send(self, request) -> None:
        self._correlation_id = (self._correlation_id + 1) & 0x7FFFFFFF
        header = struct.pack(">hhih", request.__api_key__, request.__version__,
                             self._correlation_id, len(self._client_id)) + self._client_id
        if request.__flexible__:
            header += b"\x00"  # request header v2: no tagged fields
        body = io.BytesIO()
        entity_writer(type(request))(body, request)
        payload = header + body.getvalue()
        self._sock.sendall(_SIZE.pack(len(payload)) + payload)

    def receive(self, response_cls):
        (size,) = _SIZE.unpack(self._read_exactly(4))
        if not 4 <= size <= MAX_RESPONSE_BYTES:
            raise FrameError(f"response frame of {size} bytes from {self.host}:{self.port}")
        frame = self._read_exactly(size)
        (correlation_id,) = struct.unpack_from(">i", frame)
        if correlation_id != self._correlation_id:
            raise FrameError(f"correlation id {correlation_id}, expected {self._correlation_id}")
        # ApiVersions answers with header v0 whatever the version.
        flexible_header = response_cls.__flexible__ and response_cls.__api_key__ != 18
        response, _ = entity_reader(response_cls)(frame, 5 if flexible_header else 4)
        return response

    def _read_exactly(self, size: int) -> bytes:
        buffer = bytearray(size)
        view = memoryview(buffer)
        received = 0
        while received < size:
            count = self._sock.recv_into(view[received:], size - received)
            if count == 0:
                raise ConnectionClosedError(f"{self.host}:{self.port} closed the connection")
            received += count
        return bytes(buffer)
