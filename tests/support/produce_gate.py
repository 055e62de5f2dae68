"""A proxy in front of a cluster's brokers that can hold a client's Produce
requests back, so a test decides in which order the broker sees them.

Built on RecordingProxy (Metadata answers are rewritten to name the proxy, so
every connection of the client comes through it). Once `hold_after_first()`
is called, the next Produce request goes through and every later one waits
in the proxy until `release()`; the answer to the one let through is
decoded, so a test can wait for it and read its error code.

Used to make librdkafka's idempotent producer see a first request fail with
a "possibly persisted" error while its next request, already sent, is still
to be answered (see test_produce_retry_offsets.py).
"""

from __future__ import annotations

import struct
import threading

from kio.index import load_response_schema
from kio.serial import entity_reader

from kafkactl.cluster.protocol.codec import request_class
from support.recording_proxy import METADATA, RecordingProxy, _close, _read_frame

PRODUCE = 0


class ProduceGate(RecordingProxy):
    def __init__(self, brokers: dict[int, tuple[str, int]]) -> None:
        self._gate_lock = threading.Lock()
        self._armed = False
        self._first: int | None = None            # correlation id of the Produce let through
        self._first_version = -1
        self._first_connection = None              # its upstream socket (correlation ids are per connection)
        self.first_sent = threading.Event()
        self.first_answered = threading.Event()
        self.first_errors: list[int] = []         # error codes of its partitions
        self.held = threading.Event()             # a later Produce is waiting in the proxy
        self._released = threading.Event()
        super().__init__(brokers)

    def hold_after_first(self) -> None:
        with self._gate_lock:
            self._armed = True

    def release(self) -> None:
        self._released.set()

    def _requests(self, client, upstream, metadata_versions) -> None:
        try:
            while True:
                frame = _read_frame(client)
                api_key, version, correlation_id = struct.unpack_from(">hhi", frame, 0)
                if api_key == METADATA:
                    metadata_versions[correlation_id] = version
                elif api_key == PRODUCE:
                    self._gate(upstream, correlation_id, version)
                upstream.sendall(struct.pack(">i", len(frame)) + frame)
        except (OSError, ConnectionError):
            _close(client, upstream)

    def _gate(self, upstream, correlation_id: int, version: int) -> None:
        with self._gate_lock:
            if not self._armed:
                return
            if self._first is None:
                self._first, self._first_version = correlation_id, version
                self._first_connection = upstream
                self.first_sent.set()
                return
        self.held.set()
        self._released.wait()

    def _responses(self, upstream, client, metadata_versions) -> None:
        try:
            while True:
                frame = _read_frame(upstream)
                (correlation_id,) = struct.unpack_from(">i", frame, 0)
                version = metadata_versions.pop(correlation_id, None)
                if version is not None:
                    frame = self._pointing_here(frame, version)
                elif upstream is self._first_connection and correlation_id == self._first:
                    self._note_first_answer(frame)
                client.sendall(struct.pack(">i", len(frame)) + frame)
        except (OSError, ConnectionError):
            _close(client, upstream)

    def _note_first_answer(self, frame: bytes) -> None:
        cls = load_response_schema(PRODUCE, self._first_version)
        header_size = 5 if request_class(PRODUCE, self._first_version).__flexible__ else 4
        response, _ = entity_reader(cls)(frame, header_size)
        self.first_errors = [int(p.error_code) for t in response.responses for p in t.partition_responses]
        self.first_answered.set()
