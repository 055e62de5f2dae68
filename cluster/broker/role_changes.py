"""The controller's commands, applied: LeaderAndIsr and StopReplica (seed 000, C).

Control requests are applied one at a time (`control_lock`), so a
partition's leader epoch, written only here, needs no lock to be read here.
Fencing: a request from a controller older than one already heard from is
refused whole (STALE_CONTROLLER_EPOCH); per partition, a leader epoch that is
not newer than the current one is ignored, as Kafka does.

Leadership changes are an extension point: whoever must act when this broker
becomes leader of a partition or stops leading it (the group coordinator
loads and unloads the groups of its __consumer_offsets partitions) registers
a `LeadershipListener` with `ReplicaManager.add_leadership_listener`. The
partitions record the events under their own locks, in the order the roles
changed; they are delivered in that order, after the change, on the thread
that made it (the control thread, or the ISR writer's when a leader's ISR
write finds another leader).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, NamedTuple, Protocol

from kio.schema.errors import ErrorCode

from kafkactl.cluster import fatal
from kafkactl.cluster.broker.replica_fetcher import PartitionFetchState
from kafkactl.cluster.errors import KafkaError
from kafkactl.cluster.log.errors import LogError

if TYPE_CHECKING:
    from kafkactl.cluster.broker.partition import Partition
    from kafkactl.cluster.broker.replica_manager import ReplicaManager

log = logging.getLogger(__name__)

# A LeaderAndIsr changing at least this many roles leaves tens of thousands of
# new long-lived objects (follower states, partition states) behind.
LARGE_CHANGE_PARTITIONS = 1000

# StopReplica leader-epoch sentinels: stop whatever the current epoch.
STOP_REPLICA_NO_EPOCH = -1
STOP_REPLICA_EPOCH_DURING_DELETE = -2


class LeaderAndIsrState(NamedTuple):
    """One partition of a LeaderAndIsr request, with its topic, as the broker
    applies it (a tuple: a failover brings 10,000s of them). Not the
    controller's model.LeaderAndIsrPartition, nor the wire's
    control.LeaderAndIsrPartitionState: handlers/control.py adapts the latter."""

    topic: str
    partition: int
    controller_epoch: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int          # the state znode's zkVersion
    replicas: tuple[int, ...]
    is_new: bool = False
    leader_recovery_state: int = 0


class StaleControllerEpochError(KafkaError):
    """A control request from a controller older than one already heard from."""

    error_code = ErrorCode.stale_controller_epoch

    def __init__(self, request: str, controller_id: int, controller_epoch: int, current_epoch: int) -> None:
        super().__init__(f"{request} from controller {controller_id} at epoch {controller_epoch}, "
                         f"older than controller epoch {current_epoch}")
        self.controller_epoch = controller_epoch
        self.current_epoch = current_epoch


class LeadershipListener(Protocol):
    """Told when this broker becomes leader of a partition or stops leading it
    (Kafka's GroupCoordinator.onElection / onResignation). Called on the
    thread that changed the role, in the order of the changes: return
    quickly and do the work on a thread of your own."""

    def on_election(self, topic: str, partition: int, leader_epoch: int) -> None: ...

    def on_resignation(self, topic: str, partition: int, leader_epoch: int) -> None: ...


class LeadershipEvents:
    """Role changes recorded by the partitions (under their locks), delivered
    to the listeners in order by whichever thread made them."""

    def __init__(self) -> None:
        self._listeners: list[tuple[LeadershipListener, frozenset[str] | None]] = []
        self._events: deque[tuple[str, int, int, bool]] = deque()
        self._delivering = threading.Lock()   # one delivery at a time: the order holds across threads

    def add_listener(self, listener: LeadershipListener, topics: Iterable[str] | None = None) -> None:
        """`topics`: only these topics' partitions (None: every topic)."""
        self._listeners.append((listener, frozenset(topics) if topics is not None else None))

    def record(self, topic: str, partition: int, leader_epoch: int, elected: bool) -> None:
        if self._listeners:   # nobody listening: a failover records nothing
            self._events.append((topic, partition, leader_epoch, elected))

    def deliver(self) -> None:
        with self._delivering:
            while self._events:
                topic, partition, leader_epoch, elected = self._events.popleft()
                for listener, topics in self._listeners:
                    if topics is not None and topic not in topics:
                        continue
                    try:
                        if elected:
                            listener.on_election(topic, partition, leader_epoch)
                        else:
                            listener.on_resignation(topic, partition, leader_epoch)
                    except Exception as error:   # a listener's bug must not fail the controller's request
                        fatal.halt_if_fatal(error, f"leadership listener {listener!r}")
                        log.exception("leadership listener %r failed on %s-%s", listener, topic, partition)


class RoleChanges:
    """LeaderAndIsr and StopReplica on the partitions of `replicas`."""

    def __init__(self, replicas: ReplicaManager) -> None:
        self._replicas = replicas
        self.broker_id = replicas.broker_id
        self.controller_epoch = -1   # the newest controller epoch a control request carried
        self.broker_endpoints: dict[int, tuple[str, int]] = {}
        # One control request at a time; the log dir failure handler takes it too.
        self.control_lock = threading.Lock()

    def apply_leader_and_isr(self, controller_id: int, controller_epoch: int,
                             partition_states: Iterable[LeaderAndIsrState],
                             live_leaders: Mapping[int, tuple[str, int]]) -> dict[tuple[str, int], ErrorCode]:
        """See ReplicaManager.apply_leader_and_isr."""
        replicas = self._replicas
        timer = _ApplyTimer(time.monotonic())
        with self.control_lock:
            timer.locked_s = time.monotonic()
            self._check_controller_epoch("LeaderAndIsr", controller_id, controller_epoch)
            self.update_broker_endpoints(live_leaders)
            errors: dict[tuple[str, int], ErrorCode] = {}
            leading, following = [], []
            hosted = len(replicas.partitions)
            for state in partition_states:
                error, partition = self._accept(state, controller_id)
                errors[(state.topic, state.partition)] = error
                if partition is not None:
                    (leading if state.leader == self.broker_id else following).append((partition, state))
            timer.accepted_s = time.monotonic()
            self._make_leaders(leading, timer)
            self._make_followers(following)
            large = len(replicas.partitions) > hosted or len(leading) + len(following) >= LARGE_CHANGE_PARTITIONS
        replicas.waiters.notify()
        replicas.leadership.deliver()
        if large and replicas.after_large_change is not None:
            replicas.after_large_change()
        return errors

    def stop_replicas(self, partitions: Mapping[tuple[str, int], int], delete: bool,
                      controller_epoch: int | None = None,
                      controller_id: int = -1) -> dict[tuple[str, int], ErrorCode]:
        """See ReplicaManager.stop_replicas."""
        replicas = self._replicas
        with self.control_lock:
            if controller_epoch is not None:
                self._check_controller_epoch("StopReplica", controller_id, controller_epoch)
            errors: dict[tuple[str, int], ErrorCode] = {}
            stopping = []
            for key, request_epoch in partitions.items():
                if key in replicas.offline_partitions:   # its log dir failed: nothing can be done to it
                    errors[key] = ErrorCode.kafka_storage_error
                    continue
                partition = replicas.partitions.get(key)
                if partition is None or request_epoch in (STOP_REPLICA_NO_EPOCH, STOP_REPLICA_EPOCH_DURING_DELETE) \
                        or request_epoch > partition.leader_epoch:
                    stopping.append((key, partition))
                    errors[key] = ErrorCode.none
                else:
                    errors[key] = ErrorCode.fenced_leader_epoch
            replicas.fetchers.remove_partitions([key for key, _ in stopping])
            for key, partition in stopping:
                if partition is not None:
                    partition.stop()
                if delete:
                    errors[key] = replicas.delete_partition(key)
        replicas.waiters.notify()
        replicas.leadership.deliver()
        return errors

    def delete_strays(self, assigned: set[tuple[str, int]]) -> list[tuple[str, int]]:
        """See ReplicaManager.delete_strays."""
        replicas = self._replicas
        local = set(replicas.partitions) | set(replicas.log_manager.all_logs())
        strays = sorted(local - assigned)
        if strays:
            log.info("deleting stray partitions not assigned to broker %s: %s", self.broker_id,
                     ", ".join(f"{t}-{p}" for t, p in strays[:20]))
            self.stop_replicas({key: STOP_REPLICA_EPOCH_DURING_DELETE for key in strays}, delete=True)
        return strays

    def update_broker_endpoints(self, endpoints: Mapping[int, tuple[str, int]]) -> None:
        """Where brokers listen (UpdateMetadata's live brokers): used for new fetchers."""
        self.broker_endpoints.update({b: (str(host), int(port)) for b, (host, port) in endpoints.items()})

    def _check_controller_epoch(self, request: str, controller_id: int, controller_epoch: int) -> None:
        if controller_epoch < self.controller_epoch:
            raise StaleControllerEpochError(request, controller_id, controller_epoch, self.controller_epoch)
        self.controller_epoch = controller_epoch

    def _accept(self, state: LeaderAndIsrState, controller_id: int) -> tuple[ErrorCode, Partition | None]:
        # Runs for every partition of a failover: the common case (a hosted
        # partition, a newer epoch) formats and locks nothing.
        if self.broker_id not in state.replicas:
            log.warning("ignoring LeaderAndIsr for %s-%s from controller %s: broker %s is not among replicas %s",
                        state.topic, state.partition, controller_id, self.broker_id, list(state.replicas))
            return ErrorCode.unknown_topic_or_partition, None
        partition = self._replicas.partitions.get((state.topic, state.partition))
        if partition is None and (state.topic, state.partition) in self._replicas.offline_partitions:
            # Its log dir failed (Kafka's HostedPartition.Offline): the
            # controller takes this replica offline on this answer.
            return ErrorCode.kafka_storage_error, None
        if partition is None:
            try:
                partition = self._replicas.get_or_create(state.topic, state.partition)
            except ValueError as error:
                log.warning("ignoring LeaderAndIsr for %s-%s: %s", state.topic, state.partition, error)
                return ErrorCode.unknown_topic_or_partition, None
            except (LogError, OSError) as error:
                log.error("cannot open the log of %s-%s: %s", state.topic, state.partition, error)
                return ErrorCode.kafka_storage_error, None
        if not partition.claim_for_controller(state.leader_epoch):
            log.info("ignoring LeaderAndIsr for %s-%s from controller %s: leader epoch %s is not newer than %s",
                     state.topic, state.partition, controller_id, state.leader_epoch, partition.leader_epoch)
            return ErrorCode.stale_controller_epoch, None
        return ErrorCode.none, partition

    def _make_leaders(self, leading: list[tuple[Partition, LeaderAndIsrState]], timer: _ApplyTimer) -> None:
        if not leading:
            return
        replicas = self._replicas
        # First stop fetching: nothing from the old leader may be appended
        # once this broker appends as leader.
        replicas.fetchers.remove_partitions([p.key for p, _ in leading])
        stopped_s = time.monotonic()
        # The ISR's followers count as caught up from when the leadership takes
        # effect, not from the request's arrival: creating thousands of logs
        # before this can take longer than replica.lag.time.max.ms.
        now_ms = replicas.clock_ms()
        replicas.changes.note_many([p.key for p, _ in leading])   # before any role changes
        for partition, state in leading:
            partition.make_leader(state, now_ms)
        # "took" counts from the request's arrival in apply_leader_and_isr.
        log.info("leader of %d partitions (took %.0f ms: %s): %s", len(leading),
                 (time.monotonic() - timer.start_s) * 1000, timer.parts(stopped_s), summarize(leading))

    def _make_followers(self, following: list[tuple[Partition, LeaderAndIsrState]]) -> None:
        if not following:
            return
        replicas = self._replicas
        replicas.fetchers.remove_partitions([p.key for p, _ in following])
        replicas.changes.note_many([p.key for p, _ in following])   # before any role changes
        by_leader: dict[int, list[PartitionFetchState]] = {}
        for partition, state in following:
            partition.make_follower(state)
            if state.leader < 0:
                continue  # no leader: nothing to fetch until one is elected
            if state.leader not in self.broker_endpoints:
                log.warning("%s-%s: leader %s is not among the live leaders: not fetching",
                            state.topic, state.partition, state.leader)
                continue
            by_leader.setdefault(state.leader, []).append(
                PartitionFetchState(partition, state.leader, state.leader_epoch))
        for leader_id, states in by_leader.items():
            replicas.fetchers.add_partitions(leader_id, self.broker_endpoints[leader_id], states)
        log.info("follower of %d partitions: %s", len(following), summarize(following))


class _ApplyTimer:
    """Where a LeaderAndIsr's time went, for its log line (a failover of
    thousands of partitions is judged by it)."""

    def __init__(self, start_s: float) -> None:
        self.start_s = start_s
        self.locked_s = start_s
        self.accepted_s = start_s

    def parts(self, fetchers_stopped_s: float) -> str:
        ms = lambda a, b: (b - a) * 1000  # noqa: E731
        return (f"lock wait {ms(self.start_s, self.locked_s):.0f}, checks {ms(self.locked_s, self.accepted_s):.0f}, "
                f"fetchers stopped {ms(self.accepted_s, fetchers_stopped_s):.0f}, "
                f"leaders {ms(fetchers_stopped_s, time.monotonic()):.0f}")


def summarize(changes: list[tuple[Partition, LeaderAndIsrState]], limit: int = 5) -> str:
    """The first few of a role change, for one log line per request instead
    of one per partition (thousands of lines on a failover)."""
    shown = ", ".join(f"{s.topic}-{s.partition} (leader {s.leader}, epoch {s.leader_epoch})"
                      for _, s in changes[:limit])
    return shown + (f" and {len(changes) - limit} more" if len(changes) > limit else "")
