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


# --- the controller watches the state znode of every partition being moved

class StateZnodes:
    """kazoo's reads as the controller makes them, over {path: (data, version)};
    watchers kept per path in sets and called with the event on a change."""

    def __init__(self, znodes):
        self.znodes = dict(znodes)
        self.watchers = {}

    def get_async(self, path, watch=None):
        from types import SimpleNamespace

        if watch is not None:
            self.watchers.setdefault(path, set()).add(watch)
        data, version = self.znodes[path]
        return SimpleNamespace(get=lambda timeout=None: (data, SimpleNamespace(version=version)))

    def write(self, path, data, version):
        from types import SimpleNamespace

        self.znodes[path] = (data, version)
        for watcher in self.watchers.pop(path, set()):
            watcher(SimpleNamespace(path=path))


def run_events(controller):
    controller.events.process_queued()


def test_a_moving_partition_completes_when_its_state_znode_changes_without_a_notification():
    from kafkactl.cluster.controller.context import ControllerConfig
    from kafkactl.cluster.controller.controller import Controller
    from kafkactl.cluster.zk import codecs, layout

    ctx = moving()
    path = layout.partition_state("t", 0)
    encoded = lambda s: codecs.encode_partition_state(s)  # noqa: E731
    client = StateZnodes({path: (encoded(ctx.leadership[T0]), 11)})
    controller = Controller(1, client, ControllerConfig())
    controller.context = ctx
    decisions = []

    def run(decide, check_all=False):
        decision = decide(controller.context)
        decisions.append(decision)
        controller.context, _ = run_chain(controller.context, decision)
    controller._run = run

    controller.state_watches.after_step(controller.context)        # what every step ends with
    run_events(controller)
    assert path in client.watchers and T0 in controller.context.reassignments
    # The leader adds 4 and dies before writing its ISR change notification.
    client.write(path, encoded(replace(ctx.leadership[T0], isr=[1, 2, 3, 4])), 12)
    run_events(controller)
    assert not controller.context.reassignments
    assert controller.context.assignments[T0].replicas == (2, 3, 4)


def test_state_changes_of_a_whole_reassignment_are_read_in_one_event():
    from kafkactl.cluster.controller.context import ControllerConfig
    from kafkactl.cluster.controller.controller import Controller
    from kafkactl.cluster.zk import codecs, layout

    t1 = TopicPartition("t", 1)
    ctx = make_context(live=(1, 2, 3, 4), topics={"t": {0: [1, 2, 3], 1: [1, 2, 3]}},
                       states={("t", 0): state(1, [1, 2, 3], zk_version=10), ("t", 1): state(1, [1, 2, 3])})
    ctx, _ = run_chain(ctx, on_partition_reassignment(ctx, {T0: [2, 3, 4], t1: [2, 3, 4]}))
    paths = {tp: layout.partition_state("t", tp.partition) for tp in (T0, t1)}
    client = StateZnodes({paths[tp]: (codecs.encode_partition_state(ctx.leadership[tp]), ctx.leadership[tp].zk_version)
                          for tp in paths})
    controller = Controller(1, client, ControllerConfig())
    controller.context = ctx
    controller._run = lambda decide, check_all=False: setattr(
        controller, "context", run_chain(controller.context, decide(controller.context))[0])
    controller.state_watches.after_step(controller.context)
    run_events(controller)
    for tp, path in paths.items():
        current = controller.context.leadership[tp]
        client.write(path, codecs.encode_partition_state(replace(current, isr=[1, 2, 3, 4])),
                     current.zk_version + 1)
    assert len(controller.events.queued()) == 1
    run_events(controller)
    assert not controller.context.reassignments
