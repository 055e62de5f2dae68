"""Requests the replication benchmarks send to a broker: ListOffsets v7 (latest) for many
partitions in one request, and ApiVersions to open a connection before a clock starts."""

from __future__ import annotations

import io


def broker_client(host: str, port: int):
    from kafkactl.cluster.broker.broker_client import BrokerClient

    return BrokerClient(host, port, "bench-replication", request_timeout_s=60.0)


def _list_offsets_request(topic: str, partitions):
    from kio.schema.list_offsets.v7 import request as lo

    return lo.ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=(
        lo.ListOffsetsTopic(name=topic, partitions=tuple(
            lo.ListOffsetsPartition(partition_index=p, current_leader_epoch=-1, timestamp=-1)
            for p in partitions)),))


def encoded_list_offsets(topic: str, partitions):
    """The same request as list_offsets sends, encoded once, to send later at no cost."""
    from kio.serial import entity_writer

    from kafkactl.cluster.protocol.control_writer import EncodedRequest

    request = _list_offsets_request(topic, partitions)
    body = io.BytesIO()
    entity_writer(type(request))(body, request)
    return EncodedRequest(request.__api_key__, request.__version__, request.__flexible__, body.getvalue())


def list_offsets(host: str, port: int, topic: str, partitions, client=None,
                 encoded=None) -> dict[int, tuple[int, int, int]]:
    """{partition: (error code, latest offset, leader epoch)} in one ListOffsets v7
    request (`encoded`: that request from encoded_list_offsets)."""
    from kio.schema.list_offsets.v7 import response as lo_response

    own = client is None
    client = client or broker_client(host, port)
    try:
        request = encoded if encoded is not None else _list_offsets_request(topic, partitions)
        response = client.request(request, response_cls=lo_response.ListOffsetsResponse)
    finally:
        if own:
            client.close()
    return {r.partition_index: (int(r.error_code), int(r.offset), int(r.leader_epoch))
            for t in response.topics for r in t.partitions}


def api_versions_request():
    from kio.schema.api_versions.v0 import request as av

    return av.ApiVersionsRequest()
