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
        self._stop: dict[tuple[int, bool], set[TopicPartition]] = {}

    def leader_and_isr(self, broker_ids: Iterable[int], tp: TopicPartition,
                       new_replicas: Iterable[int] = ()) -> None:
        new = set(new_replicas)
        for broker_id in broker_ids:
            partitions = self._leader_and_isr.setdefault(broker_id, {})
            partitions[tp] = partitions.get(tp, False) or broker_id in new

    def mark_full(self, broker_id: int) -> None:
        """The LeaderAndIsr to this broker lists every partition it hosts."""
        self._leader_and_isr.setdefault(broker_id, {})
        self._full.add(broker_id)

    def update_metadata(self, broker_ids: Iterable[int], tps: Iterable[TopicPartition] = ()) -> None:
        tps = set(tps)
        for broker_id in broker_ids:
            self._metadata.setdefault(broker_id, set()).update(tps)

    def stop_replica(self, broker_id: int, tp: TopicPartition, delete: bool) -> None:
        self._stop.setdefault((broker_id, delete), set()).add(tp)

    def build(self, ctx: ControllerContext) -> tuple[BrokerRequest, ...]:
        # Every broker gets the same entry for a partition: build it once
        # (a failover sends 10,000s of entries to each broker).
        self._entries: dict[tuple, object] = {}
        requests: list[BrokerRequest] = []
        brokers = set(self._leader_and_isr) | set(self._metadata) | {b for b, _ in self._stop}
        for broker_id in sorted(brokers):
            if not ctx.is_broker_live(broker_id):
                continue
            requests.extend(self._for_broker(ctx, broker_id))
        return tuple(requests)

    def _for_broker(self, ctx: ControllerContext, broker_id: int) -> list[BrokerRequest]:
        out: list[BrokerRequest] = []
        epoch = ctx.broker_epoch(broker_id)
        if broker_id in self._leader_and_isr:
            wanted = self._leader_and_isr[broker_id]
            partitions = tuple(p for tp in sorted(wanted)
                               if (p := self._entry(leader_and_isr_partition, ctx, tp, wanted[tp])) is not None)
            if partitions or broker_id in self._full:
                out.append(LeaderAndIsr(broker_id, epoch, ctx.controller_id, ctx.controller_epoch,
                                        partitions, live_leaders(ctx, partitions),
                                        full=broker_id in self._full))
        if broker_id in self._metadata:
            partitions = tuple(p for tp in sorted(self._metadata[broker_id])
                               if (p := self._entry(update_metadata_partition, ctx, tp)) is not None)
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


    def _entry(self, make, ctx: ControllerContext, tp: TopicPartition, *flags):
        key = (make.__name__, tp, *flags)
        if key not in self._entries:
            self._entries[key] = make(ctx, tp, *flags)
        return self._entries[key]


def leader_and_isr_partition(ctx: ControllerContext, tp: TopicPartition,
                             is_new: bool = False) -> LeaderAndIsrPartition | None:
    state = ctx.leadership.get(tp)
    assignment = ctx.assignments.get(tp)
    if state is None or assignment is None:
        return None
    return LeaderAndIsrPartition(
        topic=tp.topic, partition=tp.partition, topic_id=ctx.topic_ids.get(tp.topic),
        controller_epoch=state.controller_epoch, leader=state.leader, leader_epoch=state.leader_epoch,
        isr=tuple(state.isr), zk_version=state.zk_version, replicas=assignment.replicas,
        adding_replicas=assignment.adding, removing_replicas=assignment.removing,
        is_new=is_new, leader_recovery_state=state.leader_recovery_state,
    )


def update_metadata_partition(ctx: ControllerContext, tp: TopicPartition) -> UpdateMetadataPartition | None:
    state = ctx.leadership.get(tp)
    assignment = ctx.assignments.get(tp)
    if state is None or assignment is None:
        return None
    # Brokers drop a partition from their metadata when its leader is
    # LEADER_DURING_DELETE, so clients stop using a topic being deleted.
    leader = LEADER_DURING_DELETE if ctx.is_queued_for_deletion(tp.topic) else state.leader
    return UpdateMetadataPartition(
        topic=tp.topic, partition=tp.partition, topic_id=ctx.topic_ids.get(tp.topic),
        controller_epoch=state.controller_epoch, leader=leader, leader_epoch=state.leader_epoch,
        isr=tuple(state.isr), zk_version=state.zk_version, replicas=assignment.replicas,
        offline_replicas=tuple(r for r in assignment.replicas if not ctx.is_broker_live(r)),
    )


def live_leaders(ctx: ControllerContext, partitions: Iterable[LeaderAndIsrPartition]):
    leaders = sorted({p.leader for p in partitions if ctx.is_broker_live(p.leader)})
    return tuple(ctx.live_brokers[b] for b in leaders)


def _stop_epoch(ctx: ControllerContext, tp: TopicPartition, delete: bool) -> int:
    if delete and ctx.is_queued_for_deletion(tp.topic):
        return EPOCH_DURING_DELETE
    state = ctx.leadership.get(tp)
    return state.leader_epoch if state else NO_EPOCH
