"""The context's per-broker replica index (ReplicaAssignments): it follows
every way of changing the assignments, copies share it until one side
changes, and the invariant checks catch an index that went wrong."""

import pytest

from kafkactl.cluster.controller.context import ReplicaAssignments
from kafkactl.cluster.controller.invariants import check_invariants
from kafkactl.cluster.controller.model import ReplicaAssignment, TopicPartition
from kafkactl.cluster.controller.simulation import Simulation
from kafkactl.cluster.controller.testing import make_context
from kafkactl.cluster.invariant import InvariantViolation

A, B, C = TopicPartition("a", 0), TopicPartition("b", 0), TopicPartition("c", 0)


def recomputed(assignments: dict) -> dict[int, set[TopicPartition]]:
    index: dict[int, set[TopicPartition]] = {}
    for tp, assignment in assignments.items():
        for broker_id in assignment.replicas:
            index.setdefault(broker_id, set()).add(tp)
    return index


def index_of(assignments: ReplicaAssignments) -> dict[int, set[TopicPartition]]:
    return {b: set(assignments.partitions_on(b)) for b in assignments.brokers()}


def test_every_dict_mutation_keeps_the_index():
    assignments = ReplicaAssignments({A: ReplicaAssignment((1, 2))})
    assignments[B] = ReplicaAssignment((2, 3))
    assignments.update({C: ReplicaAssignment((3, 4))})
    assignments |= {A: ReplicaAssignment((1, 5), adding=(5,))}     # replaced: no longer on 2
    assert index_of(assignments) == recomputed(assignments) == {1: {A}, 2: {B}, 3: {B, C}, 4: {C}, 5: {A}}
    del assignments[B]
    assert assignments.pop(C).replicas == (3, 4)
    assert assignments.pop(C, None) is None
    assignments.setdefault(B, ReplicaAssignment((6,)))
    assignments.setdefault(B, ReplicaAssignment((7,)))              # present: unchanged
    assert index_of(assignments) == recomputed(assignments) == {1: {A}, 5: {A}, 6: {B}}
    assert assignments.partitions_on(2) == set() and 2 not in assignments.brokers()
    tp, _ = assignments.popitem()
    assert tp not in assignments and index_of(assignments) == recomputed(assignments)
    with pytest.raises(KeyError):
        del assignments[C]
    with pytest.raises(KeyError):
        assignments.pop(C)
    assignments.clear()
    assert index_of(assignments) == {} and len(assignments) == 0


def test_copies_share_the_index_until_one_side_changes():
    original = ReplicaAssignments({A: ReplicaAssignment((1, 2)), B: ReplicaAssignment((2, 3))})
    copy = original.copy()
    assert isinstance(copy, ReplicaAssignments)
    copy[C] = ReplicaAssignment((2,))
    del copy[A]
    original[B] = ReplicaAssignment((3, 4))
    assert index_of(original) == recomputed(original) == {1: {A}, 2: {A}, 3: {B}, 4: {B}}
    assert index_of(copy) == recomputed(copy) == {2: {B, C}, 3: {B}}
    again = copy.copy()
    again.pop(B)
    assert index_of(copy) == recomputed(copy) and index_of(again) == recomputed(again) == {2: {C}}


def test_the_context_keeps_it_through_copy_restore_and_plain_dicts():
    before = make_context(topics={"t": {0: [1, 2], 1: [2, 3]}})
    ctx = before.copy()
    t0 = TopicPartition("t", 0)
    ctx.assignments[t0] = ReplicaAssignment((3, 1))
    ctx.restore_partition(before, t0)
    assert index_of(ctx.assignments) == recomputed(ctx.assignments) == index_of(before.assignments)
    assert ctx.partitions_on_brokers([3]) == [TopicPartition("t", 1)]
    assert ctx.partitions_on_brokers([1, 2]) == [t0, TopicPartition("t", 1)]
    from kafkactl.cluster.controller.context import ControllerContext
    plain = ControllerContext(1, 1, 1, assignments={t0: ReplicaAssignment((4,))})
    assert plain.partitions_on_brokers([4]) == [t0]


@pytest.mark.parametrize("only_changed", [False, True])
def test_a_wrong_index_is_an_invariant_violation(only_changed):
    before = make_context(topics={"t": {0: [1, 2, 3]}})
    ctx = before.copy()
    t0 = TopicPartition("t", 0)
    ctx.assignments[t0] = ReplicaAssignment((1, 2, 3))       # a new object: the partition changed
    ctx.assignments._broker_set(2).discard(t0)               # what a bug in the index would do
    with pytest.raises(InvariantViolation, match="replica index"):
        check_invariants(ctx, before, only_changed=only_changed)


@pytest.mark.parametrize("seed", range(12))
def test_the_index_matches_the_assignments_through_a_simulation(seed):
    # The simulation creates, deletes and reassigns topics, fails over the
    # controller and restores partitions whose writes failed; its full checks
    # compare the index at every step, and here once more at the end.
    simulation = Simulation(seed)
    simulation.run(200)
    assignments = simulation.ctx.assignments
    assert isinstance(assignments, ReplicaAssignments)
    assert index_of(assignments) == recomputed(assignments)
