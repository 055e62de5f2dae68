"""The broker's view of the cluster: an immutable snapshot, swapped whole.

Request handlers read `MetadataCache.snapshot` without locks; the one thread
that refreshes metadata builds a new snapshot and replaces the reference.
"""

from __future__ import annotations

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
    def __init__(self) -> None:
        self.snapshot = MetadataSnapshot()

    def replace(self, snapshot: MetadataSnapshot) -> None:
        self.snapshot = snapshot


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
