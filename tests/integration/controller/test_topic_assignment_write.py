"""The controller writes a topic's znode (a reassignment's adding/removing
replicas) without losing partitions a tool added meanwhile, against a real
ZooKeeper (cluster/controller/zk_port.py)."""

from __future__ import annotations

import pytest

from kafkactl.cluster.controller.model import UpdateTopicAssignment, WriteResult
from kafkactl.cluster.controller.zk_port import ZkPort
from kafkactl.cluster.controller.zk_store import ZkControllerStore
from kafkactl.cluster.zk import client as zk_client
from kafkactl.cluster.zk import codecs, layout
from kafkactl.cluster.zk.codecs import TopicAssignment

TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAA"


@pytest.fixture
def store(zk_chroot):
    client = zk_client.connect(zk_chroot, session_timeout_ms=6000)
    yield ZkControllerStore(client)
    zk_client.close(client)


def write_topic(client, assignment: TopicAssignment) -> None:
    client.ensure_path(layout.BROKER_TOPICS)
    if client.exists(layout.topic("t")) is None:
        client.create(layout.topic("t"), codecs.encode_topic(assignment))
    else:
        client.set(layout.topic("t"), codecs.encode_topic(assignment))


def read_topic(client) -> TopicAssignment:
    return codecs.decode_topic("t", client.get(layout.topic("t"))[0])


# What the controller knows: partitions 0 and 1; partition 0 moving from [1, 2] to [2, 3].
OURS = TopicAssignment({0: [2, 3, 1], 1: [2, 1]}, TOPIC_ID, adding_replicas={0: [3]}, removing_replicas={0: [1]})


def test_partitions_a_tool_added_survive_the_controllers_write(store):
    won = store.elect(1, 1)
    write_topic(store.client, TopicAssignment({0: [1, 2], 1: [2, 1], 2: [1, 3]}, TOPIC_ID))   # the tool added 2
    port = ZkPort(store, won.epoch)
    assert port.apply_writes([UpdateTopicAssignment("t", OURS)], won.zk_version) == [WriteResult.OK]
    written = read_topic(store.client)
    assert written.partitions == {0: [2, 3, 1], 1: [2, 1], 2: [1, 3]}
    assert written.adding_replicas == {0: [3]} and written.removing_replicas == {0: [1]}


def test_a_tool_writing_between_the_read_and_the_write_makes_the_controller_merge_again(store):
    won = store.elect(1, 1)
    write_topic(store.client, TopicAssignment({0: [1, 2], 1: [2, 1]}, TOPIC_ID))

    class ToolWritesAfterFirstRead:
        """The real store; the first read of the topic is followed by a tool's write."""

        def __init__(self, real) -> None:
            self.real, self.reads = real, 0

        def get_many(self, paths, watch=None):
            nodes = self.real.get_many(paths, watch=watch)
            self.reads += 1
            if self.reads == 1:
                write_topic(self.real.client, TopicAssignment({0: [1, 2], 1: [2, 1], 2: [3, 1]}, TOPIC_ID))
            return nodes

        def __getattr__(self, name):
            return getattr(self.real, name)

    racing = ToolWritesAfterFirstRead(store)
    port = ZkPort(racing, won.epoch)
    assert port.apply_writes([UpdateTopicAssignment("t", OURS)], won.zk_version) == [WriteResult.OK]
    assert racing.reads == 2
    assert read_topic(store.client).partitions == {0: [2, 3, 1], 1: [2, 1], 2: [3, 1]}


def test_a_replaced_controller_writes_no_topic(store, zk_chroot):
    won = store.elect(1, 1)
    write_topic(store.client, TopicAssignment({0: [1, 2], 1: [2, 1]}, TOPIC_ID))
    other = zk_client.connect(zk_chroot, session_timeout_ms=6000)
    try:
        other.set(layout.CONTROLLER_EPOCH, codecs.encode_controller_epoch(won.epoch + 1))   # a successor's bump
        port = ZkPort(store, won.epoch)
        assert port.apply_writes([UpdateTopicAssignment("t", OURS)], won.zk_version) == [WriteResult.CONTROLLER_MOVED]
        assert read_topic(store.client).partitions == {0: [1, 2], 1: [2, 1]}
    finally:
        zk_client.close(other)
