"""Count limits and excesses (goals/counts.py) and network excess (goals/network.py)."""

from kafkactl.planner.goals.counts import count_excess, count_limit
from kafkactl.planner.goals.network import excess


def test_count_limit_is_the_mean_plus_tolerance_rounded_up():
    assert count_limit(10) == 11
    assert count_limit(10.5) == 12


def test_brokers_over_the_limit_give_the_surplus():
    assert count_excess({1: 14, 2: 10, 3: 6}) == {1: 3}


def test_an_empty_broker_pulls_from_those_above_the_mean():
    # mean 10, limit 11: nobody over, broker 4 far under
    assert count_excess({1: 11, 2: 11, 3: 11, 4: 7}) == {1: 1, 2: 1, 3: 1}


def test_balanced_counts_need_nothing():
    assert count_excess({1: 10, 2: 10, 3: 11}) == {}


def test_network_excess_is_above_target_times_tolerance():
    assert excess({1: 120, 2: 100}, {1: 100.0, 2: 100.0}, 0.05) == {1: 15}


def test_inbound_targets_are_per_rack_when_racks_are_pinned():
    from support.goal_fixtures import cluster

    from kafkactl.planner.goals.network import in_target

    c = cluster(racks=("a", "a", "b"))
    for b, load in ((1, 300), (2, 100), (3, 400)):
        c.brokers[b].bytes_in = load
    assert in_target(c, c.brokers[1]) == 800 / 3
    c.pin_racks(min_rf=2)
    assert (in_target(c, c.brokers[1]), in_target(c, c.brokers[3])) == (200, 400)
