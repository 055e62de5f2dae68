"""What request handlers may use: the broker's parts, behind one object."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker.config import BrokerConfig
from kafkactl.cluster.broker.fetch_session import FetchSessionCache
from kafkactl.cluster.broker.metadata import MetadataCache
from kafkactl.cluster.broker.metrics import BrokerMetrics


@dataclass
class BrokerServices:
    config: BrokerConfig
    metadata: MetadataCache
    replica_manager: object
    zk_agent: object
    producer_ids: object
    clock_ms: Callable[[], int]
    fetch_sessions: FetchSessionCache = field(default_factory=FetchSessionCache)
    metrics: BrokerMetrics = field(default_factory=BrokerMetrics)
    controller: object | None = None   # set on every broker; active on the elected one
    # The dynamic broker config in effect (dynamic_config.Resolved), replaced
    # whole by the zk-agent thread when it changes; None until first read.
    dynamic: object | None = None
    # The group coordinator (coordinator/coordinator.py); None until started.
    group_coordinator: object | None = None
    # Where the Admin API's ZooKeeper work runs (admin_work.py); None in unit tests without it.
    admin_work: object | None = None


def is_controller(services: BrokerServices) -> bool:
    """Whether this broker is the active controller: requests that must go to
    the controller (CreateTopics, DeleteTopics, CreatePartitions, ElectLeaders,
    AlterPartitionReassignments, ...) answer NOT_CONTROLLER elsewhere, as
    Kafka's ZooKeeper-mode brokers did."""
    return services.controller is not None and services.controller.is_active()


def not_hosted_error(services: BrokerServices, topic: str, index: int) -> ErrorCode:
    """The error for a partition this broker does not host, as Kafka answers
    it: NOT_LEADER_OR_FOLLOWER when the cluster knows the partition (it lives
    on other brokers, or moved away a moment ago: clients refresh their
    metadata and retry), UNKNOWN_TOPIC_OR_PARTITION only when it does not
    exist. Consumers treat the second as final (kcat -e exits on it).
    KAFKA_STORAGE_ERROR when this broker's replica was on a log dir that
    failed (Kafka answers an offline partition so)."""
    if (topic, index) in services.replica_manager.offline_partitions:
        return ErrorCode.kafka_storage_error
    known = services.metadata.snapshot.topics.get(topic)
    if known is not None and index in known.assignment.partitions:
        return ErrorCode.not_leader_or_follower
    return ErrorCode.unknown_topic_or_partition
