"""A minimal raw Kafka client for protocol tests: kio entities over a socket
(one request at a time, or several sent before any answer is read), and the
few requests several protocol tests send with it. Requests and record
batches written from the spec are in support.raw_requests."""

from __future__ import annotations

import socket
import struct

from kio.index import load_response_schema
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.errors import ErrorCode
from kio.schema.list_offsets.v7 import request as list_offsets7
from kio.schema.metadata.v12 import request as metadata12

from kafkactl.cluster.broker.broker_client import decode_response, encode_request
from support.sockets import closed_by_peer, read_exactly
from support.waiting import wait_for


class WireClient:
    def __init__(self, host: str, port: int, timeout_s: float = 10.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout_s)
        self.correlation_id = 0

    @classmethod
    def over(cls, sock: socket.socket) -> "WireClient":
        """A client on a connection opened elsewhere."""
        client = cls.__new__(cls)
        client.sock, client.correlation_id = sock, 0
        return client

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "WireClient":
        return self

    def __exit__(self, *_) -> None:
        self.close()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def frame(self, request, api_version_override: int | None = None) -> bytes:
        self.correlation_id += 1
        frame = encode_request(request, self.correlation_id, "test")
        if api_version_override is not None:  # a version the broker does not speak
            frame = frame[:6] + struct.pack(">h", api_version_override) + frame[8:]
        return frame

    def request(self, request):
        self.send(request)
        return self.read_response(request.__api_key__, request.__version__)

    def send(self, request) -> int:
        """Send without reading the answer; returns its correlation id."""
        self.send_raw(self.frame(request))
        return self.correlation_id

    def receive(self, request, correlation_id: int):
        """The next answer, which must be `request`'s, sent as `correlation_id`."""
        cls = load_response_schema(request.__api_key__, request.__version__)
        return decode_response(self.read_frame(), cls, correlation_id)

    def read_frame(self) -> bytes:
        size = struct.unpack(">i", self._read_exactly(4))[0]
        return self._read_exactly(size)

    def read_response(self, api_key: int, version: int, header_flexible: bool | None = None):
        cls = load_response_schema(api_key, version)
        return decode_response(self.read_frame(), cls, self.correlation_id)

    def closed_by_peer(self, timeout_s: float = 5.0) -> bool:
        return closed_by_peer(self.sock, timeout_s)

    def _read_exactly(self, size: int) -> bytes:
        return read_exactly(self.sock, size)


def client(broker) -> WireClient:
    """A connection to `broker` (a BrokerStatus: host, port)."""
    return WireClient(broker.host, broker.port)


def api_versions(c: WireClient):
    return c.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"))


def latest_offset(c: WireClient, topic: str) -> int:
    request = list_offsets7.ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=(
        list_offsets7.ListOffsetsTopic(name=topic, partitions=(
            list_offsets7.ListOffsetsPartition(partition_index=0, current_leader_epoch=-1, timestamp=-1),)),))
    return c.request(request).topics[0].partitions[0].offset


def create_topic(c: WireClient, topic: str) -> None:
    """Auto-create `topic` through Metadata and wait until partition 0 has a leader."""
    request = metadata12.MetadataRequest(
        topics=(metadata12.MetadataRequestTopic(topic_id=None, name=topic),),
        allow_auto_topic_creation=True, include_topic_authorized_operations=False)

    def led() -> bool:
        topic_metadata = c.request(request).topics[0]
        return topic_metadata.error_code == ErrorCode.none and topic_metadata.partitions[0].leader_id >= 0
    wait_for(led, 20, f"a leader for topic {topic}", interval_s=0.2)


def wait_until_known_everywhere(brokers, topic: str, timeout_s: float = 20.0) -> None:
    """Wait until every broker's metadata has `topic` with a leader for each
    partition: a topic written straight to ZooKeeper reaches each broker's
    cache a moment later, and until then a broker answers requests naming it
    with UNKNOWN_TOPIC_OR_PARTITION."""
    request = metadata12.MetadataRequest(
        topics=(metadata12.MetadataRequestTopic(topic_id=None, name=topic),),
        allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    for broker in brokers:
        c = client(broker)
        try:
            def known() -> bool:
                answer = c.request(request).topics[0]
                return answer.error_code == ErrorCode.none and all(p.leader_id >= 0 for p in answer.partitions)
            wait_for(known, timeout_s, f"broker {broker.id} to know topic {topic}", interval_s=0.1)
        finally:
            c.close()
