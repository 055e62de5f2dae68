"""Count limits and excesses (goals/counts.py) and network excess (goals/network.py)."""

from kafkactl.planner.goals.counts import count_excess, count_limit
from kafkactl.planner.goals.network import excess


def test_count_limit_is_the_mean_plus_tolerance_rounded_down_at_least_the_mean_rounded_up():
    assert count_limit(10) == 11
    assert count_limit(10.5) == 11
    assert count_limit(2) == 2            # not ceil(2.2) = 3: 1.5 times the mean
    assert count_limit(2.5) == 3


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


def test_a_lower_goals_move_never_adds_to_the_broker_with_the_most():
    from support.goal_fixtures import cluster, replica

    from kafkactl.planner.goals.counts import Counts

    c = cluster()
    for b, held in ((1, 12), (2, 9), (3, 6)):
        c.brokers[b].replicas = held
    goal = Counts()
    goal.prepare(c)                                    # mean 9: limit 9
    rep = replica(index=1, brokers=(2, 1), dirs=(3, 1))   # a follower: no leadership moves
    assert goal.guard(c, rep, 5)                       # broker 3: 7 <= 9
    c.brokers[3].replicas = 10
    assert goal.guard(c, rep, 5)                       # 11 > 9, but under the 12 broker 1 held
    c.brokers[3].replicas = 11
    assert not goal.guard(c, rep, 5)                   # 12: level with the source


def test_a_lower_goals_move_of_a_leader_never_adds_to_the_broker_with_the_most_leaders():
    from support.goal_fixtures import cluster, replica

    from kafkactl.planner.goals.counts import Counts

    c = cluster()
    for b, (held, leading) in {1: (10, 3), 2: (9, 3), 3: (8, 6)}.items():
        c.brokers[b].replicas, c.brokers[b].leaders = held, leading
    goal = Counts()
    goal.prepare(c)                                    # replicas: limit 9; leaders: mean 4, limit 4
    leader = replica(index=0, brokers=(1, 2), dirs=(1, 3))
    follower = replica(index=1, brokers=(2, 1), dirs=(3, 1))
    assert goal.guard(c, follower, 5)                  # broker 3 ends with 9 replicas                  # no leadership moves
    assert not goal.guard(c, leader, 5)                # broker 3 would lead 7, over 4 and over broker 1's 3
    c.brokers[3].leaders = 3
    assert goal.guard(c, leader, 5)                    # 4: within the limit


def test_network_takes_load_past_target_only_while_the_pair_narrows():
    from support.goal_fixtures import cluster, replica

    from kafkactl.planner.goals.network import Network

    c = cluster()
    for b, out in ((1, 600), (2, 300), (3, 300)):
        c.brokers[b].bytes_out = out
    goal = Network()
    goal.prepare(c)                                    # target 400 each
    rep = replica(index=0, brokers=(1, 2), dirs=(1, 3), bytes_out=200)
    # broker 2 would carry 500 > 400 x 1.1, but less than the 600 broker 1 carried
    assert goal.guard_leader(c, rep, 1)
    assert goal.choose_leader(c, rep, None, lambda index: True) == 1
    c.brokers[2].bytes_out = 400
    assert goal.choose_leader(c, rep, None, lambda index: True) is None   # level: no progress of its own
    assert goal.guard_leader(c, rep, 1)                # a lower goal may: the most loaded gets no more
    c.brokers[2].bytes_out = 450
    assert not goal.guard_leader(c, rep, 1)            # 650 > 600
