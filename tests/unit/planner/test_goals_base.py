"""Hard constraints on single moves, the destination queue, and the
aggregates a move updates (goals/base.py)."""

from kafkactl.planner.goals.base import DestinationQueue, least_follower
from kafkactl.planner.options import PlannerOptions
from support.goal_fixtures import cluster, replica


def test_a_move_to_a_broker_already_holding_the_partition_is_refused():
    c = cluster()
    rep = replica(index=0, brokers=(1, 2), dirs=(1, 3))
    assert not c.hard_ok(rep, 3)          # broker 2 holds it
    assert not c.hard_ok(rep, 2)          # broker 2's other dir: still broker 2
    assert c.hard_ok(rep, 5)              # broker 3


def test_a_move_between_dirs_of_one_broker_is_allowed():
    c = cluster()
    assert c.hard_ok(replica(index=0, brokers=(1, 2), dirs=(1, 3)), 0)


def test_capacity_threshold_is_hard():
    c = cluster(sizes={5: 1500}, options=PlannerOptions(capacity_threshold=0.8))
    assert c.hard_ok(replica(size=100), 5)          # 1600 <= 0.8 x 2000
    assert not c.hard_ok(replica(size=101), 5)


def test_network_thresholds_bind_the_destination_broker():
    c = cluster(options=PlannerOptions(network_in_threshold=0.5, network_out_threshold=0.5))
    c.brokers[3].bytes_in = 495
    assert not c.hard_ok(replica(bytes_in=10), 5)
    c.brokers[3].bytes_in = 0
    c.brokers[3].bytes_out = 490
    assert not c.hard_ok(replica(index=0, bytes_out=20), 5)   # a leader brings its outbound
    assert c.hard_ok(replica(index=1, brokers=(2, 1), dirs=(3, 1), bytes_out=20), 5)


def test_rack_rule_never_loses_a_rack():
    c = cluster(racks=("a", "b", "a", "c"))
    rep = replica(index=1, brokers=(1, 2), dirs=(1, 3))     # racks a, b
    assert not c.hard_ok(rep, 5)           # broker 3 is in rack a: a, a
    assert c.hard_ok(rep, 7)               # broker 4, rack c


def test_rack_violations_are_the_replicas_of_a_rack_the_partition_could_avoid():
    c = cluster(racks=("a", "b", "a", "c", None), excluded=(5,))
    assert c.partition_rack_violations((1, 2, 4)) == 0        # a, b, c
    assert c.partition_rack_violations((1, 3, 2)) == 1        # a, a, b: c is free
    assert c.partition_rack_violations((3, 2, 1)) == 1        # any order
    assert c.partition_rack_violations((1, 3)) == 1           # a, a
    assert c.partition_rack_violations((1, 2, 3, 4)) == 0     # RF 4 over 3 racks: all spanned
    assert c.partition_rack_violations((1, 3, 5)) == 1        # a, a, none: a rackless (excluded) broker shares none
    assert cluster(racks=("a", "a", "a")).partition_rack_violations((1, 2)) == 0   # one rack: none to span


def test_a_move_keeps_the_rack_violation_count():
    c = cluster(racks=("a", "b", "a", "c"))
    c.rack_violations = 1
    c.apply_move(replica(index=1, brokers=(1, 3), dirs=(1, 5)), 7)        # a, a -> a, c
    assert c.rack_violations == 0
    c.apply_move(replica(index=0, brokers=(2, 4), dirs=(3, 7)), 1)        # b, c -> a, c
    assert c.rack_violations == 0
    c.apply_move(replica(index=0, brokers=(2, 4), dirs=(2, 7), partition=1), 3)   # within broker 2
    assert c.rack_violations == 0


def test_excluded_brokers_take_nothing():
    c = cluster(excluded=(3,))
    assert not c.hard_ok(replica(), 5)


def test_budget_counts_moves_and_bytes():
    c = cluster(options=PlannerOptions(max_moves=1, max_bytes_moved=150))
    rep = replica(size=100)
    assert c.within_budget(rep)
    c.apply_move(rep, 5)
    assert not c.within_budget(replica(size=1))            # one move allowed
    c2 = cluster(options=PlannerOptions(max_bytes_moved=150))
    c2.apply_move(replica(size=100), 5)
    assert not c2.within_budget(replica(size=51)) and c2.within_budget(replica(size=50))


def test_a_move_updates_dirs_and_brokers():
    c = cluster(sizes={1: 100})
    c.brokers[1].bytes_in, c.brokers[1].bytes_out, c.brokers[1].replicas, c.brokers[1].leaders = 10, 20, 1, 1
    c.apply_move(replica(index=0, size=100, bytes_in=10, bytes_out=20), 5)
    assert (c.dirs[1].size_bytes, c.dirs[5].size_bytes) == (0, 100)
    assert (c.brokers[1].bytes_in, c.brokers[3].bytes_in) == (0, 10)
    assert (c.brokers[1].bytes_out, c.brokers[3].bytes_out) == (0, 20)
    assert (c.brokers[3].replicas, c.brokers[3].leaders) == (1, 1)
    assert (c.moves, c.bytes_moved) == (1, 100)


def test_a_leader_change_moves_outbound_and_no_bytes():
    c = cluster()
    c.brokers[1].bytes_out, c.brokers[1].leaders = 20, 1
    c.apply_leader(replica(index=0, brokers=(1, 2), bytes_out=20), 1)
    assert (c.brokers[1].bytes_out, c.brokers[2].bytes_out) == (0, 20)
    assert (c.brokers[2].leaders, c.bytes_moved, c.leader_changes) == (1, 0, 1)


def test_queue_gives_the_lowest_accepted_dir_and_stays_fresh():
    c = cluster(sizes={1: 300, 3: 100, 5: 200})
    queue = DestinationQueue(c, [1, 3, 5], lambda d: (d.size_bytes, d.dir_id))
    assert queue.pick(lambda i: True) == 3
    assert queue.pick(lambda i: i != 3) == 5
    c.dirs[3].size_bytes = 1000
    queue.touch([2])
    assert queue.pick(lambda i: True) == 5
    assert queue.pick(lambda i: False) is None


def test_the_follower_to_lead_is_the_least_ranked_one_accepted():
    c = cluster()
    rep = replica(index=0, brokers=(1, 2, 3), dirs=(1, 3, 5))
    c.brokers[2].leaders, c.brokers[3].leaders = 4, 2

    def by_leaders(b):
        return (b.leaders, b.broker_id)
    assert least_follower(c, rep, lambda index: True, by_leaders) == 2       # broker 3
    assert least_follower(c, rep, lambda index: index != 2, by_leaders) == 1
    assert least_follower(c, rep, lambda index: True,
                          lambda b: None if b.broker_id == 3 else by_leaders(b)) == 1
    assert least_follower(c, rep, lambda index: False, by_leaders) is None
    c.brokers[2].leaders = 2                                                  # a tie: the lower broker id
    assert least_follower(c, rep, lambda index: True, by_leaders) == 1
