"""Plain data of the controller's decision core: partitions, ZooKeeper writes,
broker requests, replies and the Decision that carries them.

Nothing here does I/O. A `Decision` says what the I/O layer must do, in
order: apply `zk_writes` (fenced by the controller epoch), report one
`WriteResult` per write to `execution.apply_results`, then send the requests
and replies that call returns.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Callable, NamedTuple, Union

from kafkactl.cluster.zk.codecs import BrokerRegistration, PartitionState, TopicAssignment

if TYPE_CHECKING:
    from kafkactl.cluster.controller.context import ControllerContext

NO_LEADER = -1
LEADER_DURING_DELETE = -2          # UpdateMetadata leader of a partition being deleted
NO_EPOCH = -1                      # StopReplica: stop whatever the leader epoch
EPOCH_DURING_DELETE = -2           # StopReplica: topic deletion
RECOVERED = 0                      # leader_recovery_state (KIP-704)
RECOVERING = 1                     # the leader was elected uncleanly and has not recovered yet


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class PartitionReplica(NamedTuple):
    topic_partition: TopicPartition
    broker_id: int

    def __str__(self) -> str:
        return f"{self.topic_partition}@{self.broker_id}"


@dataclass(frozen=True, slots=True)
class ReplicaAssignment:
    """A partition's replicas; during a reassignment (KIP-455) `replicas` is the
    full set RS = target + original, with the difference in adding/removing."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @property
    def is_being_reassigned(self) -> bool:
        return bool(self.adding or self.removing)

    @property
    def original(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.adding)

    @property
    def target(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.removing)

    @staticmethod
    def from_original_and_target(original: tuple[int, ...], target: tuple[int, ...]) -> ReplicaAssignment:
        # Target first, so that the preferred replica during the move is already
        # the target's preferred one (Kafka's fromOldAndNewReplicas).
        replicas = tuple(dict.fromkeys((*target, *original)))
        return ReplicaAssignment(
            replicas=replicas,
            adding=tuple(r for r in target if r not in original),
            removing=tuple(r for r in original if r not in target),
        )


# --- ZooKeeper writes. The I/O layer applies each inside
# multi(check(/controller_epoch, controller_epoch_zk_version), ...).

class CreatePartitionState(NamedTuple):
    """Create /brokers/topics/<t>/partitions/<p> (if missing) and its /state.
    `state.zk_version` is 0: the version the new znode will have."""

    # The state writes are tuples: a failover makes 10,000s of them, and a
    # tuple is built faster than a frozen dataclass.
    topic: str
    partition: int
    state: PartitionState

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


class UpdatePartitionState(NamedTuple):
    """setData on the state znode, conditional on `expected_zk_version`.
    `state.zk_version` is expected_zk_version + 1: the version after the write."""

    topic: str
    partition: int
    state: PartitionState
    expected_zk_version: int

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass(frozen=True, slots=True)
class UpdateTopicAssignment:
    """setData /brokers/topics/<t> unconditionally (only the controller and the
    admin tool write it, and the tool never while partitions move)."""

    topic: str
    assignment: TopicAssignment


@dataclass(frozen=True, slots=True)
class DeleteTopicZnodes:
    """Delete /brokers/topics/<t> recursively and /config/topics/<t>."""

    topic: str


@dataclass(frozen=True, slots=True)
class DeleteAdminPath:
    """Delete an admin trigger the controller has carried out:
    /admin/delete_topics/<t>, /admin/reassign_partitions,
    /admin/preferred_replica_election."""

    path: str


@dataclass(frozen=True, slots=True)
class DeleteNotification:
    """Delete a consumed /isr_change_notification/isr_change_<seq> or
    /log_dir_event_notification/log_dir_event_<seq> znode."""

    path: str


@dataclass(frozen=True, slots=True)
class SetReassignments:
    """Rewrite /admin/reassign_partitions with the partitions still moving
    (never create it: if an operator removed it, it stays removed)."""

    targets: tuple[tuple[TopicPartition, tuple[int, ...]], ...]


PartitionStateWrite = Union[CreatePartitionState, UpdatePartitionState]
ZkWrite = Union[
    CreatePartitionState, UpdatePartitionState, UpdateTopicAssignment, DeleteTopicZnodes,
    DeleteAdminPath, DeleteNotification, SetReassignments,
]
PARTITION_STATE_WRITES = (CreatePartitionState, UpdatePartitionState)
DELETES = (DeleteTopicZnodes, DeleteAdminPath, DeleteNotification)


class WriteResult(Enum):
    OK = "ok"
    BAD_VERSION = "bad_version"            # conditional write lost a race (a leader changed the ISR)
    NO_NODE = "no_node"
    NODE_EXISTS = "node_exists"
    NOT_APPLIED = "not_applied"            # rolled back with a failing write of the same multi
    CONTROLLER_MOVED = "controller_moved"  # the /controller_epoch check failed


# --- requests to brokers, batched per broker

class LeaderAndIsrPartition(NamedTuple):
    # A tuple: a failover builds 10,000s of these, and a tuple is built 5x faster
    # than a frozen dataclass.
    topic: str
    partition: int
    topic_id: str | None
    controller_epoch: int          # epoch of the controller that wrote this state
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    zk_version: int                # the state znode's version after the write (partition epoch)
    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    removing_replicas: tuple[int, ...]
    is_new: bool
    leader_recovery_state: int

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass(frozen=True, slots=True)
class LeaderAndIsr:
    broker_id: int
    broker_epoch: int
    controller_id: int
    controller_epoch: int
    partitions: tuple[LeaderAndIsrPartition, ...]
    live_leaders: tuple[BrokerRegistration, ...]
    full: bool = False             # lists every partition of the broker (KIP-516 type FULL)


class UpdateMetadataPartition(NamedTuple):
    # A tuple: a failover builds 10,000s of these, and a tuple is built 5x faster
    # than a frozen dataclass.
    topic: str
    partition: int
    topic_id: str | None
    controller_epoch: int
    leader: int                    # LEADER_DURING_DELETE while the topic is deleted
    leader_epoch: int
    isr: tuple[int, ...]
    zk_version: int
    replicas: tuple[int, ...]
    offline_replicas: tuple[int, ...]

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass(frozen=True, slots=True)
class UpdateMetadata:
    broker_id: int
    broker_epoch: int
    controller_id: int
    controller_epoch: int
    partitions: tuple[UpdateMetadataPartition, ...]
    live_brokers: tuple[BrokerRegistration, ...]


@dataclass(frozen=True, slots=True)
class StopReplicaPartition:
    topic: str
    partition: int
    leader_epoch: int

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass(frozen=True, slots=True)
class StopReplica:
    broker_id: int
    broker_epoch: int
    controller_id: int
    controller_epoch: int
    partitions: tuple[StopReplicaPartition, ...]
    delete: bool


BrokerRequest = Union[LeaderAndIsr, UpdateMetadata, StopReplica]


@dataclass(frozen=True, slots=True)
class ControlledShutdownReply:
    broker_id: int
    error: str | None              # None, "STALE_BROKER_EPOCH" or "BROKER_NOT_AVAILABLE"
    partitions_remaining: tuple[TopicPartition, ...]


Reply = ControlledShutdownReply

# Redo the work of a decision for the partitions whose state writes failed,
# after their states were read again. Next: what to decide once a decision is done.
Redo = Callable[["ControllerContext", frozenset[TopicPartition]], "Decision"]
Next = Callable[["ControllerContext"], "Decision"]


@dataclass(frozen=True, slots=True)
class Decision:
    context: ControllerContext                 # the context once every write succeeded
    zk_writes: tuple[ZkWrite, ...] = ()
    requests: tuple[BrokerRequest, ...] = ()   # to send once the writes are done, in this order
    replies: tuple[Reply, ...] = ()
    retry: Redo | None = None                  # required when there are partition state writes
    then: Next | None = None                   # runs after this decision and its retries

    @property
    def is_empty(self) -> bool:
        return not (self.zk_writes or self.requests or self.replies or self.then)


class ControllerFencedError(RuntimeError):
    """A write was refused because /controller_epoch moved: this controller was
    replaced and must resign without sending anything more."""


class RetryLimitExceeded(RuntimeError):
    """Conditional writes kept failing; the driver gave up instead of spinning."""
