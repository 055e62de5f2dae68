"""The controller's broker killed with kill -9 in the middle of Admin API
work, real clients asking: the new controller, which knows only what
ZooKeeper holds, finishes or undoes each operation as the client was told.

- CreateTopics: killed the moment the handler wrote the topic znode (no
  partition state yet), or the moment the controller wrote the partitions'
  states (the replicas not told yet): the client gets no answer, the topic
  ends complete with every partition led, and asked again it is
  TOPIC_ALREADY_EXISTS;
- AlterPartitionReassignments: a move the API started (its new replica held
  back by a follower throttle, so it is still going on) completes under the
  new controller;
- a cancel through AlterPartitionReassignments, answered, then the kill: the
  partitions stay on their original replicas and the move never resumes, for
  a move started through the API and one started through
  /admin/reassign_partitions.

One 3-broker cluster for the module; each test restarts the broker it killed.
"""

from __future__ import annotations

import os
import signal
import threading

import pytest
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic
from kafka import TopicPartition as KafkaTopicPartition
from kafka.admin import KafkaAdminClient
from kio.schema.errors import ErrorCode

from kafkactl.cluster.local import LocalCluster
from kafkactl.cluster.zk import layout
from support.fault_cluster import BASE_OVERRIDES, FaultCluster
from support.log_dirs import leftovers
from support.names import unique_topic
from support.waiting import wait_for

TIMEOUT_S = 30
BROKERS = 3


@pytest.fixture(scope="module")
def fc(tmp_path_factory):
    cluster = LocalCluster(tmp_path_factory.mktemp("admin-failover") / "cluster")
    # A follower fetches at most 16 KB a partition: a throttled one then moves
    # about 8 KB/s (the throttle's window is 2 s), not a whole 1 MB fetch.
    overrides = {**BASE_OVERRIDES, "auto.leader.rebalance.enable": "false",
                 "log.segment.delete.delay.ms": "1000", "replica.fetch.max.bytes": "16384"}
    status = cluster.up(brokers=BROKERS, overrides=overrides)
    faults = FaultCluster(cluster, status)
    try:
        yield faults
    finally:
        faults.close()
        cluster.down()


@pytest.fixture(autouse=True)
def diagnostics(fc, request):
    yield
    report = getattr(request.node, "report_call", None)
    if report is not None and report.failed:
        print(fc.diagnostics())


def confluent(fc) -> AdminClient:
    # A new client each time: librdkafka keeps sending controller requests to
    # the controller it last saw, and waits for that one to come back.
    return AdminClient({"bootstrap.servers": fc.bootstrap})


def kafka_python(fc) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=fc.bootstrap, request_timeout_ms=TIMEOUT_S * 1000)


def answered(what: str, ask):
    """ask()'s answer, asked again while it fails: right after a kill a new
    client may still try the dead broker first, or find no controller yet."""
    def attempt():
        try:
            return (ask(),)
        except Exception as error:                # noqa: BLE001 - each failure is printed, then retried
            print(f"{what}: {error!r}; asking again")
            return None
    return wait_for(attempt, TIMEOUT_S, what)[0]


def new_controller(fc, old: int) -> int:
    """The controller elected after `old` died (its session expires first)."""
    return wait_for(lambda: (c := fc.controller()) not in (None, old) and c in fc.registered() and c,
                    TIMEOUT_S, f"a controller other than broker {old}")


def others(fc, controller: int) -> list[int]:
    return [b for b in fc.broker_ids if b != controller]


def restart(fc, broker_id: int) -> None:
    """Start the killed broker again (killed for sure first: a test failing
    before its kill must not leave two processes of one broker)."""
    fc.kill(broker_id)
    fc.start_only(broker_id)


def all_registered(fc) -> None:
    wait_for(lambda: fc.registered() == set(fc.broker_ids), TIMEOUT_S, "every broker registered")


# --- CreateTopics


@pytest.mark.slow
@pytest.mark.parametrize("cut", ["topic-znode", "partition-states"])
def test_a_topic_being_created_when_the_controller_dies_ends_complete(fc, cut):
    # Killed (from this ZooKeeper client's thread, as the znode appears) the
    # moment the handler's multi wrote the topic znode, before the
    # controller created any partition state; or the moment those states
    # are in, before the replicas heard of them (LeaderAndIsr).
    all_registered(fc)
    victim = fc.controller()
    pid = fc.pid(victim)
    topic, partitions = unique_topic("created"), 40
    killed = threading.Event()

    def kill() -> bool:
        if not killed.is_set():
            os.kill(pid, signal.SIGKILL)
            killed.set()
        return False                             # no more calls

    if cut == "topic-znode":
        fc.zk.ChildrenWatch(layout.BROKER_TOPICS, lambda children: kill() if topic in children else True)
    else:
        fc.zk.DataWatch(layout.partition_state(topic, partitions - 1),
                        lambda data, stat: kill() if data is not None else True)
    client = confluent(fc)                        # kept: a client garbage-collected fails its futures
    first = client.create_topics([NewTopic(topic, partitions, 3)], request_timeout=TIMEOUT_S,
                                 operation_timeout=TIMEOUT_S)[topic]
    try:
        try:
            first.result(TIMEOUT_S)
            answer = "created"
        except KafkaException as error:          # the connection to the controller broke
            answer = error.args[0].name()
        except TimeoutError:                     # or no answer at all: either way, not told it failed
            answer = "no answer"
        assert killed.wait(TIMEOUT_S), "the topic znode was never written"
        fc.kill(victim)
        states = {p: fc.state(topic, p) for p in range(partitions)}
        made = sum(s is not None for s in states.values())
        print(f"first answer {answer}; states created before the kill: {made} of {partitions}")
        new_controller(fc, victim)

        # Asked again (a client retrying): it exists already. (NOT_CONTROLLER,
        # a timeout or the dead broker's address: not an answer yet.)
        def ask_again():
            retrying = confluent(fc)
            try:
                retrying.create_topics([NewTopic(topic, partitions, 3)], request_timeout=10)[topic].result(15)
                return "created"
            except KafkaException as error:
                if error.args[0].code() == ErrorCode.topic_already_exists:
                    return "TOPIC_ALREADY_EXISTS"
                raise
        assert answered("CreateTopics asked again", ask_again) == "TOPIC_ALREADY_EXISTS"

        def complete() -> bool:
            assignment = fc.assignment(topic)
            if sorted(assignment.partitions) != list(range(partitions)):
                return False
            live = fc.registered()
            return all((s := fc.state(topic, p)) is not None and s.leader in live and s.leader in replicas
                       for p, replicas in assignment.partitions.items())
        wait_for(complete, TIMEOUT_S, f"every partition of {topic} led", diagnose=lambda: fc.describe(topic))
        metadata = answered("Metadata", lambda: confluent(fc).list_topics(topic, timeout=10)).topics[topic]
        assert metadata.error is None and len(metadata.partitions) == partitions
        assert all(p.leader in fc.registered() for p in metadata.partitions.values()), fc.describe(topic)
    finally:
        restart(fc, victim)
    fc.wait_full_isr(topic, timeout_s=TIMEOUT_S)


# --- AlterPartitionReassignments


def throttled_topic(fc, controller: int, partitions: int) -> tuple[str, int, int]:
    """A topic on one broker that is not the controller (the leader, `home`),
    with 1 MB of records per partition in batches of at most 16 KB, and a
    follower throttle on the other broker (`slow`) for every partition: a
    move adding `slow` stays in progress for minutes, until the throttle
    goes. Returns (topic, home, slow)."""
    home, slow = others(fc, controller)
    topic = fc.create_topic("moving", partitions, assignment={p: [home] for p in range(partitions)},
                            config={"min.insync.replicas": "1"})
    throttled = ",".join(f"{p}:{slow}" for p in range(partitions))
    admin = confluent(fc)
    for resource in (
            ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[ConfigEntry(
                "follower.replication.throttled.replicas", throttled, incremental_operation=AlterConfigOpType.SET)]),
            ConfigResource(ConfigResource.Type.BROKER, str(slow), incremental_configs=[ConfigEntry(
                "follower.replication.throttled.rate", "1", incremental_operation=AlterConfigOpType.SET)])):
        admin.incremental_alter_configs([resource])[resource].result(TIMEOUT_S)
    producer = Producer({"bootstrap.servers": fc.bootstrap, "acks": "all", "linger.ms": 5, "batch.size": 16384})
    value = b"x" * 1000
    for i in range(1000 * partitions):
        producer.produce(topic, value, partition=i % partitions)
        producer.poll(0)
    assert producer.flush(TIMEOUT_S) == 0
    return topic, home, slow


def unthrottle(fc, topic: str) -> None:
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[ConfigEntry(
        "follower.replication.throttled.replicas", None, incremental_operation=AlterConfigOpType.DELETE)])

    def ask():
        admin = confluent(fc)
        return admin.incremental_alter_configs([resource], request_timeout=5)[resource].result(10)
    answered("the throttle removed", ask)


def reassignments(fc, request=None) -> dict:
    """ListPartitionReassignments (`request` None), or AlterPartitionReassignments
    of `request`, once the controller answers it."""
    def ask():
        admin = kafka_python(fc)
        try:
            if request is None:
                return admin.list_partition_reassignments()
            return admin.alter_partition_reassignments(request)
        finally:
            admin.close()
    return answered("ListPartitionReassignments" if request is None else "AlterPartitionReassignments", ask)


@pytest.mark.slow
def test_a_move_started_through_the_api_completes_under_the_new_controller(fc):
    all_registered(fc)
    victim = fc.controller()
    topic, home, slow = throttled_topic(fc, victim, 1)
    tp = KafkaTopicPartition(topic, 0)
    admin = kafka_python(fc)
    try:
        assert admin.alter_partition_reassignments({tp: [home, slow]}) == {tp: None}
    finally:
        admin.close()
    assignment = fc.assignment(topic)
    assert (assignment.partitions[0], assignment.adding_replicas[0]) == ([home, slow], [slow])
    fc.kill(victim)
    try:
        new_controller(fc, victim)
        # The new controller resumed it from the topic znode: it lists it.
        ongoing = reassignments(fc)
        assert ongoing.get(tp) == {"replicas": [home, slow], "adding_replicas": [slow], "removing_replicas": []}, (
            ongoing, fc.describe(topic))
        unthrottle(fc, topic)

        def done() -> bool:
            moved = fc.assignment(topic)
            state = fc.state(topic, 0)
            return (moved.partitions[0] == [home, slow] and not moved.adding_replicas
                    and not moved.removing_replicas and sorted(state.isr) == sorted([home, slow]))
        wait_for(done, TIMEOUT_S, f"the move of {topic}-0 to [{home}, {slow}] complete",
                 diagnose=lambda: fc.describe(topic))
        assert tp not in reassignments(fc)
    finally:
        restart(fc, victim)
    fc.wait_replicas_agree(topic, timeout_s=TIMEOUT_S)


@pytest.mark.slow
def test_a_cancel_answered_before_the_controller_dies_is_never_undone(fc):
    all_registered(fc)
    victim = fc.controller()
    topic, home, slow = throttled_topic(fc, victim, 2)
    tp0, tp1 = KafkaTopicPartition(topic, 0), KafkaTopicPartition(topic, 1)
    admin = kafka_python(fc)
    try:
        # Partition 0 moves through the API, partition 1 through the admin znode.
        assert admin.alter_partition_reassignments({tp0: [home, slow]}) == {tp0: None}
        fc.request_reassignment({(topic, 1): [home, slow]})
        wait_for(lambda: set(reassignments(fc)) == {tp0, tp1}, TIMEOUT_S, "both moves under way")
        assert admin.alter_partition_reassignments({tp0: None, tp1: None}) == {tp0: None, tp1: None}
    finally:
        admin.close()
    fc.kill(victim)                               # right after the answer
    try:
        new_controller(fc, victim)
        # The new controller answers only after its failover, which would
        # have resumed a move ZooKeeper still held: the topic znode would show
        # it moving (or, with the throttle gone, moved). Nothing to resume,
        # nothing to cancel again.
        unthrottle(fc, topic)
        assert reassignments(fc) == {}
        cancelled = fc.assignment(topic)
        assert cancelled.partitions == {0: [home], 1: [home]}, fc.describe(topic)
        assert not cancelled.adding_replicas and not cancelled.removing_replicas
        assert not fc.exists(layout.REASSIGN_PARTITIONS)
        again = reassignments(fc, {tp0: None, tp1: None})
        assert {tp: error.errno for tp, error in again.items()} == {
            tp0: ErrorCode.no_reassignment_in_progress, tp1: ErrorCode.no_reassignment_in_progress}
        assert all(fc.state(topic, p).isr == [home] for p in (0, 1)), fc.describe(topic)
        # The replicas the moves had added are deleted (StopReplica).
        slow_dirs = fc.status.broker(slow).log_dirs
        wait_for(lambda: not leftovers(slow_dirs, topic, 0) and not leftovers(slow_dirs, topic, 1),
                 TIMEOUT_S, f"broker {slow} to delete its replicas of {topic}",
                 diagnose=lambda: f"{leftovers(slow_dirs, topic, 0)} {leftovers(slow_dirs, topic, 1)}")
    finally:
        restart(fc, victim)
    all_registered(fc)
    assert fc.assignment(topic).partitions == {0: [home], 1: [home]}, fc.describe(topic)
