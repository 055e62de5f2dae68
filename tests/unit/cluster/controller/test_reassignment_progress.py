"""A reassignment completes once its target is in the ISR, whichever way the
controller learned that ISR (issue 12.2: reassignments stayed pending with
every target replica in the ISR)."""

from dataclasses import replace

from kafkactl.cluster.controller.decisions import on_isr_change, on_partition_reassignment
from kafkactl.cluster.controller.execution import adopt_reread_states
from kafkactl.cluster.controller.model import TopicPartition
from kafkactl.cluster.controller.testing import make_context, run_chain, state

T0 = TopicPartition("t", 0)
NOTIFICATION = "/isr_change_notification/isr_change_0000000007"


def moving():
    """t-0 moving from [1, 2, 3] to [2, 3, 4], waiting for 4 to join the ISR."""
    ctx = make_context(live=(1, 2, 3, 4), topics={"t": {0: [1, 2, 3]}},
                       states={("t", 0): state(1, [1, 2, 3], zk_version=10)})
    ctx, _ = run_chain(ctx, on_partition_reassignment(ctx, {T0: [2, 3, 4]}))
    assert T0 in ctx.reassignments and ctx.leadership[T0].zk_version == 11
    return ctx


def test_an_isr_already_adopted_from_a_reread_still_completes_the_reassignment():
    # The leader added 4 (version 12); another decision's conditional write of
    # t-0 lost to it, read it back and adopted it. The notification of that
    # ISR change then reads version 12 again: not newer than the context, but
    # the reassignment waiting for it never looked at it.
    ctx = moving()
    caught_up = replace(ctx.leadership[T0], isr=[1, 2, 3, 4], zk_version=12)
    ctx = adopt_reread_states(ctx, {T0}, {T0: caught_up})
    ctx, _ = run_chain(ctx, on_isr_change(ctx, {T0: caught_up}, [NOTIFICATION]))
    assert not ctx.reassignments and ctx.assignments[T0].replicas == (2, 3, 4)


def test_a_state_read_without_news_leaves_a_waiting_reassignment_waiting():
    ctx = moving()
    ctx, made = run_chain(ctx, on_isr_change(ctx, {T0: ctx.leadership[T0]}))
    assert T0 in ctx.reassignments and not any(d.zk_writes for d in made)

