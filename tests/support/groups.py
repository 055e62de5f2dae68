"""Consumer group members for tests: real confluent-kafka consumers polled by
one thread of the test, with what each was assigned and consumed."""

from __future__ import annotations

import time

from support.waiting import wait_for


def produce(bootstrap: str, topic: str, count: int, partitions: int, start: int = 0) -> None:
    """`count` records valued "i" (from `start`), spread round-robin over the partitions, acks=all."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    for i in range(start, start + count):
        producer.produce(topic, value=str(i).encode(), partition=i % partitions)
    assert producer.flush(60) == 0, "records left unacknowledged"


class Member:
    """One confluent-kafka consumer in a group; `poll_once` serves its callbacks."""

    def __init__(self, bootstrap: str, group: str, topics: list[str], **settings) -> None:
        from confluent_kafka import Consumer

        config = {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
                  **settings}
        self.consumer = Consumer(config)
        self.assigned: set[tuple[str, int]] = set()
        self.assignments = 0              # on_assign calls: each a rebalance this member took part in
        self.values: list[int] = []
        self.closed = False
        self.consumer.subscribe(topics, on_assign=self._on_assign, on_revoke=self._on_revoke,
                                on_lost=self._on_revoke)
        self.cooperative = settings.get("partition.assignment.strategy") == "cooperative-sticky"

    def _on_assign(self, consumer, partitions) -> None:
        self.assignments += 1
        self.assigned |= {(p.topic, p.partition) for p in partitions}
        if self.cooperative:
            consumer.incremental_assign(partitions)

    def _on_revoke(self, consumer, partitions) -> None:
        self.assigned -= {(p.topic, p.partition) for p in partitions}
        if self.cooperative:
            consumer.incremental_unassign(partitions)

    def poll_once(self, timeout_s: float = 0.05) -> None:
        message = self.consumer.poll(timeout_s)
        if message is not None and message.error() is None:
            self.values.append(int(message.value()))

    def close(self) -> None:
        """Leave the group (a static member leaves no LeaveGroup behind); once."""
        if not self.closed:
            self.closed = True
            self.consumer.close()


def poll_until(members: list[Member], predicate, timeout_s: float, what: str) -> None:
    """Poll every member in turn until `predicate()` holds."""
    def polled() -> bool:
        deadline = time.monotonic() + 0.3
        while time.monotonic() < deadline:
            for member in members:
                member.poll_once()
        return predicate()

    wait_for(polled, timeout_s, what, interval_s=0, diagnose=lambda: str({
        i: sorted(m.assigned) for i, m in enumerate(members)}))


def partitions_shared(members: list[Member], topic: str, partitions: int) -> bool:
    """Every partition assigned to exactly one member."""
    owned = [tp for m in members for tp in m.assigned]
    return sorted(owned) == [(topic, p) for p in range(partitions)]


def stable_members(bootstrap: str, group: str) -> int:
    """How many members the group has while Stable (DescribeGroups through
    confluent-kafka's AdminClient); 0 in any other state."""
    from confluent_kafka import ConsumerGroupState
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    [future] = admin.describe_consumer_groups([group], request_timeout=10).values()
    description = future.result(timeout=15)
    return len(description.members) if description.state == ConsumerGroupState.STABLE else 0
