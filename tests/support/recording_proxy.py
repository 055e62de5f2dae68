"""A TCP proxy in front of a cluster's brokers that records the request frames real
clients send, for fuzzing with real traffic.

Clients bootstrap through the proxy and then connect to the addresses that
Metadata answers name, so the proxy rewrites each Metadata response to name
its own listener of each broker: every later connection comes back through it.
Responses are otherwise passed on unchanged.
"""

from __future__ import annotations

import io
import socket
import struct
import threading
from dataclasses import replace

from kio.index import load_response_schema
from kio.serial import entity_reader, entity_writer

from kafkactl.cluster.protocol.codec import request_class
from support.sockets import read_exactly

METADATA = 3
API_VERSIONS = 18
IO_TIMEOUT_S = 30.0


class RecordingProxy:
    """One listener per broker, each forwarding to its broker; `frames` are
    the requests of every client connection, in arrival order."""

    def __init__(self, brokers: dict[int, tuple[str, int]]) -> None:
        self.frames: list[bytes] = []   # request frames without their size prefix
        self._lock = threading.Lock()
        self._closed = False
        self._listeners = {node_id: socket.create_server(("127.0.0.1", 0)) for node_id in brokers}
        self.ports = {node_id: listener.getsockname()[1] for node_id, listener in self._listeners.items()}
        for node_id, listener in self._listeners.items():
            threading.Thread(target=self._accept, args=(listener, brokers[node_id]), daemon=True,
                             name=f"proxy-{node_id}").start()

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{port}" for port in self.ports.values())

    def close(self) -> None:
        self._closed = True
        for listener in self._listeners.values():
            listener.close()

    def _accept(self, listener: socket.socket, broker: tuple[str, int]) -> None:
        while not self._closed:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(broker, timeout=IO_TIMEOUT_S)
            client.settimeout(IO_TIMEOUT_S)
            metadata_versions: dict[int, int] = {}   # correlation id -> Metadata version asked
            threading.Thread(target=self._requests, args=(client, upstream, metadata_versions),
                             daemon=True).start()
            threading.Thread(target=self._responses, args=(upstream, client, metadata_versions),
                             daemon=True).start()

    def _requests(self, client, upstream, metadata_versions) -> None:
        try:
            while True:
                frame = _read_frame(client)
                api_key, version, correlation_id = struct.unpack_from(">hhi", frame, 0)
                if api_key == METADATA:
                    metadata_versions[correlation_id] = version
                with self._lock:
                    self.frames.append(frame)
                upstream.sendall(struct.pack(">i", len(frame)) + frame)
        except (OSError, ConnectionError):
            _close(client, upstream)

    def _responses(self, upstream, client, metadata_versions) -> None:
        try:
            while True:
                frame = _read_frame(upstream)
                (correlation_id,) = struct.unpack_from(">i", frame, 0)
                version = metadata_versions.pop(correlation_id, None)
                if version is not None:
                    frame = self._pointing_here(frame, version)
                client.sendall(struct.pack(">i", len(frame)) + frame)
        except (OSError, ConnectionError):
            _close(client, upstream)

    def _pointing_here(self, frame: bytes, version: int) -> bytes:
        cls = load_response_schema(METADATA, version)
        header_size = 5 if request_class(METADATA, version).__flexible__ else 4
        response, _ = entity_reader(cls)(frame, header_size)
        brokers = tuple(replace(b, host="127.0.0.1", port=self.ports.get(b.node_id, b.port))
                        for b in response.brokers)
        out = io.BytesIO()
        entity_writer(cls)(out, replace(response, brokers=brokers))
        return frame[:header_size] + out.getvalue()


def _read_frame(sock: socket.socket) -> bytes:
    (size,) = struct.unpack(">i", read_exactly(sock, 4))
    return read_exactly(sock, size)


def _close(*sockets: socket.socket) -> None:
    for sock in sockets:
        try:
            sock.close()
        except OSError:
            pass
