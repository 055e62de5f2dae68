"""The group states' transition table (cluster/coordinator/group_state.py),
with literal states."""

import pytest

from kafkactl.cluster.coordinator.group_state import GroupState, can_transition, transition
from kafkactl.cluster.invariant import InvariantViolation

S = GroupState
ALLOWED = {
    (S.EMPTY, S.PREPARING_REBALANCE), (S.STABLE, S.PREPARING_REBALANCE),
    (S.COMPLETING_REBALANCE, S.PREPARING_REBALANCE),
    (S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE),
    (S.COMPLETING_REBALANCE, S.STABLE),
    (S.PREPARING_REBALANCE, S.EMPTY),
    (S.EMPTY, S.DEAD), (S.PREPARING_REBALANCE, S.DEAD), (S.COMPLETING_REBALANCE, S.DEAD),
    (S.STABLE, S.DEAD), (S.DEAD, S.DEAD),
}


@pytest.mark.parametrize("current", list(S), ids=lambda s: s.value)
@pytest.mark.parametrize("target", list(S), ids=lambda s: s.value)
def test_exactly_kafkas_transitions_are_allowed(current, target):
    assert can_transition(current, target) == ((current, target) in ALLOWED)


def test_a_transition_outside_the_table_is_an_invariant_violation_naming_the_group():
    assert transition("g", S.COMPLETING_REBALANCE, S.STABLE) is S.STABLE
    with pytest.raises(InvariantViolation, match="group g: Empty -> Stable is not a valid transition"):
        transition("g", S.EMPTY, S.STABLE)
    with pytest.raises(InvariantViolation):
        transition("g", S.DEAD, S.PREPARING_REBALANCE)    # nothing comes back from Dead


def test_state_names_are_the_ones_kafka_answers_with():
    assert [s.value for s in S] == ["Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"]
