"""The broker that coordinates a group is killed with kill -9, twice: a new
coordinator takes over (it loads the group's `__consumer_offsets`
partition), every commit acknowledged before a kill survives it, and an
at-least-once consumer (commit after processing) misses no record."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition

from support.groups import produce
from support.names import unique_topic
from support.waiting import wait_for

PARTITIONS = 4
RECORDS = 4000
KILLS = 2


def coordinator_of(bootstrap: str, group: str) -> int:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    [future] = admin.describe_consumer_groups([group], request_timeout=10).values()
    return future.result(timeout=15).coordinator.id


@pytest.mark.slow
def test_commits_survive_coordinator_kills_and_an_at_least_once_consumer_misses_nothing(faults):
    cluster = faults(brokers=3, overrides={"offsets.topic.num.partitions": "6"})
    topic = cluster.create_topic("failover", PARTITIONS)
    produce(cluster.bootstrap, topic, RECORDS, PARTITIONS)
    group = unique_topic("g")
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "session.timeout.ms": 10000})
    consumer.subscribe([topic])
    seen: set[int] = set()

    def joined() -> bool:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            seen.add(int(message.value()))
        return bool(consumer.assignment())

    wait_for(joined, 60, "the consumer in its group")
    _check_not_coordinator_elsewhere(cluster, group)
    acknowledged: dict[int, int] = {}          # partition -> last offset a commit acknowledged
    kills: list[int] = []
    try:
        deadline = time.monotonic() + 180
        while len(seen) < RECORDS and time.monotonic() < deadline:
            batch = [m for m in consumer.consume(100, 0.5) if m.error() is None]
            seen |= {int(m.value()) for m in batch}            # processed ...
            if batch:
                _commit(consumer, acknowledged)                # ... then committed
            if len(kills) < KILLS and len(seen) >= RECORDS * (len(kills) + 1) // (KILLS + 1):
                victim = coordinator_of(cluster.bootstrap, group)
                cluster.kill(victim)
                kills.append(victim)
                _check_committed(cluster.bootstrap, group, topic, acknowledged)
                cluster.start_only(victim)
        assert len(kills) == KILLS, f"the coordinator was killed {len(kills)} times"
        assert seen == set(range(RECORDS)), f"{RECORDS - len(seen)} records never consumed"
        wait_for(lambda: _commit(consumer, acknowledged), 60, "a last commit acknowledged")
        _check_committed(cluster.bootstrap, group, topic, acknowledged)
        assert acknowledged == {p: RECORDS // PARTITIONS for p in range(PARTITIONS)}
    finally:
        consumer.close()


def _check_not_coordinator_elsewhere(cluster, group: str) -> None:
    """The other brokers answer the group's requests NOT_COORDINATOR."""
    from kio.schema.heartbeat.v4.request import HeartbeatRequest
    from support.wire import WireClient

    coordinator = coordinator_of(cluster.bootstrap, group)
    for broker in cluster.status.brokers:
        if broker.id == coordinator:
            continue
        client = WireClient(broker.host, broker.port)
        try:
            answer = client.request(HeartbeatRequest(group_id=group, generation_id=1, member_id="m",
                                                     group_instance_id=None))
            assert answer.error_code.name == "not_coordinator", f"broker {broker.id}: {answer.error_code}"
        finally:
            client.close()


def _commit(consumer, acknowledged: dict[int, int]) -> bool:
    """A synchronous commit of the consumed positions (named explicitly: an
    unchanged position is committed again, not refused as nothing to commit);
    records what it acknowledged."""
    try:
        positions = [tp for tp in consumer.position(consumer.assignment()) if tp.offset >= 0]
        if not positions:
            return False
        results = consumer.commit(offsets=positions, asynchronous=False)
    except KafkaException:
        return False          # the coordinator is moving: the next batch commits again
    for tp in results or ():
        if tp.error is None and tp.offset >= 0:
            acknowledged[tp.partition] = max(acknowledged.get(tp.partition, 0), tp.offset)
    return True


def _check_committed(bootstrap: str, group: str, topic: str, acknowledged: dict[int, int]) -> None:
    """Every acknowledged commit is what the group's coordinator (a new one,
    after a kill) answers, or later."""
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        def read():
            try:
                return reader.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10)
            except KafkaException:
                return None
        committed = wait_for(read, 60, "the committed offsets from the group's coordinator")
        for tp in committed:
            assert tp.offset >= acknowledged.get(tp.partition, -1001), (
                f"partition {tp.partition}: committed {tp.offset}, acknowledged {acknowledged[tp.partition]}")
    finally:
        reader.close()
