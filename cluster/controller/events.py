"""The controller's events: one typed vocabulary for everything it reacts to.

Rules:
- An event is a frozen value saying what happened, never what to do about
  it: ZooKeeper watches, timers, broker requests and broker responses build
  one and put it on the ControllerEventManager, and nothing else. The event
  thread alone acts on it (`Controller.process` dispatches by type), so one
  thread owns the controller's state.
- `name` is Kafka's name of the event (its ControllerEventManager's event
  names), for logs and metrics.
- `needs_active`: only an active controller has work to do for it. When the
  controller resigns, queued events of these kinds are preempted; the
  lifecycle events (who is controller, session state) always stay queued,
  since they are how this broker may become controller again.
- `preempt()` runs instead of processing when the event will never be
  processed (the controller resigned, or stopped). An event somebody waits
  on (ControlledShutdown) answers NOT_CONTROLLER at once, as Kafka's
  preempt does, rather than letting the waiter time out; the others are
  simply dropped (a new controller reads everything afresh).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

from kio.schema.errors import ErrorCode

from kafkactl.cluster.controller import zk_reads
from kafkactl.cluster.controller.model import TopicPartition

# A controlled shutdown's answer: the error and the partitions the broker still leads.
ShutdownAnswer = tuple[ErrorCode, list[tuple[str, int]]]


class ControllerEvent:
    __slots__ = ()
    name: ClassVar[str] = "ControllerEvent"
    needs_active: ClassVar[bool] = True
    # Queued again when ZooKeeper does not answer (retries.py): the events
    # that read what changed, and broker responses (they carry their data).
    retriable: ClassVar[bool] = False

    def preempt(self) -> None:
        """The event will never be processed; by default nobody waits for it."""


# --- who is controller, and the ZooKeeper session (kept on resign)

@dataclass(frozen=True, slots=True)
class ControllerChange(ControllerEvent):
    """/controller changed (created, deleted, or its data set)."""
    name: ClassVar[str] = "ControllerChange"
    needs_active: ClassVar[bool] = False


@dataclass(frozen=True, slots=True)
class Reelect(ControllerEvent):
    """The ZooKeeper session is (re)connected: resign or try to be elected."""
    name: ClassVar[str] = "Reelect"
    needs_active: ClassVar[bool] = False


@dataclass(frozen=True, slots=True)
class SessionExpired(ControllerEvent):
    """The ZooKeeper session is lost: whatever this broker held there is gone."""
    name: ClassVar[str] = "Expire"
    needs_active: ClassVar[bool] = False


@dataclass(frozen=True, slots=True)
class Resign(ControllerEvent):
    """The controller stops (its broker shuts down)."""
    name: ClassVar[str] = "ShutdownEventThread"
    needs_active: ClassVar[bool] = False


# --- ZooKeeper watches: the event reads what changed

@dataclass(frozen=True, slots=True)
class BrokerChange(ControllerEvent):
    name: ClassVar[str] = "BrokerChange"
    retriable: ClassVar[bool] = True


@dataclass(frozen=True, slots=True)
class TopicChange(ControllerEvent):
    name: ClassVar[str] = "TopicChange"
    retriable: ClassVar[bool] = True


@dataclass(frozen=True, slots=True)
class TopicDeletion(ControllerEvent):
    """/admin/delete_topics changed."""
    name: ClassVar[str] = "TopicDeletion"
    retriable: ClassVar[bool] = True


@dataclass(frozen=True, slots=True)
class PartitionReassignment(ControllerEvent):
    """/admin/reassign_partitions changed."""
    name: ClassVar[str] = "PartitionReassignment"
    retriable: ClassVar[bool] = True


@dataclass(frozen=True, slots=True)
class PreferredReplicaElection(ControllerEvent):
    """/admin/preferred_replica_election changed."""
    name: ClassVar[str] = "ReplicaLeaderElection"
    retriable: ClassVar[bool] = True


@dataclass(frozen=True, slots=True)
class IsrChangeNotification(ControllerEvent):
    name: ClassVar[str] = "IsrChangeNotification"
    retriable: ClassVar[bool] = True


@dataclass(frozen=True, slots=True)
class LogDirEventNotification(ControllerEvent):
    """/log_dir_event_notification changed: a broker's log dir failed."""
    name: ClassVar[str] = "LogDirEventNotification"
    retriable: ClassVar[bool] = True


@dataclass(frozen=True, slots=True)
class ConfigChange(ControllerEvent):
    """A topic config changed (/config/changes): unclean election may now be allowed."""
    name: ClassVar[str] = "TopicUncleanLeaderElectionEnable"
    retriable: ClassVar[bool] = True


@dataclass(frozen=True, slots=True)
class WatchReassigningStates(ControllerEvent):
    """Partitions that started moving: read their state znodes, with a watch."""
    partitions: tuple[TopicPartition, ...]
    name: ClassVar[str] = "PartitionReassignmentWatch"
    retriable: ClassVar[bool] = True


@dataclass(frozen=True, slots=True)
class PartitionReassignmentIsrChange(ControllerEvent):
    """State znodes of partitions being reassigned changed; which ones the
    controller noted as the watches fired (one event for all of them)."""
    name: ClassVar[str] = "PartitionReassignmentIsrChange"
    retriable: ClassVar[bool] = True


# --- timers

@dataclass(frozen=True, slots=True)
class AutoPreferredReplicaLeaderElection(ControllerEvent):
    name: ClassVar[str] = "AutoPreferredReplicaLeaderElection"


# --- broker requests and responses

@dataclass(frozen=True, slots=True)
class ControlledShutdown(ControllerEvent):
    """A broker asks to shut down; `reply` gets the answer, exactly once,
    from the event thread, or from `preempt`."""
    broker_id: int
    broker_epoch: int
    reply: Callable[[ShutdownAnswer], None] = field(compare=False, repr=False)
    name: ClassVar[str] = "ControlledShutdown"

    def preempt(self) -> None:
        self.reply((ErrorCode.not_controller, []))


@dataclass(frozen=True, slots=True)
class StopReplicaResponseReceived(ControllerEvent):
    """A StopReplica (delete) answered; `errors`: (partition, error code), 0 for done."""
    broker_id: int
    broker_epoch: int
    errors: tuple[tuple[TopicPartition, int], ...]
    name: ClassVar[str] = "TopicDeletionStopReplicaResponseReceived"
    retriable: ClassVar[bool] = True


@dataclass(frozen=True, slots=True)
class LeaderAndIsrResponseReceived(ControllerEvent):
    """A LeaderAndIsr answered; `offline`: its partitions the broker cannot
    store (KAFKA_STORAGE_ERROR), whose replica there is offline."""
    broker_id: int
    broker_epoch: int
    offline: tuple[TopicPartition, ...]
    name: ClassVar[str] = "LeaderAndIsrResponseReceived"
    retriable: ClassVar[bool] = True


# --- the Admin API (controller-only requests, handled where Kafka's controller handles them)

@dataclass(frozen=True, slots=True)
class AdminRequest(ControllerEvent):
    """A request thread waits (through a Future, never blocking) for the
    answer `reply` gets exactly once: the result from the event thread, or
    None from `preempt` when this broker is not (or no longer) the
    controller, which the handler answers NOT_CONTROLLER, as Kafka does."""
    reply: Callable[[object], None] = field(compare=False, repr=False)
    name: ClassVar[str] = "AdminRequest"      # abstract: the three below are queued

    def preempt(self) -> None:
        self.reply(None)


@dataclass(frozen=True, slots=True)
class ApiElectLeaders(AdminRequest):
    """ElectLeaders: `partitions` None for every partition."""
    partitions: tuple[TopicPartition, ...] | None = None
    unclean: bool = False
    # Kafka queues a ReplicaLeaderElection with the AdminClientTriggered
    # trigger; a name of its own keeps the names unique here.
    name: ClassVar[str] = "AdminClientReplicaLeaderElection"


@dataclass(frozen=True, slots=True)
class ApiPartitionReassignment(AdminRequest):
    """AlterPartitionReassignments: per partition its target, None to cancel."""
    targets: tuple[tuple[TopicPartition, tuple[int, ...] | None], ...] = ()
    name: ClassVar[str] = "ApiPartitionReassignment"


@dataclass(frozen=True, slots=True)
class ListPartitionReassignments(AdminRequest):
    """ListPartitionReassignments: `partitions` None for all being reassigned."""
    partitions: tuple[TopicPartition, ...] | None = None
    name: ClassVar[str] = "ListPartitionReassignments"


# The event each kind of watch of ControllerReads queues (zk_reads names them).
WATCH_EVENTS: dict[str, ControllerEvent] = {
    zk_reads.BROKER_CHANGE: BrokerChange(),
    zk_reads.TOPIC_CHANGE: TopicChange(),
    zk_reads.DELETE_TOPICS: TopicDeletion(),
    zk_reads.REASSIGN: PartitionReassignment(),
    zk_reads.PREFERRED_ELECTION: PreferredReplicaElection(),
    zk_reads.ISR_CHANGE: IsrChangeNotification(),
    zk_reads.CONFIG_CHANGE: ConfigChange(),
    zk_reads.LOG_DIR_EVENT: LogDirEventNotification(),
}
