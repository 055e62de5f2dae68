from dataclasses import replace

import pytest

from kafkactl.cluster.controller.invariants import check_invariants
from kafkactl.cluster.controller.model import RECOVERING, TopicPartition
from kafkactl.cluster.controller.testing import make_context, state
from kafkactl.cluster.invariant import InvariantViolation

T0 = TopicPartition("t", 0)


def broken(**changes):
    ctx = make_context()
    ctx.leadership[T0] = replace(ctx.leadership[T0], **changes)
    return ctx


def test_a_consistent_context_passes():
    check_invariants(make_context())


def test_leader_outside_the_isr_passes_only_while_recovering_from_an_unclean_election():
    with pytest.raises(InvariantViolation, match="not in the ISR"):
        check_invariants(make_context(states={("t", 0): state(2, [3])}))
    check_invariants(make_context(states={("t", 0): state(2, [3], recovery=RECOVERING)}))


@pytest.mark.parametrize("changes, message", [
    ({"leader": 2, "isr": [1, 3]}, "not in the ISR"),
    ({"isr": [1, 4]}, "not a subset"),
    ({"isr": []}, "empty"),
    ({"controller_epoch": 99}, "controller epoch"),
])
def test_broken_partitions_are_caught(changes, message):
    with pytest.raises(InvariantViolation, match=message):
        check_invariants(broken(**changes))


def test_leader_on_a_dead_broker_is_caught():
    ctx = make_context()
    del ctx.live_brokers[1]
    with pytest.raises(InvariantViolation, match="dead"):
        check_invariants(ctx)


def test_epochs_going_back_and_two_leaders_in_one_epoch_are_caught():
    before = make_context()
    with pytest.raises(InvariantViolation, match="leader epoch went back"):
        check_invariants(broken(leader_epoch=2), before)
    with pytest.raises(InvariantViolation, match="two leaders"):
        check_invariants(broken(leader=2, isr=[2, 1]), before)
    with pytest.raises(InvariantViolation, match="zk version went back"):
        check_invariants(broken(zk_version=1), before)
    newer = make_context()
    newer.controller_epoch = 4
    with pytest.raises(InvariantViolation, match="controller epoch went back"):
        check_invariants(newer, before)
