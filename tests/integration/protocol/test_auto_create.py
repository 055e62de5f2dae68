"""Topic auto-creation on Metadata follows the broker's settings."""

from __future__ import annotations

import time

from kazoo.client import KazooClient
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v12 import request as metadata12

from kafkactl.cluster.zk import codecs, layout
from support.wire import WireClient


def metadata(client: WireClient, topic: str, allow: bool = True):
    return client.request(metadata12.MetadataRequest(
        topics=(metadata12.MetadataRequestTopic(topic_id=None, name=topic),),
        allow_auto_topic_creation=allow, include_topic_authorized_operations=False)).topics[0]


def test_auto_create_uses_num_partitions_and_kafkas_layout(start_cluster):
    _, status = start_cluster(brokers=2, overrides={"num.partitions": "4", "default.replication.factor": "2"})
    client = WireClient(status.broker(1).host, status.broker(1).port)
    assert metadata(client, "auto", allow=False).error_code == ErrorCode.unknown_topic_or_partition
    assert metadata(client, "auto").error_code == ErrorCode.leader_not_available
    deadline = time.monotonic() + 20
    while (topic := metadata(client, "auto")).error_code != ErrorCode.none and time.monotonic() < deadline:
        time.sleep(0.1)
    assert topic.error_code == ErrorCode.none and len(topic.partitions) == 4
    assert all(len(p.replica_nodes) == 2 and p.leader_id == p.replica_nodes[0] for p in topic.partitions)

    zk = KazooClient(hosts=status.zookeeper_connect, timeout=10)
    zk.start(timeout=10)
    try:
        assignment = codecs.decode_topic("auto", zk.get(layout.topic("auto"))[0])
        assert sorted(assignment.partitions) == [0, 1, 2, 3] and len(assignment.topic_id) == 22
        assert codecs.decode_entity_config(layout.topic_config("auto"), zk.get(layout.topic_config("auto"))[0]) == {}
    finally:
        zk.stop()
        zk.close()


def test_auto_create_disabled_creates_nothing(start_cluster):
    _, status = start_cluster(brokers=1, overrides={"auto.create.topics.enable": "false"})
    client = WireClient(status.broker(1).host, status.broker(1).port)
    assert metadata(client, "nope").error_code == ErrorCode.unknown_topic_or_partition
    zk = KazooClient(hosts=status.zookeeper_connect, timeout=10)
    zk.start(timeout=10)
    try:
        assert zk.exists(layout.topic("nope")) is None
    finally:
        zk.stop()
        zk.close()


def test_auto_create_beyond_the_live_brokers_answers_invalid_replication_factor(start_cluster):
    """The creation runs on the zk-agent thread: the first answer is
    LEADER_NOT_AVAILABLE, the next ones INVALID_REPLICATION_FACTOR, and no
    topic znode is written."""
    _, status = start_cluster(brokers=1, overrides={"default.replication.factor": "3"})
    client = WireClient(status.broker(1).host, status.broker(1).port)
    assert metadata(client, "too-wide").error_code == ErrorCode.leader_not_available
    deadline = time.monotonic() + 10
    while (error := metadata(client, "too-wide").error_code) == ErrorCode.leader_not_available \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    assert error == ErrorCode.invalid_replication_factor
    zk = KazooClient(hosts=status.zookeeper_connect, timeout=10)
    zk.start(timeout=10)
    try:
        assert zk.exists(layout.topic("too-wide")) is None
    finally:
        zk.stop()
        zk.close()
