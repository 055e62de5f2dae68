"""Consumer groups on the reference cluster, driven by unmodified clients:
confluent-kafka (librdkafka) with each assignor, kafka-python, kcat -G;
committed offsets read back by group members and by assign() consumers."""

from __future__ import annotations

import subprocess

import pytest

from support.fault_cluster import FaultCluster
from support.groups import Member, partitions_shared, poll_until, produce, stable_members
from support.names import unique_topic
from support.waiting import wait_for

PARTITIONS = 6
RECORDS = 600


@pytest.fixture
def cluster(shared_cluster):
    _, status = shared_cluster
    fault_cluster = FaultCluster(*shared_cluster)
    yield fault_cluster
    fault_cluster.close()


def single_replica_topic(cluster: FaultCluster, prefix: str, partitions: int = PARTITIONS) -> str:
    return cluster.create_topic(prefix, partitions, {p: [1] for p in range(partitions)},
                                {"min.insync.replicas": "1"})


@pytest.mark.parametrize("assignor", ["range", "roundrobin", "cooperative-sticky"])
def test_three_confluent_members_share_the_partitions_and_commit(cluster, assignor):
    topic = single_replica_topic(cluster, f"group-{assignor}")
    group = unique_topic("g")
    members = [Member(cluster.bootstrap, group, [topic], **{"partition.assignment.strategy": assignor})
               for _ in range(3)]
    try:
        poll_until(members, lambda: partitions_shared(members, topic, PARTITIONS) and all(m.assigned for m in members),
                   60, "every partition assigned to exactly one of three members")
        # Produced once the group is settled: a partition moving between
        # members before anything is committed is read again (at least once).
        produce(cluster.bootstrap, topic, RECORDS, PARTITIONS)
        poll_until(members, lambda: sum(len(m.values) for m in members) >= RECORDS, 60, "every record consumed")
        consumed = sorted(v for m in members for v in m.values)
        assert consumed == list(range(RECORDS)), "each record consumed exactly once across the group"
        for member in members:
            member.consumer.commit(asynchronous=False)
        from confluent_kafka import TopicPartition
        committed = members[0].consumer.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10)
        assert [c.offset for c in committed] == [RECORDS // PARTITIONS] * PARTITIONS
    finally:
        for member in members:
            member.close()


def test_an_assign_consumer_resumes_from_the_committed_offset(cluster):
    from confluent_kafka import Consumer, TopicPartition

    topic = single_replica_topic(cluster, "assign", partitions=1)
    produce(cluster.bootstrap, topic, 100, 1)
    group = unique_topic("g")
    settings = {"bootstrap.servers": cluster.bootstrap, "group.id": group, "enable.auto.commit": False}
    first = Consumer(settings)
    first.commit(offsets=[TopicPartition(topic, 0, 40)], asynchronous=False)
    first.close()
    second = Consumer(settings)
    try:
        second.assign([TopicPartition(topic, 0)])    # OFFSET_STORED: the committed one
        message = wait_for(lambda: _message(second), 30, "a first message")
        assert (message.offset(), message.value()) == (40, b"40")
    finally:
        second.close()


def _message(consumer):
    message = consumer.poll(0.5)
    return message if message is not None and message.error() is None else None


def test_kafka_python_group_consumes_commits_and_a_new_member_starts_after_the_commit(cluster):
    from kafka import KafkaConsumer

    topic = single_replica_topic(cluster, "kafka-python", partitions=2)
    produce(cluster.bootstrap, topic, 50, 2)
    group = unique_topic("g")

    def consumer():
        return KafkaConsumer(topic, bootstrap_servers=cluster.bootstrap, group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False, consumer_timeout_ms=3000)

    first = consumer()
    try:
        values = sorted(int(r.value) for r in first)
        assert values == list(range(50))
        first.commit()
    finally:
        first.close()
    produce(cluster.bootstrap, topic, 10, 2, start=50)
    second = consumer()
    try:
        assert sorted(int(r.value) for r in second) == list(range(50, 60))
    finally:
        second.close()


def test_three_kcat_balanced_consumers_read_every_record(cluster):
    topic = single_replica_topic(cluster, "kcat-group")
    group = unique_topic("g")
    command = ["kcat", "-u", "-b", cluster.bootstrap, "-G", group, "-o", "beginning", "-f", "%s\\n",
               "-X", "session.timeout.ms=6000", topic]
    processes = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
                 for _ in range(3)]
    try:
        wait_for(lambda: stable_members(cluster.bootstrap, group) == 3, 60, "three kcat members, Stable")
        produce(cluster.bootstrap, topic, RECORDS, PARTITIONS)
        outputs = _read_all(processes, RECORDS)
    finally:
        for process in processes:
            process.kill()
            process.wait(10)
    values = sorted(int(v) for lines in outputs for v in lines)
    assert values == list(range(RECORDS)), "kcat -G members read every record, none twice"
    assert sum(1 for lines in outputs if lines) >= 2, "the records were shared among the members"


def _read_all(processes, expected: int, bound_s: float = 60.0) -> list[list[str]]:
    """Each process's stdout lines, read on threads, until `expected` lines came
    in all (or the bound); then the processes are killed."""
    import threading

    outputs: list[list[str]] = [[] for _ in processes]

    def read(process, lines) -> None:
        for line in process.stdout:
            lines.append(line.strip())

    readers = [threading.Thread(target=read, args=(p, out), daemon=True) for p, out in zip(processes, outputs)]
    for reader in readers:
        reader.start()
    try:
        wait_for(lambda: sum(len(out) for out in outputs) >= expected, bound_s, f"{expected} lines from kcat")
    finally:
        for process in processes:
            process.kill()
        for reader in readers:
            reader.join(10)
    return outputs
