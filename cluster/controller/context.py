"""The controller context: everything the controller knows, in memory.

Two kinds of data live here. A mirror of ZooKeeper (live brokers, topic
assignments, partition leadership with zk versions, the admin triggers) that
changes only by the writes of a decision or by what the I/O layer read; and
the controller's own bookkeeping (state machines, brokers shutting down,
deletion and reassignment progress, replicas on offline log dirs) that
ZooKeeper does not hold and a new controller rebuilds on failover.

A replica is online (Kafka's isReplicaOnline) when its broker is registered,
not shutting down (unless the caller counts those), and the replica is not
on a log dir its broker reported offline (`replicas_on_offline_dirs`: the
partitions a broker answered LeaderAndIsr for with KAFKA_STORAGE_ERROR,
kept until that broker registers again or dies, dropped with the partition).
Only an online replica is elected leader or put into an ISR.

Values stored here are immutable (frozen dataclasses, tuples), so `copy()`
copies only the containers: a decision works on a copy and never changes the
context it was given.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import AbstractSet as Set, Collection, Iterable

from kafkactl.cluster.controller.model import (
    NO_LEADER, PartitionReplica, ReplicaAssignment, TopicPartition,
)
from kafkactl.cluster.controller.partition_state_machine import PartitionStateName
from kafkactl.cluster.controller.replica_state_machine import ReplicaStateName
from kafkactl.cluster.zk.codecs import BrokerRegistration, PartitionState, TopicAssignment

UNCLEAN_LEADER_ELECTION_ENABLE = "unclean.leader.election.enable"


class ReplicaAssignments(dict):
    """Partition -> ReplicaAssignment, with an index of the partitions each
    broker holds a replica of (adding and removing ones included).

    A broker's death must find its partitions without scanning every
    assignment (100,000 partitions, a few of them on that broker). The index
    lives inside the dict and follows every way of changing it, so no caller
    can forget to keep it up to date. Copies share the per-broker sets until
    one side changes a broker's set (copy on write): a decision copies the
    context at every step and changes few assignments, if any."""

    __slots__ = ("_by_broker", "_owned")

    def __init__(self, *args, **kwargs) -> None:
        super().__init__()
        self._by_broker: dict[int, set[TopicPartition]] = {}
        self._owned: set[int] = set()      # brokers whose set only this dict refers to
        self.update(*args, **kwargs)

    def partitions_on(self, broker_id: int) -> Set[TopicPartition]:
        """The partitions with a replica on the broker (do not change the set)."""
        return self._by_broker.get(broker_id, _NONE)

    def brokers(self) -> Set[int]:
        """The brokers the index lists (each holds at least one replica)."""
        return self._by_broker.keys()

    def copy(self) -> ReplicaAssignments:
        clone = ReplicaAssignments.__new__(ReplicaAssignments)
        dict.update(clone, self)
        clone._by_broker = dict(self._by_broker)
        clone._owned = set()
        self._owned = set()                 # the sets are shared from now on
        return clone

    def _broker_set(self, broker_id: int) -> set[TopicPartition]:
        if broker_id in self._owned:
            return self._by_broker[broker_id]
        tps = set(self._by_broker.get(broker_id, ()))
        self._by_broker[broker_id] = tps
        self._owned.add(broker_id)
        return tps

    def _unindex(self, tp: TopicPartition) -> None:
        old = dict.get(self, tp)
        if old is not None:
            for broker_id in old.replicas:
                tps = self._broker_set(broker_id)
                tps.discard(tp)
                if not tps:
                    del self._by_broker[broker_id]
                    self._owned.discard(broker_id)

    def __setitem__(self, tp: TopicPartition, assignment: ReplicaAssignment) -> None:
        self._unindex(tp)
        dict.__setitem__(self, tp, assignment)
        for broker_id in assignment.replicas:
            self._broker_set(broker_id).add(tp)

    def __delitem__(self, tp: TopicPartition) -> None:
        if tp not in self:
            raise KeyError(tp)
        self._unindex(tp)
        dict.__delitem__(self, tp)

    _MISSING = object()

    def pop(self, tp, default=_MISSING):
        if tp in self:
            value = dict.__getitem__(self, tp)
            del self[tp]
            return value
        if default is ReplicaAssignments._MISSING:
            raise KeyError(tp)
        return default

    def popitem(self):
        tp, value = dict.popitem(self)
        dict.__setitem__(self, tp, value)
        del self[tp]
        return tp, value

    def setdefault(self, tp, default=None):
        if tp not in self:
            self[tp] = default
        return dict.__getitem__(self, tp)

    def update(self, *args, **kwargs) -> None:
        for tp, assignment in dict(*args, **kwargs).items():
            self[tp] = assignment

    def __ior__(self, other):
        self.update(other)
        return self

    def clear(self) -> None:
        dict.clear(self)
        self._by_broker = {}
        self._owned = set()

    def __reduce__(self):
        # Copy and pickle rebuild through __init__, which builds the index.
        return (ReplicaAssignments, (dict(self),))


_NONE: frozenset = frozenset()


@dataclass(frozen=True, slots=True)
class ControllerConfig:
    """The broker settings the controller's decisions depend on (Kafka's defaults)."""

    unclean_leader_election_enable: bool = False
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_per_broker_percentage: int = 10
    delete_topic_enable: bool = True


@dataclass(frozen=True, slots=True)
class Reassignment:
    target: tuple[int, ...]
    # The leader moved into the target and the ISR lost the removed replicas;
    # what remains is writing the final assignment and the admin znode.
    completing: bool = False


@dataclass
class ControllerContext:
    controller_id: int
    controller_epoch: int
    controller_epoch_zk_version: int
    config: ControllerConfig = field(default_factory=ControllerConfig)
    # --- mirror of ZooKeeper
    live_brokers: dict[int, BrokerRegistration] = field(default_factory=dict)
    topic_ids: dict[str, str | None] = field(default_factory=dict)
    assignments: ReplicaAssignments = field(default_factory=ReplicaAssignments)
    leadership: dict[TopicPartition, PartitionState] = field(default_factory=dict)
    topics_to_delete: set[str] = field(default_factory=set)           # /admin/delete_topics
    reassign_admin: dict[TopicPartition, tuple[int, ...]] = field(default_factory=dict)
    preferred_admin: frozenset[TopicPartition] | None = None          # /admin/preferred_replica_election
    unclean_overrides: dict[str, bool] = field(default_factory=dict)  # /config/topics/<t>
    # --- the controller's own bookkeeping
    shutting_down: set[int] = field(default_factory=set)
    partition_states: dict[TopicPartition, PartitionStateName] = field(default_factory=dict)
    replica_states: dict[PartitionReplica, ReplicaStateName] = field(default_factory=dict)
    reassignments: dict[TopicPartition, Reassignment] = field(default_factory=dict)
    deletion_ineligible: set[str] = field(default_factory=set)
    # broker -> partitions it answered KAFKA_STORAGE_ERROR for, since it registered
    replicas_on_offline_dirs: dict[int, frozenset[TopicPartition]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.assignments, ReplicaAssignments):
            self.assignments = ReplicaAssignments(self.assignments)

    def copy(self) -> ControllerContext:
        return ControllerContext(
            controller_id=self.controller_id,
            controller_epoch=self.controller_epoch,
            controller_epoch_zk_version=self.controller_epoch_zk_version,
            config=self.config,
            live_brokers=dict(self.live_brokers),
            topic_ids=dict(self.topic_ids),
            assignments=self.assignments.copy(),
            leadership=dict(self.leadership),
            topics_to_delete=set(self.topics_to_delete),
            reassign_admin=dict(self.reassign_admin),
            preferred_admin=self.preferred_admin,
            unclean_overrides=dict(self.unclean_overrides),
            shutting_down=set(self.shutting_down),
            partition_states=dict(self.partition_states),
            replica_states=dict(self.replica_states),
            reassignments=dict(self.reassignments),
            deletion_ineligible=set(self.deletion_ineligible),
            # Values are frozensets: copying the dict copies a few references.
            replicas_on_offline_dirs=dict(self.replicas_on_offline_dirs),
        )

    def restore_partition(self, before: ControllerContext, tp: TopicPartition) -> None:
        """Put back everything about one partition as it was in `before`: its
        decision did not reach ZooKeeper and will be redone from a fresh read.
        A partition the decision itself added goes back to New."""
        if tp not in before.assignments and tp in self.assignments:
            self.leadership.pop(tp, None)
            self.reassignments.pop(tp, None)
            self.partition_states[tp] = PartitionStateName.NEW
            for replica in self.partition_replicas(tp):
                self.replica_states[replica] = ReplicaStateName.NEW
            return
        _restore(self.leadership, before.leadership, tp)
        _restore(self.assignments, before.assignments, tp)
        _restore(self.partition_states, before.partition_states, tp)
        _restore(self.reassignments, before.reassignments, tp)
        replicas = set(self._replicas_of(tp)) | set(before._replicas_of(tp))
        for broker_id in replicas:
            _restore(self.replica_states, before.replica_states, PartitionReplica(tp, broker_id))

    def _replicas_of(self, tp: TopicPartition) -> tuple[int, ...]:
        assignment = self.assignments.get(tp)
        return assignment.replicas if assignment else ()

    # --- brokers

    def is_broker_live(self, broker_id: int) -> bool:
        """Registered, shutting down or not: it still receives requests."""
        return broker_id in self.live_brokers

    def online_brokers(self) -> frozenset[int]:
        return frozenset(b for b in self.live_brokers if b not in self.shutting_down)

    # --- replicas: the one liveness predicate of elections and ISRs

    def is_on_offline_dir(self, broker_id: int, tp: TopicPartition) -> bool:
        """The broker answered KAFKA_STORAGE_ERROR for `tp` since it registered."""
        tps = self.replicas_on_offline_dirs.get(broker_id)
        return tps is not None and tp in tps

    def is_replica_online(self, broker_id: int, tp: TopicPartition, include_shutting_down: bool = False) -> bool:
        """Kafka's isReplicaOnline: the broker is registered (and not shutting
        down, unless `include_shutting_down`) and its replica of `tp` is not
        on an offline log dir. Only such a replica may lead or join an ISR."""
        if include_shutting_down:
            broker_ok = broker_id in self.live_brokers
        else:
            broker_ok = broker_id in self.live_brokers and broker_id not in self.shutting_down
        return broker_ok and not self.is_on_offline_dir(broker_id, tp)

    def online_replicas(self, tp: TopicPartition, brokers: Collection[int] | None = None) -> Collection[int]:
        """The `live` set an election of `tp` takes: `brokers` (by default
        online_brokers(); a loop over many partitions passes it, computed
        once) less the brokers whose replica of `tp` is on an offline log
        dir. The same as filtering with is_replica_online, without a lookup
        per broker and partition when no log dir is offline (nearly always)."""
        if brokers is None:
            brokers = self.online_brokers()
        offline_dirs = self.replicas_on_offline_dirs
        if not offline_dirs:
            return brokers
        out = [b for b, tps in offline_dirs.items() if tp in tps]
        return frozenset(b for b in brokers if b not in out) if out else brokers

    def replicas_offline_on_dirs(self, broker_id: int, tps: Iterable[TopicPartition]) -> None:
        """Remember that the broker cannot store `tps` (partitions the
        context does not know are left out: nothing can elect them)."""
        known = frozenset(tp for tp in tps if tp in self.assignments)
        if known:
            offline_dirs = self.replicas_on_offline_dirs
            offline_dirs[broker_id] = offline_dirs.get(broker_id, _NONE) | known

    def forget_offline_dirs_of(self, broker_ids: Iterable[int]) -> None:
        """The brokers registered anew or died: their log dirs are unknown again."""
        for broker_id in broker_ids:
            self.replicas_on_offline_dirs.pop(broker_id, None)

    def forget_offline_dirs_for(self, tps: Iterable[TopicPartition]) -> None:
        """The partitions were deleted."""
        gone = frozenset(tps)
        offline_dirs = self.replicas_on_offline_dirs
        for broker_id, held in list(offline_dirs.items()):
            if not held.isdisjoint(gone):
                kept = held - gone
                if kept:
                    offline_dirs[broker_id] = kept
                else:
                    del offline_dirs[broker_id]

    def broker_epoch(self, broker_id: int) -> int:
        registration = self.live_brokers.get(broker_id)
        return registration.broker_epoch if registration else -1

    # --- topics and partitions

    def all_partitions(self) -> list[TopicPartition]:
        return sorted(self.assignments)

    def partitions_of(self, topic: str) -> list[TopicPartition]:
        return sorted(tp for tp in self.assignments if tp.topic == topic)

    def replicas(self, tp: TopicPartition) -> tuple[int, ...]:
        return self._replicas_of(tp)

    def partition_replicas(self, tp: TopicPartition) -> list[PartitionReplica]:
        return [PartitionReplica(tp, b) for b in self._replicas_of(tp)]

    def partitions_on_brokers(self, broker_ids: Iterable[int]) -> list[TopicPartition]:
        found: set[TopicPartition] = set()
        for broker_id in set(broker_ids):
            found.update(self.assignments.partitions_on(broker_id))
        return sorted(found)

    def partitions_led_by(self, broker_id: int) -> list[TopicPartition]:
        return sorted(tp for tp, s in self.leadership.items() if s.leader == broker_id)

    def leader(self, tp: TopicPartition) -> int:
        state = self.leadership.get(tp)
        return state.leader if state else NO_LEADER

    def has_live_leader(self, tp: TopicPartition) -> bool:
        state = self.leadership.get(tp)
        return state is not None and state.leader != NO_LEADER and self.is_broker_live(state.leader)

    def partitions_without_leader(self) -> list[TopicPartition]:
        """New partitions and those whose leader is gone, except topics being
        deleted: what `triggerOnlinePartitionStateChange` elects."""
        return [tp for tp in self.all_partitions()
                if not self.is_queued_for_deletion(tp.topic) and not self.has_live_leader(tp)]

    def online_partitions(self) -> list[TopicPartition]:
        return sorted(tp for tp, s in self.partition_states.items() if s is PartitionStateName.ONLINE)

    def offline_partitions(self) -> list[TopicPartition]:
        return sorted(tp for tp, s in self.partition_states.items() if s is PartitionStateName.OFFLINE)

    def is_queued_for_deletion(self, topic: str) -> bool:
        return topic in self.topics_to_delete

    def is_being_reassigned(self, tp: TopicPartition) -> bool:
        return tp in self.reassignments

    def unclean_enabled(self, topic: str) -> bool:
        return self.unclean_overrides.get(topic, self.config.unclean_leader_election_enable)

    def topic_assignment(self, topic: str) -> TopicAssignment:
        """The /brokers/topics/<t> value for what the context holds now."""
        partitions = {tp.partition: self.assignments[tp] for tp in self.partitions_of(topic)}
        return TopicAssignment(
            partitions={p: list(a.replicas) for p, a in partitions.items()},
            topic_id=self.topic_ids.get(topic),
            adding_replicas={p: list(a.adding) for p, a in partitions.items() if a.adding},
            removing_replicas={p: list(a.removing) for p, a in partitions.items() if a.removing},
        )


def _restore(current: dict, before: dict, key) -> None:
    if key in before:
        current[key] = before[key]
    else:
        current.pop(key, None)


def parse_unclean_override(config: dict[str, str]) -> bool | None:
    value = config.get(UNCLEAN_LEADER_ELECTION_ENABLE)
    if value is None:
        return None
    return value.strip().lower() == "true"
