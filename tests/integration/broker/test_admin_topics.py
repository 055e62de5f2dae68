"""The topic Admin APIs (CreateTopics, DeleteTopics, CreatePartitions) on a
real three-broker cluster, through confluent-kafka's AdminClient and
kafka-python's KafkaAdminClient as independent clients, and hand-built kio
requests for what clients will not send (a broker that is not the
controller, duplicates, huge counts, malformed frames). What the brokers
wrote is checked in ZooKeeper, in Kafka's layout."""

from __future__ import annotations

import datetime
import struct
import subprocess
import time

import pytest
from kio.schema.create_partitions.v3 import request as partitions3
from kio.schema.create_topics.v7 import request as create7
from kio.schema.delete_topics.v6 import request as delete6
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v12 import request as metadata12

from kafkactl.cluster.local import LocalCluster
from kafkactl.cluster.zk import client as zk_client
from kafkactl.cluster.zk import codecs, layout
from support.names import unique_topic
from support.waiting import wait_for
from support.wire import WireClient

ZK_TIMEOUT_S = 10.0
OPERATION_TIMEOUT_S = 30


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """(status, kazoo client) of a three-broker cluster for this module."""
    local = LocalCluster(tmp_path_factory.mktemp("admin-topics") / "cluster")
    try:
        status = local.up(brokers=3, overrides={"log.segment.bytes": "1048576"})
        zk = zk_client.connect(status.zookeeper_connect, 10_000, 10_000)
        try:
            yield status, zk
        finally:
            zk_client.close(zk)
    finally:
        local.down()


def controller_id(zk) -> int:
    def elected():
        try:
            return codecs.decode_controller(zk_client.wait(zk.get_async(layout.CONTROLLER), ZK_TIMEOUT_S)[0])
        except Exception:
            return None
    return wait_for(elected, 30, "a controller elected")


def assignment(zk, topic: str) -> codecs.TopicAssignment | None:
    """The topic's assignment znode; None once deleted (also between a look and a read)."""
    from kazoo.exceptions import NoNodeError

    try:
        return codecs.decode_topic(topic, zk.get(layout.topic(topic))[0])
    except NoNodeError:
        return None


def topic_config(zk, topic: str) -> dict[str, str]:
    return codecs.decode_entity_config(layout.topic_config(topic), zk.get(layout.topic_config(topic))[0])


def admin(status):
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": status.bootstrap_servers})


def outcome(future) -> str:
    """'ok', or the Kafka error's name."""
    try:
        future.result(timeout=60)
        return "ok"
    except Exception as error:   # confluent_kafka.KafkaException carrying a KafkaError
        return error.args[0].name() if error.args and hasattr(error.args[0], "name") else repr(error)


# --- confluent-kafka (librdkafka) -----------------------------------------------------

def test_confluent_creates_with_configs_assignments_defaults_and_validate_only(cluster):
    from confluent_kafka.admin import NewTopic

    status, zk = cluster
    client = admin(status)
    with_config, assigned, defaults, checked = (unique_topic(p) for p in ("cfg", "assigned", "defaults", "checked"))
    futures = client.create_topics([
        NewTopic(with_config, num_partitions=3, replication_factor=2,
                 config={"cleanup.policy": "compact", "retention.ms": "60000"}),
        NewTopic(assigned, num_partitions=2, replica_assignment=[[3, 1], [1, 2]]),
        NewTopic(defaults, num_partitions=-1, replication_factor=-1),
    ], operation_timeout=OPERATION_TIMEOUT_S)
    assert {t: outcome(f) for t, f in futures.items()} == {with_config: "ok", assigned: "ok", defaults: "ok"}
    created = assignment(zk, with_config)
    assert len(created.partitions) == 3 and all(len(set(r)) == 2 for r in created.partitions.values())
    assert topic_config(zk, with_config) == {"cleanup.policy": "compact", "retention.ms": "60000"}
    assert assignment(zk, assigned).partitions == {0: [3, 1], 1: [1, 2]}
    # the brokers' defaults: num.partitions 1, default.replication.factor 1
    assert [len(r) for r in assignment(zk, defaults).partitions.values()] == [1]
    # every partition led in the answering broker's metadata, so the client sees them at once
    metadata = client.list_topics(with_config, timeout=10).topics[with_config]
    assert sorted(metadata.partitions) == [0, 1, 2] and all(p.leader >= 1 for p in metadata.partitions.values())

    futures = client.create_topics([NewTopic(checked, 2, 2)], validate_only=True)
    assert outcome(futures[checked]) == "ok" and assignment(zk, checked) is None


@pytest.mark.parametrize("new_topic,error", [
    (dict(num_partitions=1, replication_factor=4), "INVALID_REPLICATION_FACTOR"),   # three brokers
    (dict(num_partitions=1, replica_assignment=[[1, 99]]), "INVALID_REPLICA_ASSIGNMENT"),               # no broker 99
    (dict(num_partitions=1, replica_assignment=[[1, 1]]), "INVALID_REPLICA_ASSIGNMENT"),
    (dict(num_partitions=2, replica_assignment=[[1, 2], [3]]), "INVALID_REPLICA_ASSIGNMENT"),
    (dict(num_partitions=1, replication_factor=1, config={"no.such.config": "1"}), "INVALID_CONFIG"),
    (dict(num_partitions=1, replication_factor=1, config={"retention.ms": "later"}), "INVALID_CONFIG"),
    (dict(num_partitions=0, replication_factor=1), "INVALID_PARTITIONS"),
])
def test_confluent_create_errors_write_nothing(cluster, new_topic, error):
    from confluent_kafka.admin import NewTopic

    status, zk = cluster
    topic = unique_topic("refused")
    client = admin(status)    # kept: a client collected meanwhile fails its futures with _DESTROY
    futures = client.create_topics([NewTopic(topic, **new_topic)], operation_timeout=OPERATION_TIMEOUT_S)
    assert outcome(futures[topic]) == error
    assert assignment(zk, topic) is None and zk.exists(layout.topic_config(topic)) is None


def test_confluent_existing_and_colliding_names(cluster):
    from confluent_kafka.admin import NewTopic

    status, zk = cluster
    client = admin(status)
    base = unique_topic("col")
    dotted = f"{base}.x"
    assert outcome(client.create_topics([NewTopic(dotted, 1, 1)], operation_timeout=30)[dotted]) == "ok"
    again = client.create_topics([NewTopic(dotted, 1, 1), NewTopic(f"{base}_x", 1, 1), NewTopic("bad name!", 1, 1)],
                                 operation_timeout=30)
    # librdkafka names INVALID_TOPIC_EXCEPTION (17) TOPIC_EXCEPTION, UNKNOWN_TOPIC_OR_PARTITION UNKNOWN_TOPIC_OR_PART
    assert {t: outcome(f) for t, f in again.items()} == {
        dotted: "TOPIC_ALREADY_EXISTS", f"{base}_x": "TOPIC_EXCEPTION", "bad name!": "TOPIC_EXCEPTION"}
    assert assignment(zk, f"{base}_x") is None


def test_confluent_deletes_topics_and_adds_partitions(cluster):
    from confluent_kafka.admin import NewPartitions, NewTopic

    status, zk = cluster
    client = admin(status)
    doomed, grown = unique_topic("doomed"), unique_topic("grown")
    created = client.create_topics([NewTopic(doomed, 2, 2), NewTopic(grown, 1, 2)], operation_timeout=30)
    assert {outcome(f) for f in created.values()} == {"ok"}

    deleted = client.delete_topics([doomed, unique_topic("never"), "__consumer_offsets"], operation_timeout=30)
    assert sorted(outcome(f) for f in deleted.values()) == ["TOPIC_EXCEPTION", "UNKNOWN_TOPIC_OR_PART", "ok"]
    # answered once gone from the answering broker's metadata, as Kafka: the
    # controller's first step of a deletion; its znodes go when the replicas are deleted
    assert metadata_error(status, zk, doomed) == ErrorCode.unknown_topic_or_partition
    wait_for(lambda: assignment(zk, doomed) is None, 30, f"{doomed} deleted from ZooKeeper")

    first = assignment(zk, grown).partitions[0]
    futures = client.create_partitions([NewPartitions(grown, 3, replica_assignment=[[1, 2], [2, 3]])],
                                       operation_timeout=30)
    assert outcome(futures[grown]) == "ok"
    assert assignment(zk, grown).partitions == {0: first, 1: [1, 2], 2: [2, 3]}
    refused = client.create_partitions([NewPartitions(grown, 2)], operation_timeout=30)
    assert outcome(refused[grown]) == "INVALID_PARTITIONS"
    checked = client.create_partitions([NewPartitions(grown, 5)], validate_only=True)
    assert outcome(checked[grown]) == "ok" and len(assignment(zk, grown).partitions) == 3
    dead = client.create_partitions([NewPartitions(grown, 4, replica_assignment=[[1, 42]])], operation_timeout=30)
    assert outcome(dead[grown]) == "INVALID_REPLICA_ASSIGNMENT"
    absent = unique_topic("absent")
    assert outcome(client.create_partitions([NewPartitions(absent, 2)])[absent]) == "UNKNOWN_TOPIC_OR_PART"


def test_kcat_produces_and_consumes_right_after_create_topics_returns(cluster):
    from confluent_kafka.admin import NewTopic

    status, _ = cluster
    topic = unique_topic("kcat")
    client = admin(status)
    futures = client.create_topics([NewTopic(topic, 2, 3)], operation_timeout=OPERATION_TIMEOUT_S)
    assert outcome(futures[topic]) == "ok"
    lines = "".join(f"m{i}\n" for i in range(20))
    subprocess.run(["kcat", "-b", status.bootstrap_servers, "-P", "-t", topic, "-p", "0", "-X",
                    "message.timeout.ms=10000"], input=lines, text=True, check=True, timeout=30)
    consumed = subprocess.run(["kcat", "-b", status.bootstrap_servers, "-C", "-t", topic, "-p", "0", "-o",
                               "beginning", "-e", "-q"], capture_output=True, text=True, check=True, timeout=30)
    assert consumed.stdout.split() == [f"m{i}" for i in range(20)]


# --- kafka-python 3.x ---------------------------------------------------------------

def test_kafka_python_creates_deletes_and_adds_partitions(cluster):
    from kafka.admin import KafkaAdminClient, NewPartitions
    from kafka.errors import TopicAlreadyExistsError

    status, zk = cluster
    client = KafkaAdminClient(bootstrap_servers=status.bootstrap_servers, request_timeout_ms=30_000)
    try:
        topic, checked = unique_topic("kp"), unique_topic("kp-checked")
        client.create_topics({topic: {"num_partitions": 2, "replication_factor": 3,
                                      "configs": {"min.insync.replicas": "2"}}}, timeout_ms=30_000)
        assert len(assignment(zk, topic).partitions) == 2 and topic_config(zk, topic) == {"min.insync.replicas": "2"}
        with pytest.raises(TopicAlreadyExistsError):
            client.create_topics({topic: {"num_partitions": 1, "replication_factor": 1}}, timeout_ms=30_000)
        client.create_topics({checked: {}}, validate_only=True, timeout_ms=30_000)
        assert assignment(zk, checked) is None
        client.create_partitions({topic: NewPartitions(total_count=4)}, timeout_ms=30_000)
        grown = assignment(zk, topic).partitions
        assert sorted(grown) == [0, 1, 2, 3] and all(len(r) == 3 for r in grown.values())
        client.delete_topics([topic], timeout_ms=30_000)
        # As Kafka's DelayedDeleteTopics: the answer waits for the deletion in the metadata of the broker
        # that took the request (the controller); the broker list_topics asks may see it a moment later.
        wait_for(lambda: topic not in client.list_topics(), 30, f"{topic} gone from list_topics")
        wait_for(lambda: assignment(zk, topic) is None, 30, f"{topic} deleted from ZooKeeper")
    finally:
        client.close()


# --- hand-built requests ----------------------------------------------------------

def timeout(ms: int) -> datetime.timedelta:
    return datetime.timedelta(milliseconds=ms)


def create_topic(name: str, partitions: int = 1, factor: int = 1, assignments=()) -> create7.CreatableTopic:
    return create7.CreatableTopic(name=name, num_partitions=partitions, replication_factor=factor, configs=(),
                                  assignments=tuple(create7.CreatableReplicaAssignment(partition_index=i, broker_ids=b)
                                                    for i, b in assignments))


def metadata_error(status, zk, topic: str) -> ErrorCode:
    """The topic's error in the controller's Metadata answer (no auto-creation)."""
    c = broker_client(status, controller_id(zk))
    try:
        answer = c.request(metadata12.MetadataRequest(topics=(metadata12.MetadataRequestTopic(topic_id=None, name=topic),),
                                                      allow_auto_topic_creation=False,
                                                      include_topic_authorized_operations=False))
    finally:
        c.close()
    return answer.topics[0].error_code


def broker_client(status, broker_id: int) -> WireClient:
    broker = next(b for b in status.brokers if b.id == broker_id)
    return WireClient(broker.host, broker.port, timeout_s=60)


def test_a_broker_that_is_not_the_controller_answers_not_controller(cluster):
    status, zk = cluster
    other = next(b.id for b in status.brokers if b.id != controller_id(zk))
    topic = unique_topic("not-controller")
    c = broker_client(status, other)
    try:
        created = c.request(create7.CreateTopicsRequest(topics=(create_topic(topic),), timeout=timeout(5000)))
        deleted = c.request(delete6.DeleteTopicsRequest(
            topics=(delete6.DeleteTopicState(name=topic, topic_id=None),), timeout=timeout(5000)))
        grown = c.request(partitions3.CreatePartitionsRequest(topics=(partitions3.CreatePartitionsTopic(
            name=topic, count=2, assignments=None),), timeout=timeout(5000), validate_only=False))
    finally:
        c.close()
    assert [t.error_code for t in created.topics] == [ErrorCode.not_controller]
    assert [t.error_code for t in deleted.responses] == [ErrorCode.not_controller]
    assert [t.error_code for t in grown.results] == [ErrorCode.not_controller]
    assert assignment(zk, topic) is None


def test_duplicates_huge_counts_and_huge_assignments_are_refused_without_writing(cluster):
    status, zk = cluster
    twice, huge, wide, fine = (unique_topic(p) for p in ("twice", "huge", "wide", "fine"))
    many = tuple((i, (1,)) for i in range(20_000))    # over the 10,000 new partitions one request may create
    c = broker_client(status, controller_id(zk))
    try:
        started = time.monotonic()
        answer = c.request(create7.CreateTopicsRequest(topics=(
            create_topic(twice), create_topic(twice), create_topic(huge, partitions=2**31 - 1),
            create_topic(wide, partitions=-1, factor=-1, assignments=many), create_topic(fine)),
            timeout=timeout(30_000)))
        elapsed = time.monotonic() - started
        assert c.request(create7.CreateTopicsRequest(topics=(create_topic(unique_topic("after")),),
                                                     timeout=timeout(30_000))).topics[0].error_code == ErrorCode.none
    finally:
        c.close()
    assert [(t.name, t.error_code) for t in answer.topics] == [
        (twice, ErrorCode.invalid_request), (twice, ErrorCode.invalid_request), (huge, ErrorCode.invalid_partitions),
        (wide, ErrorCode.invalid_partitions), (fine, ErrorCode.none)]
    assert elapsed < 20
    assert [assignment(zk, t) for t in (twice, huge, wide)] == [None, None, None]


def test_a_malformed_create_topics_closes_only_its_connection(cluster):
    status, zk = cluster
    c = broker_client(status, controller_id(zk))
    # CreateTopics v7 (flexible): header v2, then a compact array claiming 2^28 topics in a few bytes
    header = struct.pack(">hhih", 19, 7, 1, 4) + b"test" + b"\x00"
    body = b"\x80\x80\x80\x80\x01" + b"\x00" * 8
    c.send_raw(struct.pack(">i", len(header + body)) + header + body)
    assert c.closed_by_peer()
    c.close()
    after = broker_client(status, controller_id(zk))
    try:
        topic = unique_topic("after-malformed")
        answer = after.request(create7.CreateTopicsRequest(topics=(create_topic(topic),), timeout=timeout(30_000)))
        assert answer.topics[0].error_code == ErrorCode.none and assignment(zk, topic) is not None
    finally:
        after.close()
