"""Frames whose declared lengths lie, sent to a real broker: each closes only its
own connection; the broker stays up, answers everyone else and logs no traceback.

Before the length pre-check (cluster/protocol/bounds.py) the first three
frames aborted the broker process from inside kio's native decoder, and the
null arrays reached handlers as None (an ERROR traceback per request).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v12 import request as metadata12

from support.wire import WireClient, api_versions, client

HEADER_V2 = "0000000900017800"   # correlation id 9, client id "x", no tagged fields
HUGE_COMPACT_COUNT = "ffffffff0f"   # uvarint 2^32 - 1: a count of 0xfffffffe

HOSTILE_FRAMES = {
    "DescribeConfigs v4, configuration_keys count 0xfffffffe":
        "00200004" + HEADER_V2 + "020201" + HUGE_COMPACT_COUNT,
    "Metadata v12, topics count 0xfffffffe":
        "0003000c" + HEADER_V2 + HUGE_COMPACT_COUNT,
    "Fetch v12, topics count 0xfffffffe":
        "0001000c" + HEADER_V2 + "ffffffff000001f400000001000003e80000000000ffffffffffffffff0f",
    "DescribeLogDirs v4, topics count 0xfffffffe":
        "00230004" + HEADER_V2 + HUGE_COMPACT_COUNT + "00",
    "LeaderAndIsr v6 (controller API), topic_states count 0xfffffffe":
        "00040006" + HEADER_V2 + "0000000100000001ffffffffffffffff00" + HUGE_COMPACT_COUNT,
    "DescribeConfigs v4, resources null":
        "00200004" + HEADER_V2 + "0000",
    "DescribeLogDirs v4, partitions of a topic null":
        "00230004" + HEADER_V2 + "0202740000",
    "Metadata v12, a varint wider than 32 bits":
        "0003000c" + HEADER_V2 + "ffffffffffff01",
    "Metadata v12, a tagged field longer than the frame":
        "0003000c" + HEADER_V2 + "010000" + "0100ff7f",
}


def framed(body_hex: str) -> bytes:
    body = bytes.fromhex(body_hex)
    return len(body).to_bytes(4, "big") + body


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    from kafkactl.cluster.local import LocalCluster

    cluster = LocalCluster(tmp_path_factory.mktemp("hostile") / "cluster")
    status = cluster.up(brokers=1)
    broker = status.broker(1)
    # The broker lists itself once the controller's first UpdateMetadata is in.
    deadline = time.monotonic() + 30
    while listed_brokers(client(broker)) != [1]:
        assert time.monotonic() < deadline, "the broker never listed itself in Metadata"
        time.sleep(0.1)
    yield broker
    cluster.down()


def listed_brokers(c: WireClient) -> list[int]:
    metadata = c.request(metadata12.MetadataRequest(
        topics=(), allow_auto_topic_creation=False, include_topic_authorized_operations=False))
    return [b.node_id for b in metadata.brokers]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("name", sorted(HOSTILE_FRAMES))
def test_a_lying_frame_closes_its_connection_and_nothing_else(broker, name):
    bystander = client(broker)
    hostile = client(broker)
    hostile.send_raw(framed(HOSTILE_FRAMES[name]))
    assert hostile.closed_by_peer(timeout_s=10), f"{name}: the connection stayed open"
    assert alive(broker.pid), f"{name}: the broker process died"
    assert api_versions(bystander).error_code == ErrorCode.none
    assert listed_brokers(bystander) == [1]
    log = Path(broker.log_file).read_text()
    assert "Traceback" not in log, f"{name}: the broker logged a traceback"
    assert "closing connection" in log


def test_every_hostile_frame_in_a_row_on_one_broker(broker):
    """All of them again, back to back, each on its own connection."""
    for name, body in HOSTILE_FRAMES.items():
        hostile = WireClient(broker.host, broker.port)
        hostile.send_raw(framed(body))
        assert hostile.closed_by_peer(timeout_s=10), name
    assert alive(broker.pid)
    assert api_versions(client(broker)).error_code == ErrorCode.none
