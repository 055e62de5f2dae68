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
