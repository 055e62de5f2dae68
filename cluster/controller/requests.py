"""Collects what each broker must be told during one decision and builds the
requests at the end, from the final context: a partition touched twice in a
decision is sent once, with its last state (Kafka's ControllerBrokerRequestBatch).

Per broker the order is LeaderAndIsr, UpdateMetadata, StopReplica (no
delete), StopReplica (delete); brokers in id order. Brokers that are not
live when the decision ends get nothing: they read fresh state when they
register again.
"""

from __future__ import annotations

from typing import Iterable

from kafkactl.cluster.controller.context import ControllerContext
from kafkactl.cluster.controller.model import (
    EPOCH_DURING_DELETE, LEADER_DURING_DELETE, NO_EPOCH, BrokerRequest, LeaderAndIsr,
    LeaderAndIsrPartition, StopReplica, StopReplicaPartition, TopicPartition, UpdateMetadata,
    UpdateMetadataPartition,
)


class RequestBatch:
    def __init__(self) -> None:
        self._leader_and_isr: dict[int, dict[TopicPartition, bool]] = {}   # broker -> tp -> is_new
        self._full: set[int] = set()
        self._metadata: dict[int, set[TopicPartition]] = {}
        # For every broker live when the decision ends: what a partition's
        # change tells the whole cluster. One set instead of one per broker,
        # and one shared tuple of entries in the requests.
        # A dict used as an ordered set: partitions come in sorted order, and
        # sorting them again is then cheap (a set's order costs a full sort).
        self._metadata_live: dict[TopicPartition, None] = {}
        self._stop: dict[tuple[int, bool], set[TopicPartition]] = {}

    def leader_and_isr(self, broker_ids: Iterable[int], tp: TopicPartition,
                       new_replicas: Iterable[int] = ()) -> None:
        new = set(new_replicas) if new_replicas else ()
        requests = self._leader_and_isr
        for broker_id in broker_ids:
            partitions = requests.get(broker_id)
            if partitions is None:
                partitions = requests[broker_id] = {}
            partitions[tp] = partitions.get(tp, False) or broker_id in new

    def mark_full(self, broker_id: int) -> None:
        """The LeaderAndIsr to this broker lists every partition it hosts."""
        self._leader_and_isr.setdefault(broker_id, {})
        self._full.add(broker_id)

    def update_metadata(self, broker_ids: Iterable[int], tps: Iterable[TopicPartition] = ()) -> None:
        tps = set(tps)
        for broker_id in broker_ids:
            self._metadata.setdefault(broker_id, set()).update(tps)

    def announce(self, broker_ids: Iterable[int], tp: TopicPartition) -> None:
        """leader_and_isr(broker_ids, tp) and update_metadata_live(tp): what a
        partition's new state needs, once per partition of a failover."""
        requests = self._leader_and_isr
        for broker_id in broker_ids:
            partitions = requests.get(broker_id)
            if partitions is None:
                partitions = requests[broker_id] = {}
            if tp not in partitions:
                partitions[tp] = False
        self._metadata_live[tp] = None

    def update_metadata_live(self, tp: TopicPartition) -> None:
        """UpdateMetadata with this partition to every broker that is live
        once the decision is made (brokers only join or leave the live set
        before a decision announces anything, so that is every live broker)."""
        self._metadata_live[tp] = None

    def stop_replica(self, broker_id: int, tp: TopicPartition, delete: bool) -> None:
        self._stop.setdefault((broker_id, delete), set()).add(tp)

    def build(self, ctx: ControllerContext) -> tuple[BrokerRequest, ...]:
        # Every broker gets the same entry for a partition: build it once
        # (a failover sends 10,000s of entries to each broker).
        self._lai_entries: tuple[dict, dict] = ({}, {})     # by is_new, then partition
        self._um_entries: dict[TopicPartition, UpdateMetadataPartition | None] = {}
        self._um_live: tuple[UpdateMetadataPartition, ...] | None = None
        self._lai_built: list[tuple[LeaderAndIsrPartition, ...]] = []
        requests: list[BrokerRequest] = []
        brokers = set(self._leader_and_isr) | set(self._metadata) | {b for b, _ in self._stop}
        if self._metadata_live:
            brokers.update(ctx.live_brokers)
        for broker_id in sorted(brokers):
            if not ctx.is_broker_live(broker_id):
                continue
            requests.extend(self._for_broker(ctx, broker_id))
        return tuple(requests)

    def _for_broker(self, ctx: ControllerContext, broker_id: int) -> list[BrokerRequest]:
        out: list[BrokerRequest] = []
        epoch = ctx.broker_epoch(broker_id)
        if broker_id in self._leader_and_isr:
            partitions = _leader_and_isr_entries(ctx, self._leader_and_isr[broker_id], self._lai_entries)
            # Replicas of the same partitions get the very same tuple, which
            # the wire layer then encodes once for all of them (the entries
            # are shared, so equal tuples compare by identity, quickly).
            for built in self._lai_built:
                if built == partitions:
                    partitions = built
                    break
            else:
                self._lai_built.append(partitions)
            if partitions or broker_id in self._full:
                out.append(LeaderAndIsr(broker_id, epoch, ctx.controller_id, ctx.controller_epoch,
                                        partitions, live_leaders(ctx, partitions),
                                        full=broker_id in self._full))
        own = self._metadata.get(broker_id)
        if own is not None or self._metadata_live:
            if own and not own <= self._metadata_live.keys():
                partitions = self._metadata_entries(ctx, sorted(own | self._metadata_live.keys()))
            else:
                # The common case: the same partitions for every broker, one tuple.
                if self._um_live is None:
                    self._um_live = self._metadata_entries(ctx, sorted(self._metadata_live))
                partitions = self._um_live
            out.append(UpdateMetadata(broker_id, epoch, ctx.controller_id, ctx.controller_epoch,
                                      partitions, tuple(ctx.live_brokers[b] for b in sorted(ctx.live_brokers))))
        for delete in (False, True):
            tps = self._stop.get((broker_id, delete))
            if tps:
                partitions = tuple(StopReplicaPartition(tp.topic, tp.partition, _stop_epoch(ctx, tp, delete))
                                   for tp in sorted(tps))
                out.append(StopReplica(broker_id, epoch, ctx.controller_id, ctx.controller_epoch,
                                       partitions, delete))
        return out

    def _metadata_entries(self, ctx: ControllerContext,
                          tps: list[TopicPartition]) -> tuple[UpdateMetadataPartition, ...]:
        return _metadata_entries(ctx, tps, self._um_entries)


# The entries of a request, built in loops with the context's lookups hoisted
# and the tuples made with tuple.__new__ (a NamedTuple's own __new__ is a
# Python function): a failover builds one of each per partition, and this is
# where its per-partition microseconds go.

_new_tuple = tuple.__new__
_MISSING = object()


def _cached_entry(ctx: ControllerContext, tp: TopicPartition, cache: dict, build):
    """The request entry for `tp` from `cache`, else `build(tp, state, assignment)`
    cached; None (also cached) for a partition without a state or an assignment."""
    entry = cache.get(tp, _MISSING)
    if entry is _MISSING:
        state = ctx.leadership.get(tp)
        assignment = ctx.assignments.get(tp)
        entry = None if state is None or assignment is None else build(tp, state, assignment)
        cache[tp] = entry
    return entry


def _leader_and_isr_entries(ctx: ControllerContext, wanted: dict[TopicPartition, bool],
                            caches: tuple[dict, dict]) -> tuple[LeaderAndIsrPartition, ...]:
    """The entries for `wanted` (partition -> is_new), sorted by partition;
    `caches` (by is_new) hold entries already built for other brokers."""
    topic_ids = ctx.topic_ids

    def build(is_new: bool):
        def entry(tp, state, assignment) -> LeaderAndIsrPartition:
            topic, partition = tp
            return _new_tuple(LeaderAndIsrPartition, (
                topic, partition, topic_ids.get(topic), state.controller_epoch, state.leader,
                state.leader_epoch, tuple(state.isr), state.zk_version, assignment.replicas,
                assignment.adding, assignment.removing, is_new, state.leader_recovery_state))
        return entry

    builders = (build(False), build(True))
    partitions = []
    for tp in sorted(wanted):
        is_new = wanted[tp]
        entry = _cached_entry(ctx, tp, caches[is_new], builders[is_new])
        if entry is not None:
            partitions.append(entry)
    return tuple(partitions)


def _metadata_entries(ctx: ControllerContext, tps: Iterable[TopicPartition],
                      cache: dict) -> tuple[UpdateMetadataPartition, ...]:
    topic_ids, live, deleting = ctx.topic_ids, ctx.live_brokers, ctx.topics_to_delete
    offline_of: dict[tuple[int, ...], tuple[int, ...]] = {}     # replicas -> those not live

    def build(tp, state, assignment) -> UpdateMetadataPartition:
        topic, partition = tp
        replicas = assignment.replicas
        offline = offline_of.get(replicas)
        if offline is None:
            offline = offline_of[replicas] = tuple(r for r in replicas if r not in live)
        # Brokers drop a partition from their metadata when its leader is
        # LEADER_DURING_DELETE, so clients stop using a topic being deleted.
        leader = LEADER_DURING_DELETE if topic in deleting else state.leader
        return _new_tuple(UpdateMetadataPartition, (
            topic, partition, topic_ids.get(topic), state.controller_epoch, leader,
            state.leader_epoch, tuple(state.isr), state.zk_version, replicas, offline))

    partitions = []
    for tp in tps:
        entry = _cached_entry(ctx, tp, cache, build)
        if entry is not None:
            partitions.append(entry)
    return tuple(partitions)


def leader_and_isr_partition(ctx: ControllerContext, tp: TopicPartition,
                             is_new: bool = False) -> LeaderAndIsrPartition | None:
    entries = _leader_and_isr_entries(ctx, {tp: is_new}, ({}, {}))
    return entries[0] if entries else None


def update_metadata_partition(ctx: ControllerContext, tp: TopicPartition) -> UpdateMetadataPartition | None:
    entries = _metadata_entries(ctx, (tp,), {})
    return entries[0] if entries else None


def live_leaders(ctx: ControllerContext, partitions: Iterable[LeaderAndIsrPartition]):
    live = ctx.live_brokers
    leaders = sorted(b for b in {p.leader for p in partitions} if b in live)
    return tuple(live[b] for b in leaders)


def _stop_epoch(ctx: ControllerContext, tp: TopicPartition, delete: bool) -> int:
    if delete and ctx.is_queued_for_deletion(tp.topic):
        return EPOCH_DURING_DELETE
    state = ctx.leadership.get(tp)
    return state.leader_epoch if state else NO_EPOCH
