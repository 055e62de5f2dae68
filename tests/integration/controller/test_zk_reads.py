"""The controller's read layer against a real ZooKeeper and kazoo: the watch
rules the simulation's fake ZooKeeper assumes hold for real."""

from __future__ import annotations

import time

import pytest

from kafkactl.cluster.controller.zk_reads import TOPIC_CHANGE, ControllerReads
from kafkactl.cluster.controller.zk_store import ZkControllerStore
from kafkactl.cluster.zk import client as zk_client
from kafkactl.cluster.zk import codecs, layout
from kafkactl.cluster.zk.codecs import TopicAssignment


@pytest.fixture
def client(zk_chroot):
    client = zk_client.connect(zk_chroot, session_timeout_ms=6000)
    client.ensure_path(layout.BROKER_TOPICS)
    yield client
    zk_client.close(client)


def _topic(name, replicas):
    return codecs.encode_topic(TopicAssignment({0: replicas}, topic_id=f"id-{name}"))


def _settle(queued, count, timeout_s=5.0):
    """Wait for `count` events; then a moment more for any extra one."""
    deadline = time.monotonic() + timeout_s
    while len(queued) < count and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.3)
    return list(queued)


def test_one_change_queues_one_event_however_many_reads_armed_it(client):
    client.create(layout.topic("a"), _topic("a", [1]))
    client.create(layout.topic("b"), _topic("b", [1]))
    queued = []
    reads = ControllerReads(ZkControllerStore(client), lambda event: lambda _e=None: queued.append(event))
    for _ in range(5):                       # five topic-change reads while "a" stays as it is
        assert set(reads.topics()) == {"a", "b"}
    client.set(layout.topic("a"), _topic("a", [1, 2]))
    assert _settle(queued, 1) == [TOPIC_CHANGE]


def test_a_new_callback_per_read_would_queue_one_event_per_read(client):
    # What ControllerReads.watch prevents: kazoo calls every distinct
    # callback left on the znode.
    client.create(layout.topic("a"), _topic("a", [1]))
    queued = []
    reads = ControllerReads(ZkControllerStore(client), lambda event: lambda _e=None: queued.append(event))
    reads.watch = lambda event: reads._new_watch(event)
    for _ in range(5):
        reads.topics()
    client.set(layout.topic("a"), _topic("a", [1, 2]))
    assert len(_settle(queued, 5)) == 5


def test_getdata_on_a_missing_znode_leaves_no_watch_and_exists_does(client):
    # The rule behind issue 12.2: only the exists re-arm sees the creation.
    fired = []
    store = ZkControllerStore(client)
    assert store.get_many([layout.PREFERRED_REPLICA_ELECTION], watch=lambda e: fired.append("get")) == \
        {layout.PREFERRED_REPLICA_ELECTION: None}
    assert store.exists(layout.PREFERRED_REPLICA_ELECTION, watch=lambda e: fired.append("exists")) is None
    client.create(layout.PREFERRED_REPLICA_ELECTION, b"{}", makepath=True)
    assert _settle(fired, 1) == ["exists"]
