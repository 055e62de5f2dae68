"""The broker's view of the cluster: an immutable snapshot, swapped whole.

Request handlers read `MetadataCache.snapshot` without locks; the one thread
that refreshes metadata builds a new snapshot and replaces the reference.

Until the controller's first UpdateMetadata reaches a (re)started broker its
snapshot lists no broker and no topic. Answering Metadata from it tells
clients that every topic has no partitions and no leader (Kafka's ZooKeeper
broker has the same window, only shorter), and librdkafka producers were
seen to stall on such an answer (the admin soak, issue 12). So a broker holds
clients' Metadata answers until that first update, for at most
`hold_until_controller_update_s` (the controller may be gone; then the
answer is what the broker has).

Admin requests that answer once their change reached this broker's metadata
(CreateTopics, CreatePartitions, DeleteTopics: Kafka's DelayedCreatePartitions
and DelayedDeleteTopics) wait with `wait_until`, on a condition notified at
every replacement, never by polling.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from kafkactl.cluster.zk.codecs import BrokerRegistration, PartitionState, TopicAssignment


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    name: str
    assignment: TopicAssignment
    states: dict[int, PartitionState]          # partition -> leader/ISR (absent: none yet)
    config: dict[str, str] = field(default_factory=dict)

    def replicas(self, partition: int) -> list[int]:
        return self.assignment.partitions.get(partition, [])


@dataclass(frozen=True, slots=True)
class MetadataSnapshot:
    cluster_id: str | None = None
    controller_id: int = -1
    controller_epoch: int = 0
    brokers: dict[int, BrokerRegistration] = field(default_factory=dict)
    topics: dict[str, TopicMetadata] = field(default_factory=dict)
    deleting_topics: frozenset[str] = frozenset()

    def leader_of(self, topic: str, partition: int) -> int:
        topic_metadata = self.topics.get(topic)
        if topic_metadata is None:
            return -1
        state = topic_metadata.states.get(partition)
        return -1 if state is None else state.leader


class MetadataCache:
    """`hold_until_controller_update_s` 0: no hold (a cache filled by hand)."""

    def __init__(self, hold_until_controller_update_s: float = 0.0) -> None:
        self.snapshot = MetadataSnapshot()
        self.hold_until_controller_update_s = hold_until_controller_update_s
        self._controller_updated = threading.Event()
        self._replaced = threading.Condition()
        if hold_until_controller_update_s <= 0:
            self._controller_updated.set()

    def replace(self, snapshot: MetadataSnapshot) -> None:
        with self._replaced:
            self.snapshot = snapshot
            self._replaced.notify_all()

    def replace_from_controller(self, snapshot: MetadataSnapshot) -> None:
        """An UpdateMetadata from the controller: held Metadata answers go out."""
        self.replace(snapshot)
        self._controller_updated.set()

    def wait_until(self, condition: Callable[[MetadataSnapshot], bool], timeout_s: float) -> bool:
        """Block (never on a request-reading thread) until `condition(snapshot)`
        holds, at most `timeout_s`; whether it held. `condition` runs under
        the lock replacements take, once per replacement: keep it cheap."""
        with self._replaced:
            return self._replaced.wait_for(lambda: condition(self.snapshot), max(timeout_s, 0.0))

    def controller_updated(self) -> bool:
        return self._controller_updated.is_set()

    def wait_for_controller_update(self) -> bool:
        """Block (not on a request thread: see handlers/metadata.py) until the
        first UpdateMetadata, at most the hold; True if it came."""
        return self._controller_updated.wait(self.hold_until_controller_update_s)


LEADER_DURING_DELETE = -2


def metadata_from_update(current: MetadataSnapshot, request) -> MetadataSnapshot:
    """Apply a controller's UpdateMetadata: live brokers replaced, the listed
    partitions replaced (leader -2 removes them: their topic is being deleted),
    the others kept. Topic configs stay: UpdateMetadata does not carry them."""
    from kafkactl.cluster.zk.codecs import (
        BrokerRegistration, PartitionState, TopicAssignment, topic_id_to_string,
    )

    brokers = {}
    for broker in request.live_brokers:
        endpoint = broker.endpoints[0]
        brokers[broker.id] = BrokerRegistration(
            broker_id=broker.id, host=endpoint.host, port=endpoint.port,
            endpoints=tuple(f"{e.listener}://{e.host}:{e.port}" for e in broker.endpoints),
            rack=broker.rack)
    topics = dict(current.topics)
    for topic_state in request.topic_states:
        name = topic_state.topic_name
        existing = topics.get(name)
        partitions = dict(existing.assignment.partitions) if existing else {}
        states = dict(existing.states) if existing else {}
        for p in topic_state.partition_states:
            if p.leader == LEADER_DURING_DELETE:
                partitions.pop(p.partition_index, None)
                states.pop(p.partition_index, None)
                continue
            partitions[p.partition_index] = list(p.replicas)
            states[p.partition_index] = PartitionState(
                leader=p.leader, leader_epoch=p.leader_epoch, isr=list(p.isr),
                controller_epoch=p.controller_epoch, zk_version=p.zk_version)
        if not partitions:
            topics.pop(name, None)
            continue
        topic_id = (topic_id_to_string(topic_state.topic_id)
                    if topic_state.topic_id and topic_state.topic_id.int else
                    existing.assignment.topic_id if existing else None)
        topics[name] = TopicMetadata(name, TopicAssignment(partitions, topic_id), states,
                                     existing.config if existing else {})
    return MetadataSnapshot(
        cluster_id=current.cluster_id,
        controller_id=request.controller_id,
        controller_epoch=request.controller_epoch,
        brokers=brokers,
        topics=topics,
        deleting_topics=current.deleting_topics,
    )
