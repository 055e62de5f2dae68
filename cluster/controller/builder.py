"""DecisionBuilder: how every operation assembles its Decision.

An operation copies the context, changes the copy, records ZooKeeper writes
and broker requests as it goes, and returns `decision()`. Partition state
writes are mirrored into the copy at once (with the zk version the znode
will have), so later steps of the same operation see them and the requests
carry the new partition epoch.

Two rules keep failure handling simple (see execution.py):
- at most one state write per partition per decision: a failed write is
  undone by restoring that one partition, nothing else depends on it;
- a decision holds either conditional partition state writes or
  unconditional writes, never both. Work that must follow a state write
  (the final assignment of a reassignment, deleting a trigger znode) goes in
  a follow-up decision (`then`), which runs only after the state writes and
  their retries are done.
"""

from __future__ import annotations

from dataclasses import replace

from kafkactl.cluster.controller.context import ControllerContext
from kafkactl.cluster.controller.model import (
    NO_LEADER, PARTITION_STATE_WRITES, CreatePartitionState, Decision, Next, Redo, Reply, TopicPartition,
    UpdatePartitionState, ZkWrite,
)
from kafkactl.cluster.controller.requests import RequestBatch
from kafkactl.cluster.invariant import invariant
from kafkactl.cluster.zk.codecs import PartitionState


class DecisionBuilder:
    def __init__(self, context: ControllerContext) -> None:
        self.before = context
        self.ctx = context.copy()
        self.batch = RequestBatch()
        self._writes: list[ZkWrite] = []
        self._state_writes: set[TopicPartition] = set()
        self._replies: list[Reply] = []

    def next_state(self, tp: TopicPartition, leader: int, isr, leader_recovery_state: int) -> PartitionState:
        """The partition's next leadership: one leader epoch later, decided by us."""
        current = self.ctx.leadership[tp]
        return PartitionState(
            leader=leader,
            leader_epoch=current.leader_epoch + 1,
            isr=list(isr),
            controller_epoch=self.ctx.controller_epoch,
            leader_recovery_state=leader_recovery_state,
        )

    def write_next_state(self, tp: TopicPartition, leader: int, isr, leader_recovery_state: int) -> PartitionState:
        """write_partition_state(tp, next_state(...)) in one step: the state
        object is built once, with the zk version it will have (an election
        of every partition of a failover comes through here).

        With a leader, the ISR written names registered brokers only: a
        leader may have added a follower that still runs after losing its
        registration (its metadata did not say so yet), and a state the
        controller writes from a re-read (a leader epoch bump) would
        otherwise keep it. Leaderless, the last ISR is kept as it is."""
        if tp in self._state_writes:
            invariant(False, f"partition {tp}: two state writes in one decision")
        self._state_writes.add(tp)
        current = self.ctx.leadership[tp]
        if leader != NO_LEADER:
            live = self.ctx.live_brokers
            isr = [r for r in isr if r in live] or list(isr)
        written = PartitionState(leader, current.leader_epoch + 1, list(isr), self.ctx.controller_epoch,
                                 leader_recovery_state, current.zk_version + 1)
        self._writes.append(UpdatePartitionState(tp.topic, tp.partition, written, current.zk_version))
        self.ctx.leadership[tp] = written
        return written

    def write_partition_state(self, tp: TopicPartition, state: PartitionState) -> PartitionState:
        """Create or conditionally update the state znode; mirror it into the context."""
        if tp in self._state_writes:
            invariant(False, f"partition {tp}: two state writes in one decision")
        self._state_writes.add(tp)
        current = self.ctx.leadership.get(tp)
        # Built directly rather than with dataclasses.replace, which costs 5x as
        # much and runs once per partition of a failover.
        if current is None:
            written = PartitionState(state.leader, state.leader_epoch, state.isr, state.controller_epoch,
                                     state.leader_recovery_state, 0)
            self._writes.append(CreatePartitionState(tp.topic, tp.partition, written))
        else:
            if state.leader_epoch < current.leader_epoch:
                invariant(False, f"partition {tp}: leader epoch {current.leader_epoch} -> {state.leader_epoch}")
            written = PartitionState(state.leader, state.leader_epoch, state.isr, state.controller_epoch,
                                     state.leader_recovery_state, current.zk_version + 1)
            self._writes.append(UpdatePartitionState(tp.topic, tp.partition, written, current.zk_version))
        self.ctx.leadership[tp] = written
        return written

    def write(self, write: ZkWrite) -> None:
        invariant(not isinstance(write, PARTITION_STATE_WRITES), "use write_partition_state")
        self._writes.append(write)

    def reply(self, reply: Reply) -> None:
        self._replies.append(reply)

    @property
    def has_state_writes(self) -> bool:
        return bool(self._state_writes)

    def writes_state_of(self, tp: TopicPartition) -> bool:
        """Whether this decision already writes the partition's state."""
        return tp in self._state_writes

    def decision(self, retry: Redo | None = None, then: Next | None = None) -> Decision:
        others = len(self._writes) - len(self._state_writes)
        invariant(not (self._state_writes and others),
                  "a decision mixes partition state writes with unconditional writes")
        invariant(not self._state_writes or retry is not None,
                  "partition state writes need a retry for when a conditional write fails")
        invariant(not (self._replies and self._writes), "replies go in a decision without writes")
        return Decision(
            context=self.ctx,
            zk_writes=tuple(self._writes),
            requests=self.batch.build(self.ctx),
            replies=tuple(self._replies),
            retry=retry if self._state_writes else None,
            then=then,
        )


def chain(*steps: Next | None) -> Next | None:
    """One follow-up that runs `steps` in order, each after the previous one
    (and everything that one chained) is done."""
    remaining = [s for s in steps if s is not None]
    if not remaining:
        return None
    if len(remaining) == 1:
        return remaining[0]
    first, rest = remaining[0], remaining[1:]

    def run(ctx: ControllerContext) -> Decision:
        decision = first(ctx)
        return replace(decision, then=chain(decision.then, *rest))

    return run


def nothing(ctx: ControllerContext) -> Decision:
    return Decision(context=ctx)
