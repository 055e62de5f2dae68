"""Carrying out a Decision: the contract between the core and the I/O layer.

    decision = on_broker_change(ctx, registrations)        # any operation
    ctx, replies = execute(ctx, decision, zk, send)

`execute` is the whole loop; an I/O layer that wants its own loop does what
it does:

1. apply `decision.zk_writes`, each fenced by /controller_epoch, batched as
   it likes, and report one WriteResult per write (a multi that fails reports
   the failing write's error and NOT_APPLIED for the rest of its batch);
2. `outcome = apply_results(ctx, decision, results)` (ctx: the context the
   decision was made from); `ctx = outcome.context`; send
   `outcome.requests`, deliver `outcome.replies`;
3. if `outcome.reissue`: carry it out the same way (unconditional writes
   that were rolled back with another write of their multi);
4. if `outcome.reread`: read those partitions' state znodes, then
   `ctx = adopt_reread_states(ctx, outcome.reread, states)` and carry out
   `outcome.retry(ctx, outcome.reread)`;
5. then `decision.then(ctx)` if set, carried out the same way.

A conditional write that fails is never dropped: its partition is put back
as it was before the decision, its requests are held back (a LeaderAndIsr
for a state that is not in ZooKeeper would be a lie), its state is read
again and the operation's per-partition step runs again on the fresh state,
until it goes in or no longer needs to. CONTROLLER_MOVED raises
ControllerFencedError: nothing more may be sent.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Collection, Mapping, Protocol, Sequence

from kafkactl.cluster.controller.context import ControllerContext
from kafkactl.cluster.controller.model import (
    DELETES, PARTITION_STATE_WRITES, BrokerRequest, ControllerFencedError, Decision, LeaderAndIsr,
    Redo, Reply, RetryLimitExceeded, SetReassignments, StopReplica, TopicPartition, UpdateMetadata,
    UpdateTopicAssignment, WriteResult, ZkWrite,
)
from kafkactl.cluster.invariant import invariant
from kafkactl.cluster.zk.codecs import PartitionState


@dataclass(frozen=True, slots=True)
class Outcome:
    context: ControllerContext
    requests: tuple[BrokerRequest, ...] = ()
    replies: tuple[Reply, ...] = ()
    reread: frozenset[TopicPartition] = frozenset()
    retry: Redo | None = None
    reissue: Decision | None = None


def apply_results(before: ControllerContext, decision: Decision,
                  results: Sequence[WriteResult]) -> Outcome:
    invariant(len(results) == len(decision.zk_writes),
              f"{len(results)} results for {len(decision.zk_writes)} writes")
    if WriteResult.CONTROLLER_MOVED in results:
        raise ControllerFencedError("/controller_epoch moved: another controller was elected")
    # All OK, nearly always: counted in C rather than a call per write.
    failed = [] if list(results).count(WriteResult.OK) == len(results) else [
        w for w, r in zip(decision.zk_writes, results) if not _succeeded(w, r)]
    if not failed:
        return Outcome(decision.context, decision.requests, decision.replies)
    state_writes = [w for w in failed if isinstance(w, PARTITION_STATE_WRITES)]
    if len(state_writes) < len(failed):
        # Unconditional writes only fail when their multi rolled back; the
        # decision's context already assumes them, so just write them again.
        invariant(not state_writes, "a decision mixed conditional and unconditional writes")
        return Outcome(decision.context, reissue=replace(decision, zk_writes=tuple(failed), then=None))
    tps = frozenset(w.topic_partition for w in state_writes)
    context = decision.context.copy()
    for tp in tps:
        context.restore_partition(before, tp)
    return Outcome(context, hold_back(decision.requests, tps), decision.replies,
                   reread=tps, retry=decision.retry)


def _succeeded(write: ZkWrite, result: WriteResult) -> bool:
    if result is WriteResult.OK:
        return True
    # Deleting what is gone is done; rewriting a znode someone removed has
    # nothing left to do (the topic or the trigger no longer exists).
    if result is WriteResult.NO_NODE and isinstance(write, (*DELETES, UpdateTopicAssignment, SetReassignments)):
        return True
    return False


def hold_back(requests: Sequence[BrokerRequest], tps: Collection[TopicPartition]) -> tuple[BrokerRequest, ...]:
    """The requests without the entries of partitions whose writes failed."""
    kept = []
    for request in requests:
        partitions = tuple(p for p in request.partitions if p.topic_partition not in tps)
        if len(partitions) == len(request.partitions):
            kept.append(request)
        elif isinstance(request, LeaderAndIsr):
            if partitions:
                # No longer every partition of the broker: not a FULL request.
                kept.append(replace(request, partitions=partitions, full=False))
        elif isinstance(request, UpdateMetadata):
            kept.append(replace(request, partitions=partitions))   # still carries the live brokers
        elif isinstance(request, StopReplica) and partitions:
            kept.append(replace(request, partitions=partitions))
    return tuple(kept)


def adopt_reread_states(ctx: ControllerContext, tps: Collection[TopicPartition],
                        states: Mapping[TopicPartition, PartitionState | None]) -> ControllerContext:
    """The context with the partitions' states as just read (None: no znode)."""
    context = ctx.copy()
    for tp in tps:
        if tp not in context.assignments:
            continue
        state = states.get(tp)
        if state is None:
            context.leadership.pop(tp, None)
        else:
            context.leadership[tp] = state
    return context


class ZkPort(Protocol):
    def apply_writes(self, writes: Sequence[ZkWrite],
                     controller_epoch_zk_version: int) -> Sequence[WriteResult]: ...

    def read_partition_states(
        self, partitions: Collection[TopicPartition],
    ) -> Mapping[TopicPartition, PartitionState | None]: ...


MAX_ROUNDS = 10_000
Step = Callable[[ControllerContext], tuple[ControllerContext, Decision]]


def execute(context: ControllerContext, decision: Decision, zk: ZkPort,
            send: Callable[[Sequence[BrokerRequest]], None],
            on_outcome: Callable[[ControllerContext, frozenset[TopicPartition]], None] | None = None,
            max_rounds: int = MAX_ROUNDS) -> tuple[ControllerContext, list[Reply]]:
    """Carry out `decision` (made from `context`) with everything it leads to.
    `on_outcome` sees the context after every step (for invariant checks),
    with the partitions waiting for a retry: they are as they were before the
    step, which need not fit what the step changed around them."""
    replies: list[Reply] = []
    # A stack of steps; each makes its decision from the context of its turn
    # and says which context that was (a retry reads states first).
    pending: list[Step] = [lambda ctx: (ctx, decision)]
    rounds = 0
    while pending:
        rounds += 1
        if rounds > max_rounds:
            raise RetryLimitExceeded(f"decision still not done after {max_rounds} rounds")
        context, current = pending.pop()(context)
        results = ()
        if current.zk_writes:
            results = zk.apply_writes(current.zk_writes, context.controller_epoch_zk_version)
        outcome = apply_results(context, current, results)
        context = outcome.context
        if outcome.requests:
            send(outcome.requests)
        replies.extend(outcome.replies)
        if on_outcome is not None:
            on_outcome(context, outcome.reread)
        # Pushed last runs first: retries and reissues before `then`.
        if current.then is not None:
            pending.append(lambda ctx, then=current.then: (ctx, then(ctx)))
        if outcome.reissue is not None:
            pending.append(lambda ctx, d=outcome.reissue: (ctx, d))
        if outcome.reread:
            pending.append(_retry_step(zk, outcome.reread, outcome.retry))
    return context, replies


def _retry_step(zk: ZkPort, tps: frozenset[TopicPartition], retry: Redo) -> Step:
    def step(ctx: ControllerContext) -> tuple[ControllerContext, Decision]:
        fresh = adopt_reread_states(ctx, tps, zk.read_partition_states(tps))
        return fresh, retry(fresh, tps)
    return step
