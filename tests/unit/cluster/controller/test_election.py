from kafkactl.cluster.controller.election import (
    Elected, NotElected, controlled_shutdown_election, offline_election, preferred_election,
    reassignment_election,
)
from kafkactl.cluster.controller.model import RECOVERED, RECOVERING


# --- offline

def test_offline_picks_first_live_assigned_replica_in_isr_in_assignment_order():
    result = offline_election([3, 1, 2], isr=[1, 2, 3], live={1, 2}, unclean_allowed=False)
    assert result == Elected(1, (1, 2), RECOVERED)


def test_offline_new_isr_is_the_live_part_of_the_old_in_its_order():
    result = offline_election([1, 2, 3, 4], isr=[4, 1, 3], live={3, 4}, unclean_allowed=False)
    assert result == Elected(3, (4, 3))


def test_offline_skips_live_replicas_outside_the_isr():
    assert offline_election([1, 2, 3], isr=[1, 3], live={2, 3}, unclean_allowed=False) == Elected(3, (3,))


def test_offline_without_live_isr_fails_when_unclean_is_disabled():
    result = offline_election([1, 2], isr=[1], live={2}, unclean_allowed=False)
    assert isinstance(result, NotElected) and "unclean" in result.reason


def test_offline_unclean_takes_first_live_assigned_replica_alone_and_marks_it_recovering():
    result = offline_election([3, 2, 1], isr=[3], live={1, 2}, unclean_allowed=True)
    assert result == Elected(2, (2,), RECOVERING)
    assert result.unclean


def test_offline_with_no_live_replica_fails_even_unclean():
    assert isinstance(offline_election([1, 2], isr=[1], live={3}, unclean_allowed=True), NotElected)


# --- reassignment

def test_reassignment_picks_first_target_replica_live_and_in_isr_and_keeps_isr():
    result = reassignment_election([4, 2, 3], isr=[1, 2, 3, 4], live={1, 2, 3})
    assert result == Elected(2, (1, 2, 3, 4))


def test_reassignment_fails_when_no_target_replica_qualifies():
    assert isinstance(reassignment_election([4, 5], isr=[1, 4], live={1, 5}), NotElected)


# --- preferred

def test_preferred_is_the_first_assigned_replica_when_live_and_in_isr():
    assert preferred_election([2, 1, 3], isr=[1, 2], live={1, 2, 3}) == Elected(2, (1, 2))


def test_preferred_fails_when_not_live_or_not_in_isr():
    assert "not live" in preferred_election([2, 1], isr=[1, 2], live={1}).reason
    assert "not in the ISR" in preferred_election([2, 1], isr=[1], live={1, 2}).reason
    assert isinstance(preferred_election([], isr=[1], live={1}), NotElected)


# --- controlled shutdown

def test_controlled_shutdown_moves_to_first_live_isr_replica_not_shutting_down():
    result = controlled_shutdown_election([1, 2, 3], isr=[1, 2, 3], live={1, 2, 3}, shutting_down={1, 2})
    assert result == Elected(3, (3,))


def test_controlled_shutdown_isr_loses_every_shutting_down_broker():
    result = controlled_shutdown_election([1, 2, 3], isr=[3, 1, 2], live={1, 2, 3}, shutting_down={1})
    assert result == Elected(2, (3, 2))


def test_controlled_shutdown_fails_without_another_live_isr_replica():
    assert isinstance(controlled_shutdown_election([1, 2], isr=[1], live={1, 2}, shutting_down={1}), NotElected)
    assert isinstance(controlled_shutdown_election([1, 2], isr=[1, 2], live={1}, shutting_down={1}), NotElected)
