"""A minimal raw Kafka client for protocol tests: kio entities over a socket."""

from __future__ import annotations

import io
import socket
import struct

from kio.index import load_response_schema
from kio.serial import entity_reader, entity_writer


class WireClient:
    def __init__(self, host: str, port: int, timeout_s: float = 10.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout_s)
        self.correlation_id = 0

    def close(self) -> None:
        self.sock.close()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def frame(self, request, api_version_override: int | None = None) -> bytes:
        api_key, version = request.__api_key__, request.__version__
        if api_version_override is not None:
            version = api_version_override
        self.correlation_id += 1
        header = struct.pack(">hhih", api_key, version, self.correlation_id, 4) + b"test"
        if request.__flexible__:
            header += b"\x00"  # no tagged fields
        body = io.BytesIO()
        entity_writer(type(request))(body, request)
        payload = header + body.getvalue()
        return struct.pack(">i", len(payload)) + payload

    def request(self, request):
        self.send_raw(self.frame(request))
        return self.read_response(request.__api_key__, request.__version__)

    def read_frame(self) -> bytes:
        size = struct.unpack(">i", self._read_exactly(4))[0]
        return self._read_exactly(size)

    def read_response(self, api_key: int, version: int, header_flexible: bool | None = None):
        frame = self.read_frame()
        cls = load_response_schema(api_key, version)
        correlation_id = struct.unpack_from(">i", frame)[0]
        assert correlation_id == self.correlation_id
        flexible = cls.__flexible__ and api_key != 18 if header_flexible is None else header_flexible
        offset = 5 if flexible else 4
        response, _ = entity_reader(cls)(frame, offset)
        return response

    def closed_by_peer(self, timeout_s: float = 5.0) -> bool:
        self.sock.settimeout(timeout_s)
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True
        except socket.timeout:
            return False

    def _read_exactly(self, size: int) -> bytes:
        data = bytearray()
        while len(data) < size:
            chunk = self.sock.recv(size - len(data))
            if not chunk:
                raise ConnectionError("closed by broker")
            data += chunk
        return bytes(data)
