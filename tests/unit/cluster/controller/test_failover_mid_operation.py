"""The controller killed (kill -9) between any two of its ZooKeeper writes
during an admin operation, and a new controller loading what is left:
every operation ends as the client was told, or, when the client got no
answer, either done or not done, never half-way (a partition stuck moving,
a cancelled move that starts again, a topic with partitions nobody leads).

Each test runs the operation once per write it makes, the controller dying
before the first, the second, ... write (ZkModel), then has a new controller
take over (load_context + on_controller_failover, as failover.py) and the
followers catch up, and checks where every partition ended. A request
takes effect for a new controller once its topic znode holds it
(admin_requests.py): from that write on, the new controller must finish it.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from kafkactl.cluster.controller import admin_requests as ar
from kafkactl.cluster.controller.decisions import (
    load_context, on_broker_change, on_controller_failover, on_delete_topics, on_isr_change,
    on_partition_reassignment, on_stop_replica_response, on_topic_change,
)
from kafkactl.cluster.controller.execution import execute
from kafkactl.cluster.controller.invariants import check_invariants
from kafkactl.cluster.controller.model import NO_LEADER, LeaderAndIsr, ReplicaAssignment, StopReplica, TopicPartition
from kafkactl.cluster.controller.reassignment import start_reassignments
from kafkactl.cluster.controller.testing import (
    EPOCH, ControllerKilled, FakeZk, Recorder, ZkModel, make_context, registration, run_chain, state,
)
from kafkactl.cluster.zk.codecs import TopicAssignment

T0 = TopicPartition("t", 0)
ALL = (1, 2, 3, 4, 5, 6)


# --- killing the controller at every write, and the new one taking over

def run(ctx, decision, model):
    """Carry out a decision; StopReplica(delete) answered at once, every replica deleted."""
    recorder = Recorder()
    ctx, _ = execute(ctx, decision, model, recorder)
    for request in recorder.requests:
        if isinstance(request, StopReplica) and request.delete and request.broker_id in ctx.live_brokers:
            errors = {p.topic_partition: 0 for p in request.partitions}
            ctx = run(ctx, on_stop_replica_response(ctx, request.broker_id, request.broker_epoch, errors), model)
    return ctx


def kill_at_every_write(ctx, operation):
    """(model, answered) for the controller dying before each write the
    operation makes, and last for it living (answered True). `operation(ctx,
    model)` carries out the whole operation, as the event thread would."""
    cuts = 0
    while True:
        model = ZkModel(ctx, kill_after=cuts)
        try:
            operation(ctx, model)
        except ControllerKilled:
            yield model, False
            cuts += 1
            continue
        yield model, True
        return


def take_over(model, brokers=ALL, epoch=EPOCH + 1):
    """A new controller: loads ZooKeeper as the dead one left it, then its
    failover; `brokers`: those still registered."""
    model.kill_after = None
    ctx = load_context(model.snapshot(epoch, brokers), controller_id=min(brokers))
    return run(ctx, on_controller_failover(ctx), model)


def catch_up(ctx, model, rounds=6):
    """Every live replica catches up: its leader adds it to the ISR and
    announces it, the controller reads the states (on_isr_change)."""
    for _ in range(rounds):
        grown = {}
        for tp, current in model.states.items():
            if tp not in ctx.assignments or current.leader == NO_LEADER:
                continue
            isr = current.isr + [r for r in ctx.replicas(tp) if ctx.is_broker_live(r) and r not in current.isr]
            if isr != current.isr:
                grown[tp] = replace(current, isr=isr, zk_version=current.zk_version + 1)
        if not grown:
            return ctx
        model.states.update(grown)
        ctx = run(ctx, on_isr_change(ctx, grown), model)
    return ctx


def come_back(ctx, model, broker_id):
    """The killed broker starts again (a new broker epoch) and registers."""
    model.brokers[broker_id] = registration(broker_id, broker_epoch=500 + broker_id)
    return run(ctx, on_broker_change(ctx, dict(model.brokers)), model)


def settled(ctx, model, tp):
    """Where `tp` ended; it must not be moving, neither in the controller
    nor in ZooKeeper, and be led by one of its replicas."""
    check_invariants(ctx)
    replicas, adding, removing = model.entry(tp)
    assert (adding, removing) == ((), ()), f"{tp} still moving in ZooKeeper: {model.entry(tp)}"
    assert tp not in ctx.reassignments, f"{tp} still moving: {ctx.reassignments[tp]}"
    assert tp not in (model.reassign or {}), f"{tp} still in /admin/reassign_partitions: {model.reassign}"
    assert ctx.assignments[tp].replicas == replicas
    leader = model.states[tp]
    assert leader.leader in replicas and set(leader.isr) <= set(replicas), (tp, leader, replicas)
    return replicas


# --- reassignments

def original():
    """t-0 on [1, 2, 3], led by 1, every broker of ALL registered."""
    return make_context(live=ALL, topics={"t": {0: [1, 2, 3]}}, states={("t", 0): state(1, [1, 2, 3])})


def moving(target=(3, 4, 5), through_admin_znode=False, leader=1, isr=(1, 2, 3, 4)):
    """t-0 moving from [1, 2, 3] to `target`; by default broker 4 caught up
    (in the ISR), broker 5 not yet. Started through the API, or through
    /admin/reassign_partitions (which then still lists it)."""
    ctx = original()
    if through_admin_znode:
        ctx, _ = run_chain(ctx, on_partition_reassignment(ctx, {T0: list(target)}))
    else:
        ctx, _ = run_chain(ctx, start_reassignments(ctx, {T0: target}, admin=None))
    current = ctx.leadership[T0]
    ctx.leadership[T0] = replace(current, leader=leader, isr=list(isr), zk_version=current.zk_version + 1)
    assert ctx.reassignments[T0].target == target and (T0 in ctx.reassign_admin) == through_admin_znode
    return ctx


def api_request(targets):
    """AlterPartitionReassignments as the controller's event carries it out."""
    def operation(ctx, model):
        results, starts, retargets = ar.reassignment_requests(ctx, targets)
        assert all(code == 0 for code, _ in results.values()), results
        after = run(ctx, ar.alter_reassignments(ctx, results, starts, retargets), model)
        answers = ar.reassignment_results(after, results, starts, retargets)
        assert all(code == 0 for code, _ in answers.values()), answers
        return after
    return operation


def check_every_cut(ctx, targets, before, after, dead=None):
    """Kill the controller at every write of the request; `before`: where t-0
    must end when the request did not take effect, `after`: when it did.
    `dead`: the killed controller's broker, which dies with it and comes back
    only after the new controller took over. Returns the cuts' outcomes."""
    wanted = targets[T0]
    current = ctx.assignments[T0]
    wanted = current.original if wanted is None else tuple(wanted)
    taken = {ReplicaAssignment.from_original_and_target(current.original, wanted), ReplicaAssignment(wanted)}
    outcomes = []
    for model, answered in kill_at_every_write(ctx, api_request(targets)):
        entry, cut = model.entry(T0), model.written
        took = ReplicaAssignment(*entry) in taken
        assert took or not answered, "answered before the topic znode held the request"
        alive = tuple(b for b in ALL if b != dead)
        new = catch_up(take_over(model, alive), model)
        if dead is not None:
            new = catch_up(come_back(new, model, dead), model)
        ended = settled(new, model, T0)
        expected = after if took else before
        assert ended == expected, (f"killed after {cut} writes (topic znode {entry}, "
                                   f"{'taken' if took else 'not taken'}): t-0 ended on {ended}, not {expected}")
        outcomes.append((answered, took))
    return outcomes


@pytest.mark.parametrize("dead", [None, 1, 4])
def test_a_move_started_through_the_api_is_finished_by_the_new_controller(dead):
    outcomes = check_every_cut(original(), {T0: (2, 3, 4)}, before=(1, 2, 3), after=(2, 3, 4), dead=dead)
    # Both kinds of cut happen: before the topic znode took it, and after
    # (the move going on under the new controller) without an answer.
    assert (False, False) in outcomes and (False, True) in outcomes and outcomes[-1] == (True, True)


@pytest.mark.parametrize("through_admin_znode", [False, True])
@pytest.mark.parametrize("dead", [None, 2, 5])
def test_a_cancel_once_taken_is_never_undone_by_a_new_controller(through_admin_znode, dead):
    # The cancelled move's original replicas, in the order Kafka's
    # originReplicas gives them (the full set less the adding replicas).
    ctx = moving(through_admin_znode=through_admin_znode)
    assert ctx.assignments[T0].original == (3, 1, 2)
    outcomes = check_every_cut(ctx, {T0: None}, before=(3, 4, 5), after=(3, 1, 2), dead=dead)
    assert (False, False) in outcomes and (False, True) in outcomes and outcomes[-1] == (True, True)


def test_a_cancel_waiting_for_a_lagging_original_replica_survives_a_new_controller():
    # Broker 2 fell behind: the cancel cannot complete at once. The topic
    # znode is back on the original replicas (not moving) while the dead
    # controller still waited in memory; the new one has nothing to wait for.
    ctx = moving(isr=(1, 3, 4))
    outcomes = check_every_cut(ctx, {T0: None}, before=(3, 4, 5), after=(3, 1, 2))
    assert outcomes[-1] == (True, True)


@pytest.mark.parametrize("leader", [1, 4])
@pytest.mark.parametrize("through_admin_znode", [False, True])
def test_a_new_target_once_taken_is_the_one_the_new_controller_finishes(through_admin_znode, leader):
    # 4 (in the ISR, leading or not) is dropped by the new target: it leaves
    # the ISR (and the leadership) first, and only then does the topic znode
    # take the new target.
    isr = (1, 2, 3, 4) if leader == 1 else (4, 1, 2, 3)
    ctx = moving(through_admin_znode=through_admin_znode, leader=leader, isr=isr)
    outcomes = check_every_cut(ctx, {T0: (3, 5, 6)}, before=(3, 4, 5), after=(3, 5, 6))
    assert (False, False) in outcomes and (False, True) in outcomes and outcomes[-1] == (True, True)


def test_a_move_through_the_admin_znode_killed_anywhere_is_finished():
    ctx = original()

    def operation(ctx, model):
        model.reassign = {T0: (2, 3, 4)}          # the tool's write, read by the controller
        ctx = run(ctx, on_partition_reassignment(ctx, {T0: [2, 3, 4]}), model)
        return catch_up(ctx, model)

    for model, _ in kill_at_every_write(ctx, operation):
        new = catch_up(take_over(model), model)
        assert settled(new, model, T0) == (2, 3, 4) and model.reassign is None


class RacingLeader(ZkModel):
    """ZooKeeper with t-0's leader adding `joining` to the ISR before the
    controller's write number `at`, as Kafka's ZooKeeper-era leader does:
    only if `joining` is a replica in the last LeaderAndIsr it got, with a
    write conditional on the zk version it knows, and only while the leader
    epoch is the one it knows (a newer one makes it stop acting as leader)."""

    def __init__(self, ctx, at, joining):
        super().__init__(ctx)
        current = ctx.leadership[T0]
        self.at, self.joining = at, joining
        self.view = (current.leader_epoch, current.zk_version, ctx.assignments[T0].replicas)
        self.raced = False

    def apply_writes(self, writes, controller_epoch_zk_version):
        results = []
        for write in writes:
            if self.written == self.at:
                self.leader_writes()
            results += super().apply_writes([write], controller_epoch_zk_version)
        return results

    def leader_writes(self):
        current = self.states[T0]
        leader_epoch, zk_version, replicas = self.view
        if self.joining in current.isr or self.joining not in replicas:
            return
        if (current.leader_epoch, current.zk_version) != (leader_epoch, zk_version):
            return                            # its conditional write fails
        self.states[T0] = replace(current, isr=[*current.isr, self.joining], zk_version=zk_version + 1)
        self.view = (leader_epoch, zk_version + 1, replicas)
        self.raced = True

    def receive(self, requests):
        """The controller's requests reach the brokers at once."""
        for request in requests:
            if not isinstance(request, LeaderAndIsr):
                continue
            for p in request.partitions:
                if p.topic_partition == T0 and request.broker_id == p.leader and p.leader_epoch > self.view[0]:
                    self.view = (p.leader_epoch, p.zk_version, p.replicas)


@pytest.mark.parametrize("isr, targets, lands", [
    # A cancel; 4 (adding) catches up meanwhile: its leader's write lands
    # before the controller's first (which then reads it and drops 4 again).
    ((1, 2, 3), {T0: None}, True),
    # A new target without 4, which is in the ISR: once dropped from it, the
    # leader knows it is no replica any more, and never adds it back.
    ((1, 2, 3, 4), {T0: (3, 5, 6)}, False),
])
def test_a_leader_adding_a_replica_being_dropped_never_puts_it_in_the_isr_outside_the_replicas(isr, targets, lands):
    # The topic znode drops a replica only once the partition state (one
    # leader epoch later) no longer counts it and its leader was told the
    # new replica set: otherwise the leader could add it back to the ISR in
    # between, and ZooKeeper would hold an ISR outside the replicas, which
    # halts this controller and every new one (its invariants).
    ctx = moving(isr=isr)
    results, starts, retargets = ar.reassignment_requests(ctx, targets)
    raced = 0
    for at in range(8):
        zk = RacingLeader(ctx, at, joining=4)
        after, _ = execute(ctx, ar.alter_reassignments(ctx, results, starts, retargets), zk, zk.receive,
                           on_outcome=lambda c, waiting: check_invariants(c, None, waiting))
        replicas = zk.entry(T0)[0]
        assert set(zk.states[T0].isr) <= set(replicas), (at, zk.states[T0], replicas)
        assert ar.reassignment_results(after, results, starts, retargets)[T0] == ar.NONE
        raced += zk.raced
    assert bool(raced) == lands


def test_a_change_refused_by_a_shrinking_isr_is_not_answered_as_done():
    # Broker 3 leads a move [1, 2] -> [3] with ISR [3, 1]: a cancel makes 1
    # lead; the leader shrinks its ISR to [3] before that write lands, and
    # on the fresh state nobody else can lead: nothing changed, so the
    # answer must not be NONE.
    ctx = make_context(live=(1, 2, 3), topics={"t": {0: [1, 2]}}, states={("t", 0): state(1, [1, 2])})
    ctx, _ = run_chain(ctx, start_reassignments(ctx, {T0: (3,)}, admin=None))
    ctx.leadership[T0] = state(3, [3, 1], leader_epoch=6, zk_version=12)
    results, starts, retargets = ar.reassignment_requests(ctx, {T0: None})
    assert results[T0] == ar.NONE and retargets == {T0: (1, 2)}
    zk = FakeZk(ctx)
    zk.race[T0] = state(3, [3], leader_epoch=6, zk_version=13)
    after, _ = execute(ctx, ar.alter_reassignments(ctx, results, starts, retargets), zk, Recorder())
    assert after.reassignments[T0].target == (3,)
    code, message = ar.reassignment_results(after, results, starts, retargets)[T0]
    assert code == ar.ErrorCode.invalid_replica_assignment and "removes the leader 3" in message


def test_a_move_is_refused_for_a_partition_without_a_leader_yet():
    ctx = make_context(topics={"t": {0: [1, 2]}}, states={("t", 0): None})
    results, starts, _ = ar.reassignment_requests(ctx, {T0: (2, 3)})
    assert results[T0][0] == ar.ErrorCode.leader_not_available and starts == {}


# --- topics, partitions, elections

def created(ctx, model, partitions):
    """Every partition of t exists, led by a registered replica."""
    check_invariants(ctx)
    for p in partitions:
        tp = TopicPartition("t", p)
        assert tp in ctx.assignments and ctx.has_live_leader(tp), (tp, model.states.get(tp))
        assert model.states[tp].leader == ctx.leadership[tp].leader


@pytest.mark.parametrize("dead", [None, 1])
def test_a_topic_whose_znode_is_written_gets_every_leader_whenever_the_controller_dies(dead):
    # CreateTopics writes the topic znode (with its config, one multi); the
    # controller then creates each partition's state. Killed anywhere in
    # between, the new controller finds the partitions without a state and
    # elects them (failover.py: New partitions).
    ctx = make_context(live=(1, 2, 3), topics={})
    znode = TopicAssignment({p: [1 + (p + i) % 3 for i in range(3)] for p in range(4)}, topic_id="id-t")

    def operation(ctx, model):
        model.topics["t"] = znode            # the handler's multi, before any controller write
        return run(ctx, on_topic_change(ctx, {"t": znode}), model)

    cuts = 0
    for model, _ in kill_at_every_write(ctx, operation):
        alive = tuple(b for b in (1, 2, 3) if b != dead)
        new = take_over(model, alive)
        created(new, model, range(4))
        cuts += 1
    assert cuts == 5


def test_new_partitions_get_leaders_whenever_the_controller_dies():
    # CreatePartitions: the topic znode gains partitions 2 and 3.
    ctx = make_context(topics={"t": {0: [1, 2, 3], 1: [2, 3, 1]}})
    grown = TopicAssignment({0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2], 3: [1, 2, 3]}, topic_id="id-t")

    def operation(ctx, model):
        model.topics["t"] = grown
        return run(ctx, on_topic_change(ctx, {"t": grown}), model)

    for model, _ in kill_at_every_write(ctx, operation):
        created(take_over(model, (1, 2, 3)), model, range(4))


def test_a_deletion_killed_anywhere_is_finished_by_the_new_controller():
    ctx = make_context(topics={"t": {0: [1, 2, 3], 1: [2, 3, 1]}})

    def operation(ctx, model):
        model.deleting.add("t")              # DeleteTopics marks it; the controller does the rest
        return run(ctx, on_delete_topics(ctx, ["t"]), model)

    for model, _ in kill_at_every_write(ctx, operation):
        new = take_over(model, (1, 2, 3))
        assert "t" not in model.topics and not model.deleting and "t" not in new.topic_ids
        assert not any(tp.topic == "t" for tp in model.states)


def test_a_preferred_election_killed_half_way_leaves_every_partition_led():
    # ElectLeaders is not written anywhere (as in Kafka): what the dead
    # controller elected stays, the rest keep their leaders; the client got
    # no answer and asks again.
    topics = {"t": {p: [1, 2, 3] for p in range(3)}}
    ctx = make_context(topics=topics, states={("t", p): state(2, [2, 1, 3]) for p in range(3)})
    tps = frozenset(TopicPartition("t", p) for p in range(3))

    def operation(ctx, model):
        return run(ctx, ar.elect(ctx, tps, unclean=False), model)

    for model, answered in kill_at_every_write(ctx, operation):
        leaders = {tp: model.states[tp].leader for tp in tps}
        assert sum(leader == 1 for leader in leaders.values()) == model.written
        new = take_over(model, (1, 2, 3))
        check_invariants(new)
        assert {tp: new.leadership[tp].leader for tp in tps} == leaders
        results = ar.election_results(new, sorted(tps), unclean=False)
        assert all(results[tp][0] == 0 for tp in tps if leaders[tp] == 1)
