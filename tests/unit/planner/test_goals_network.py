"""Swaps of the network goal (goals/network.py, Cluster.swap_ok)."""

from kafkactl.planner.goals.network import SwapPool, swap_gains
from kafkactl.planner.options import PlannerOptions
from support.goal_fixtures import cluster, replica


def loads(c):
    return ([d.size_bytes for d in c.dirs.values()],
            [(b.bytes_in, b.bytes_out, b.replicas) for b in c.brokers.values()])


def test_a_swap_is_checked_as_both_moves_leave_the_dirs_and_changes_nothing():
    # HDD dirs 1 (broker 1) and 5 (broker 3) at 1,550 of 2,000 (threshold 1,600)
    c = cluster(sizes={1: 1550, 5: 1550})
    hot = replica(index=1, brokers=(2, 1), dirs=(3, 1), size=100, bytes_in=50, topic="hot")
    cold = replica(index=1, brokers=(2, 3), dirs=(3, 5), size=90, bytes_in=1, topic="cold")
    before = loads(c)
    # 100 in, 90 out: dir 5 ends at 1,560, under the threshold; alone, the
    # hot replica would take it to 1,650
    assert c.swap_ok(hot, cold, lambda r, d: True)
    assert not c.hard_ok(hot, 5)
    big = replica(index=1, brokers=(2, 1), dirs=(3, 1), size=200, bytes_in=50, topic="hot")
    assert not c.swap_ok(big, cold, lambda r, d: True)          # 1,660 once swapped
    assert not c.swap_ok(hot, cold, lambda r, d: d != 5)        # a higher goal refuses
    assert loads(c) == before                                   # checks leave no trace


def test_a_swap_never_puts_two_replicas_of_a_partition_on_one_broker():
    c = cluster(sizes={1: 1000, 3: 1000, 5: 1000})
    hot = replica(index=0, brokers=(1, 3), dirs=(1, 5), size=100, bytes_in=50, topic="hot")
    cold = replica(index=0, brokers=(3, 2), dirs=(5, 3), size=100, bytes_in=1, topic="cold")
    assert not c.swap_ok(hot, cold, lambda r, d: True)          # broker 3 holds hot already


def test_a_swap_must_relieve_the_hot_broker_without_overloading_the_other():
    c = cluster(sizes={1: 1000, 5: 1000})
    c.brokers[1].bytes_in, c.brokers[3].bytes_in = 900, 300
    targets = {1: 600.0, 2: 600.0, 3: 600.0}
    hot = replica(index=1, brokers=(2, 1), dirs=(3, 1), size=100, bytes_in=200, bytes_out=0)
    cold = replica(index=1, brokers=(2, 3), dirs=(3, 5), size=100, bytes_in=20, bytes_out=0,
                   topic="u")
    assert swap_gains(c, hot, cold, targets, targets, 1.05)
    warm = replica(index=1, brokers=(2, 3), dirs=(3, 5), size=100, bytes_in=150, bytes_out=0,
                   topic="u")
    assert not swap_gains(c, hot, warm, targets, targets, 1.05)   # gains under half
    c.brokers[3].bytes_in = 500
    assert not swap_gains(c, hot, cold, targets, targets, 1.05)   # 680 > 630 on broker 3


def test_the_pool_offers_the_nearest_size_once():
    c = cluster(sizes={1: 1000, 5: 1000}, options=PlannerOptions())
    pool = SwapPool(c, [replica(index=1, brokers=(2, 3), dirs=(3, 5), size=s, bytes_in=1, topic=f"c{s}")
                        for s in (10, 95, 300)])
    hot = replica(index=1, brokers=(2, 1), dirs=(3, 1), size=100, bytes_in=50, topic="hot")
    first = pool.take(c, hot, lambda p: True, lambda b: 0.0)
    second = pool.take(c, hot, lambda p: True, lambda b: 0.0)
    assert (first.size_bytes, second.size_bytes) == (95, 10)


def test_the_guard_holds_the_reported_figure_where_a_rack_target_would_allow_more():
    """With racks pinned, a broker of a smaller rack has a target above the
    cluster's mean; a lower goal's move may not take it past the figure
    measure() reports (inbound over capacity against the mean, x 1.1)."""
    from kafkactl.planner.goals.network import Network

    c = cluster()
    for b in c.brokers.values():
        b.bytes_in = 100                     # of 1,000 each: the mean utilization is 0.1
    goal = Network()
    goal.prepare(c)
    goal.in_targets = {1: 100.0, 2: 100.0, 3: 110.0}     # broker 3's rack is the smaller one
    assert goal.guard(c, replica(index=1, brokers=(2, 1), dirs=(3, 1), bytes_in=10), 5)   # to 0.11: at the limit
    assert not goal.guard(c, replica(index=1, brokers=(2, 1), dirs=(3, 1), bytes_in=20), 5)   # 0.12, within 110 x 1.1
    assert [f.met for f in goal.measure(c)][0]
