"""CreateTopics, DeleteTopics and CreatePartitions through the dispatcher, in
every version the broker advertises: requests encoded with kio (or the old
versions' classes), the ZooKeeper work run on a real admin-work thread
against the in-memory ZooKeeper, answers decoded as a client reads them.

A stand-in controller puts each written topic (or its new partitions) into
the broker's metadata with leaders, or drops a marked one, as the
controller's UpdateMetadata would; the answer must wait for that.
"""

from __future__ import annotations

import datetime
import struct
import threading
import time
from types import SimpleNamespace

import pytest
from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker.admin_work import AdminWork
from kafkactl.cluster.broker.broker_client import decode_response, encode_request
from kafkactl.cluster.broker.config import from_properties
from kafkactl.cluster.broker.deferred import DeferredResponse
from kafkactl.cluster.broker.dispatcher import Dispatcher
from kafkactl.cluster.broker.handlers.services import BrokerServices
from kafkactl.cluster.broker.metadata import MetadataCache, MetadataSnapshot, TopicMetadata
from kafkactl.cluster.protocol import apis
from kafkactl.cluster.protocol.build import make, nested
from kafkactl.cluster.protocol.codec import request_class, response_class
from kafkactl.cluster.zk import codecs, layout
from kafkactl.cluster.zk.codecs import BrokerRegistration, PartitionState, TopicAssignment
from support.fake_zookeeper import FakeZooKeeper

CREATE_TOPICS, DELETE_TOPICS, CREATE_PARTITIONS = 19, 20, 37
BROKER_IDS = (1, 2, 3)


def versions(api_key: int) -> range:
    served = apis.SUPPORTED[api_key]
    return range(served.implemented_min, served.advertised_max + 1)


class Cluster:
    """One broker's services over an in-memory ZooKeeper, with a stand-in controller."""

    def __init__(self, delete_enabled: bool = True, controller_active: bool = True) -> None:
        self.zk = FakeZooKeeper({f"/brokers/ids/{b}": codecs.encode_broker(
            BrokerRegistration(b, "h", 9000 + b, (f"PLAINTEXT://h:{9000 + b}",))) for b in BROKER_IDS})
        self.zk.ensure_path(layout.BROKER_TOPICS)
        config, _ = from_properties({"broker.id": "1", "zookeeper.connect": "zk:2181", "log.dirs": "/nonexistent",
                                     "num.partitions": "3", "default.replication.factor": "2",
                                     "delete.topic.enable": str(delete_enabled).lower()})
        self.metadata = MetadataCache()
        self.metadata.replace(MetadataSnapshot(brokers={b: BrokerRegistration(b, "h", 9000 + b, ()) for b in BROKER_IDS}))
        self.admin_work = AdminWork(lambda: SimpleNamespace(client=self.zk))
        self.admin_work.start()
        self.services = BrokerServices(config=config, metadata=self.metadata, replica_manager=None, zk_agent=None,
                                       producer_ids=None, clock_ms=lambda: 0, admin_work=self.admin_work,
                                       controller=SimpleNamespace(is_active=lambda: controller_active))
        self.dispatcher = Dispatcher(self.services)
        self._stop = threading.Event()
        self._controller = threading.Thread(target=self._act, daemon=True)

    def start_controller(self) -> None:
        self._controller.start()

    def stop(self) -> None:
        self._stop.set()
        if self._controller.is_alive():
            self._controller.join(5)
        self.admin_work.stop()

    def _act(self) -> None:
        """What the controller and its UpdateMetadata do, seen from this broker's metadata."""
        while not self._stop.wait(0.01):
            snapshot = self.metadata.snapshot
            topics = dict(snapshot.topics)
            for name in self.zk.get_children(layout.BROKER_TOPICS):
                assignment = codecs.decode_topic(name, self.zk.get(layout.topic(name))[0])
                known = topics.get(name)
                if known is None or len(known.assignment.partitions) != len(assignment.partitions):
                    states = {p: PartitionState(r[0], 0, r, 1) for p, r in assignment.partitions.items()}
                    topics[name] = TopicMetadata(name, assignment, states)
            if self.zk.exists(layout.DELETE_TOPICS):
                for name in self.zk.get_children(layout.DELETE_TOPICS):
                    topics.pop(name, None)
            if topics != snapshot.topics:
                self.metadata.replace(MetadataSnapshot(brokers=snapshot.brokers, topics=topics))

    def ask(self, request, version: int):
        frame = bytearray(encode_request(request, 9, "test")[4:])
        struct.pack_into(">h", frame, 2, version)   # v1 of CreateTopics is kio's v2 layout
        response = self.dispatcher.dispatch(bytes(frame))
        if isinstance(response, DeferredResponse):
            response = response.finish()
        return decode_response(response[4:], response_class(struct.unpack_from(">h", frame)[0], version), 9)

    def led_topic(self, name: str, partitions: int) -> None:
        assignment = TopicAssignment({p: [1, 2] for p in range(partitions)}, codecs.new_topic_id())
        self.zk.create(layout.topic(name), codecs.encode_topic(assignment))
        snapshot = self.metadata.snapshot
        states = {p: PartitionState(1, 0, [1, 2], 1) for p in range(partitions)}
        self.metadata.replace(MetadataSnapshot(brokers=snapshot.brokers, topics={
            **snapshot.topics, name: TopicMetadata(name, assignment, states)}))


@pytest.fixture
def cluster():
    c = Cluster()
    c.start_controller()
    yield c
    c.stop()


def create_request(version: int, *topics, timeout_ms: int = 5000, validate_only: bool = False):
    cls = request_class(CREATE_TOPICS, version)
    return make(cls, topics=tuple(topics), timeout=datetime.timedelta(milliseconds=timeout_ms),
                validate_only=validate_only)


def new_topic(version: int, name: str, partitions: int = 2, factor: int = 2, assignments=(), configs=()):
    cls = request_class(CREATE_TOPICS, version)
    return nested(cls, "CreatableTopic", name=name, num_partitions=partitions, replication_factor=factor,
                  assignments=tuple(nested(cls, "CreatableReplicaAssignment", partition_index=i, broker_ids=b)
                                    for i, b in assignments),
                  configs=tuple(nested(cls, "CreatableTopicConfig", name=k, value=v) for k, v in configs))


# --- CreateTopics ----------------------------------------------------------------

@pytest.mark.parametrize("version", versions(CREATE_TOPICS))
def test_create_topics_writes_kafkas_layout_and_answers_once_the_partitions_are_led(cluster, version):
    name = f"t{version}"
    response = cluster.ask(create_request(version, new_topic(version, name, configs=(("retention.ms", "1000"),))),
                           version)
    [result] = response.topics
    assert (result.name, result.error_code) == (name, ErrorCode.none)
    assignment = codecs.decode_topic(name, cluster.zk.get(layout.topic(name))[0])
    assert len(assignment.partitions) == 2 and all(len(r) == 2 for r in assignment.partitions.values())
    assert codecs.decode_entity_config(layout.topic_config(name), cluster.zk.get(layout.topic_config(name))[0]) \
        == {"retention.ms": "1000"}
    assert all(s.leader >= 0 for s in cluster.metadata.snapshot.topics[name].states.values())
    if version >= 5:
        assert (result.num_partitions, result.replication_factor) == (2, 2)
        configs = {c.name: (c.value, c.config_source) for c in result.configs}
        assert configs["retention.ms"] == ("1000", 1)           # DYNAMIC_TOPIC_CONFIG
        assert configs["cleanup.policy"] == ("delete", 5)       # DEFAULT_CONFIG
    if version >= 7:
        assert codecs.topic_id_to_string(result.topic_id) == assignment.topic_id


@pytest.mark.parametrize("version", [v for v in versions(CREATE_TOPICS) if v >= 1])
def test_validate_only_answers_what_would_be_created_and_writes_nothing(cluster, version):
    before = cluster.zk.snapshot()
    response = cluster.ask(create_request(version, new_topic(version, "v", partitions=-1, factor=-1),
                                          validate_only=True), version)
    [result] = response.topics
    assert result.error_code == ErrorCode.none
    if version >= 5:   # the broker's num.partitions=3 and default.replication.factor=2
        assert (result.num_partitions, result.replication_factor) == (3, 2)
    assert cluster.zk.snapshot() == before


def test_refusals_write_nothing_and_reset_the_v5_fields(cluster):
    cluster.led_topic("exists", 1)
    before = cluster.zk.snapshot()
    request = create_request(7, new_topic(7, "exists"), new_topic(7, "bad/name"), new_topic(7, "x", factor=4),
                             new_topic(7, "y", partitions=-1, factor=-1, assignments=((0, (1, 9)),)),
                             new_topic(7, "z", configs=(("no.such.key", "1"),)),
                             new_topic(7, "d"), new_topic(7, "d"))
    response = cluster.ask(request, 7)
    assert [(r.name, r.error_code) for r in response.topics] == [
        ("exists", ErrorCode.topic_already_exists), ("bad/name", ErrorCode.invalid_topic_exception),
        ("x", ErrorCode.invalid_replication_factor), ("y", ErrorCode.invalid_replica_assignment),
        ("z", ErrorCode.invalid_config), ("d", ErrorCode.invalid_request), ("d", ErrorCode.invalid_request)]
    assert all((r.num_partitions, r.replication_factor, r.configs) == (-1, -1, ()) for r in response.topics)
    assert all(r.error_message for r in response.topics)
    assert cluster.zk.snapshot() == before


def test_a_timeout_of_zero_creates_the_topic_and_answers_request_timed_out_at_once(cluster):
    started = time.monotonic()
    [result] = cluster.ask(create_request(4, new_topic(4, "fast"), timeout_ms=0), 4).topics
    assert result.error_code == ErrorCode.request_timed_out and time.monotonic() - started < 2
    assert cluster.zk.exists(layout.topic("fast"))


def test_without_leaders_the_answer_is_request_timed_out_at_the_requests_timeout():
    cluster = Cluster()   # no controller acting: the metadata never shows the topic
    try:
        started = time.monotonic()
        [result] = cluster.ask(create_request(7, new_topic(7, "stuck"), timeout_ms=300), 7).topics
        assert result.error_code == ErrorCode.request_timed_out
        assert 0.3 <= time.monotonic() - started < 3
        assert (result.num_partitions, result.configs) == (-1, ())
        assert cluster.zk.exists(layout.topic("stuck"))    # written: it exists once the controller acts
    finally:
        cluster.stop()


def test_a_broker_that_is_not_the_controller_answers_not_controller_and_writes_nothing():
    cluster = Cluster(controller_active=False)
    try:
        before = cluster.zk.snapshot()
        [result] = cluster.ask(create_request(7, new_topic(7, "t")), 7).topics
        assert result.error_code == ErrorCode.not_controller
        [deleted] = cluster.ask(delete_request(6, "t"), 6).responses
        assert deleted.error_code == ErrorCode.not_controller
        [added] = cluster.ask(partitions_request(3, ("t", 3, None)), 3).results
        assert added.error_code == ErrorCode.not_controller
        assert cluster.zk.snapshot() == before
    finally:
        cluster.stop()


# --- DeleteTopics ----------------------------------------------------------------

def delete_request(version: int, *names, topic_ids=(), timeout_ms: int = 5000):
    cls = request_class(DELETE_TOPICS, version)
    if version >= 6:
        topics = tuple(nested(cls, "DeleteTopicState", name=n, topic_id=None) for n in names)
        topics += tuple(nested(cls, "DeleteTopicState", name=None, topic_id=i) for i in topic_ids)
        return make(cls, topics=topics, timeout=datetime.timedelta(milliseconds=timeout_ms))
    return make(cls, topic_names=tuple(names), timeout=datetime.timedelta(milliseconds=timeout_ms))


@pytest.mark.parametrize("version", versions(DELETE_TOPICS))
def test_delete_topics_marks_the_topic_and_answers_once_it_left_the_metadata(cluster, version):
    cluster.led_topic("doomed", 2)
    response = cluster.ask(delete_request(version, "doomed", "never-was"), version)
    assert [(r.name, r.error_code) for r in response.responses] == [
        ("doomed", ErrorCode.none), ("never-was", ErrorCode.unknown_topic_or_partition)]
    assert cluster.zk.exists(layout.delete_topic("doomed"))
    assert "doomed" not in cluster.metadata.snapshot.topics


def test_delete_topics_by_id_and_the_internal_topic(cluster):
    cluster.led_topic("by-id", 1)
    cluster.led_topic("__consumer_offsets", 1)
    topic_id = codecs.topic_id_from_string(cluster.metadata.snapshot.topics["by-id"].assignment.topic_id)
    response = cluster.ask(delete_request(6, "__consumer_offsets", topic_ids=(topic_id,)), 6)
    assert [(r.name, r.error_code) for r in response.responses] == [
        ("__consumer_offsets", ErrorCode.invalid_topic_exception), ("by-id", ErrorCode.none)]
    assert response.responses[1].topic_id == topic_id
    assert not cluster.zk.exists(layout.delete_topic("__consumer_offsets"))


@pytest.mark.parametrize("version,error", [(2, ErrorCode.invalid_request), (3, ErrorCode.topic_deletion_disabled)])
def test_deletion_disabled_writes_nothing(version, error):
    cluster = Cluster(delete_enabled=False)
    try:
        cluster.led_topic("kept", 1)
        [result] = cluster.ask(delete_request(version, "kept"), version).responses
        assert result.error_code == error and not cluster.zk.exists(layout.DELETE_TOPICS)
    finally:
        cluster.stop()


# --- CreatePartitions ------------------------------------------------------------

def partitions_request(version: int, *topics, validate_only: bool = False, timeout_ms: int = 5000):
    cls = request_class(CREATE_PARTITIONS, version)
    return make(cls, topics=tuple(
        nested(cls, "CreatePartitionsTopic", name=name, count=count, assignments=None if assignments is None else
               tuple(nested(cls, "CreatePartitionsAssignment", broker_ids=b) for b in assignments))
        for name, count, assignments in topics), timeout=datetime.timedelta(milliseconds=timeout_ms),
        validate_only=validate_only)


@pytest.mark.parametrize("version", versions(CREATE_PARTITIONS))
def test_create_partitions_extends_the_assignment_and_answers_once_the_new_partitions_are_led(cluster, version):
    cluster.led_topic("grow", 1)
    response = cluster.ask(partitions_request(version, ("grow", 3, [(3, 1), (2, 3)]), ("absent", 2, None),
                                              ("grow-again", 2, None)), version)
    assert [(r.name, r.error_code) for r in response.results] == [
        ("grow", ErrorCode.none), ("absent", ErrorCode.unknown_topic_or_partition),
        ("grow-again", ErrorCode.unknown_topic_or_partition)]
    assert codecs.decode_topic("grow", cluster.zk.get(layout.topic("grow"))[0]).partitions == \
        {0: [1, 2], 1: [3, 1], 2: [2, 3]}
    assert len(cluster.metadata.snapshot.topics["grow"].states) == 3


def test_create_partitions_refusals_and_validate_only_write_nothing(cluster):
    cluster.led_topic("t", 2)
    before = cluster.zk.snapshot()
    response = cluster.ask(partitions_request(3, ("t", 2, None), ("t2", 3, None), validate_only=True), 3)
    assert [(r.name, r.error_code) for r in response.results] == [
        ("t", ErrorCode.invalid_partitions), ("t2", ErrorCode.unknown_topic_or_partition)]
    [ok] = cluster.ask(partitions_request(3, ("t", 5, None), validate_only=True), 3).results
    [bad] = cluster.ask(partitions_request(3, ("t", 3, [(1, 9)])), 3).results
    assert (ok.error_code, bad.error_code) == (ErrorCode.none, ErrorCode.invalid_replica_assignment)
    assert cluster.zk.snapshot() == before
