"""ISR change notifications: a leader changed its ISR in ZooKeeper itself
and announced it under /isr_change_notification. The I/O layer reads the
listed partitions' states again; the controller takes every state newer than
its own, tells all brokers (UpdateMetadata), takes unregistered brokers out
of those ISRs (a leader may add a follower that is still running after its
registration went: the controller alone knows liveness), then deletes the
notifications and checks whether a reassignment of any partition read can
complete."""

from __future__ import annotations

from functools import partial
from typing import Iterable, Mapping

from kafkactl.cluster.controller.builder import DecisionBuilder, chain
from kafkactl.cluster.controller.changes import delete_notifications, redo_remove_dead_from_isr, remove_dead_from_isr
from kafkactl.cluster.controller.context import ControllerContext
from kafkactl.cluster.controller.model import Decision, TopicPartition
from kafkactl.cluster.controller.reassignment import reassignment_progress
from kafkactl.cluster.zk.codecs import PartitionState


def on_isr_change(ctx: ControllerContext, states: Mapping[TopicPartition, PartitionState | None],
                  notification_paths: Iterable[str] = ()) -> Decision:
    b = DecisionBuilder(ctx)
    changed = refresh_partition_states(b.ctx, states)
    if changed:                # as Kafka: nothing new, no UpdateMetadata to every broker
        b.batch.update_metadata(b.ctx.live_brokers, changed)
    remove_dead_from_isr(b, changed)
    # Every partition read, not only those newer than the context: the
    # context may have taken the ISR change already (a conditional write of
    # another decision lost to it and read it back), and a reassignment
    # waiting for it would then never look at it again.
    waiting = [tp for tp in sorted(states) if b.ctx.is_being_reassigned(tp)]
    # Conditional state writes and the notifications' deletion go in separate
    # decisions (builder.py), the deletion after the writes and their retries.
    then = chain(partial(delete_notifications, paths=tuple(sorted(notification_paths))),
                 partial(reassignment_progress, tps=waiting) if waiting else None)
    return b.decision(retry=redo_remove_dead_from_isr, then=then)


def refresh_partition_states(ctx: ControllerContext,
                             states: Mapping[TopicPartition, PartitionState | None]) -> list[TopicPartition]:
    """Take the states read from ZooKeeper that are newer than ours (a higher
    zk version); return the partitions that changed. Only partitions with a
    state already change: the controller creates and deletes state znodes,
    leaders only update them."""
    changed = []
    for tp, state in sorted(states.items()):
        current = ctx.leadership.get(tp)
        if state is None or current is None:
            continue
        if state.zk_version > current.zk_version:
            ctx.leadership[tp] = state
            changed.append(tp)
    return changed
