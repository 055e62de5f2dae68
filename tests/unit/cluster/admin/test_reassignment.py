"""Pure parts of reassignment: throttles the Kafka way, progress, revert targets, generate."""

import random

from kafkactl.cluster.admin import reassignment as ra
from kafkactl.cluster.admin.replica_assignment import BrokerInfo


def test_throttles_name_current_replicas_as_leaders_and_added_ones_as_followers():
    current = {("t", 0): [1, 2], ("t", 1): [2, 3], ("t", 2): [3, 1], ("u", 0): [1]}
    target = {("t", 0): [1, 4], ("t", 1): [3, 2], ("t", 2): [4, 5], ("u", 0): [2]}
    throttles = ra.compute_throttles(current, target)
    # t-1 is only reordered: no data moves, so it is not throttled.
    assert throttles.leader_replicas == {"t": "0:1,0:2,2:3,2:1", "u": "0:1"}
    assert throttles.follower_replicas == {"t": "0:4,2:4,2:5", "u": "0:2"}
    assert throttles.brokers == (1, 2, 3, 4, 5)
    assert ra.moving_partitions(current, target) == [("t", 0), ("t", 2), ("u", 0)]


def test_a_partition_losing_replicas_only_is_leader_throttled_without_followers():
    throttles = ra.compute_throttles({("t", 0): [1, 2, 3]}, {("t", 0): [1, 2]})
    assert throttles.leader_replicas == {"t": "0:1,0:2,0:3"}
    assert throttles.follower_replicas == {}


def test_throttled_overwrites_the_two_keys_removes_one_not_needed_and_keeps_the_rest():
    from kafkactl.cluster.admin import configs

    throttles = ra.compute_throttles({("t", 0): [1, 2, 3]}, {("t", 0): [1, 2]})
    topic = {"retention.ms": "1", configs.LEADER_THROTTLED_REPLICAS: "*", configs.FOLLOWER_THROTTLED_REPLICAS: "9:9"}
    assert ra.throttled(configs.topic_entity("t"), topic, throttles, 10) == {
        "retention.ms": "1", configs.LEADER_THROTTLED_REPLICAS: "0:1,0:2,0:3"}
    assert ra.throttled(configs.broker_entity(2), {"num.io.threads": "8"}, throttles, 10) == {
        "num.io.threads": "8", configs.LEADER_THROTTLED_RATE: "10", configs.FOLLOWER_THROTTLED_RATE: "10"}
    assert [e.entity_path for e in ra.throttle_entities(throttles)] == ["topics/t", "brokers/1", "brokers/2",
                                                                       "brokers/3"]


def test_unthrottled_clears_what_kafkas_verify_clears():
    from kafkactl.cluster.admin import configs

    rates = {k: "5" for k in configs.THROTTLE_RATE_KEYS}
    replicas = {k: "0:1" for k in configs.THROTTLED_REPLICAS_KEYS}
    assert ra.unthrottled(configs.broker_entity(1), {**rates, **replicas, "num.io.threads": "8"}) == {
        **replicas, "num.io.threads": "8"}
    assert ra.unthrottled(configs.topic_entity("t"), {**rates, **replicas}) == rates
    assert ra.cleared_keys(configs.broker_entity(1)) == (
        configs.LEADER_THROTTLED_RATE, configs.FOLLOWER_THROTTLED_RATE, configs.LOG_DIRS_THROTTLED_RATE)
    assert [e.entity_path for e in ra.removal_entities(["u", "t", "t"], ["2", "<default>", "10"])] == [
        "topics/t", "topics/u", "brokers/10", "brokers/2"]


def view(partition, replicas, adding=(), removing=(), leader=1, isr=None):
    return ra.PartitionView("t", partition, tuple(replicas), tuple(adding), tuple(removing), leader, 3,
                            tuple(replicas if isr is None else isr))


def test_progress_complete_in_progress_and_failed():
    targets = {("t", 0): [2, 3], ("t", 1): [4, 1], ("t", 2): [1, 2]}
    views = {("t", 0): view(0, [2, 3]),
             ("t", 1): view(1, [4, 1, 2], adding=[4], removing=[2], isr=[1, 2]),
             ("t", 2): view(2, [3, 1])}
    states = {(s.topic, s.partition): s for s in ra.progress(targets, views, {("t", 1): [4, 1]})}
    assert states[("t", 0)].status == ra.COMPLETE
    assert states[("t", 1)].status == ra.IN_PROGRESS
    assert states[("t", 1)].detail == "waiting for 4 to join the ISR"
    assert states[("t", 2)].status == ra.FAILED and "3,1" in states[("t", 2)].detail
    # A reordering is not complete until the order matches.
    assert ra.progress({("t", 0): [3, 2]}, views, None)[0].status == ra.FAILED


def test_revert_prefers_the_rollback_order_and_falls_back_to_the_topic_znode():
    running = {("t", 0): [2, 3, 4], ("t", 1): [1, 2]}
    views = {("t", 0): view(0, [2, 3, 4, 1], adding=[4], removing=[1]), ("t", 1): view(1, [1, 2])}
    assert ra.revert_targets(running, views, {("t", 0): [1, 2, 3]}) == {("t", 0): [1, 2, 3]}
    # Without it: the full set minus the adding replicas (order from the znode).
    assert ra.revert_targets(running, views, None) == {("t", 0): [2, 3, 1]}


def test_generate_keeps_each_topics_replication_factor_and_uses_only_the_given_brokers():
    views = {"t": {p: view(p, [1, 2]) for p in range(6)}, "u": {0: view(0, [1, 2, 3])}}
    brokers = [BrokerInfo(4, "a"), BrokerInfo(5, "b"), BrokerInfo(6, "a"), BrokerInfo(7, "b")]
    proposed = ra.propose(views, brokers, rng=random.Random(3))
    assert sorted(proposed) == [("t", p) for p in range(6)] + [("u", 0)]
    for (topic, _), replicas in proposed.items():
        assert len(replicas) == (2 if topic == "t" else 3) and set(replicas) <= {4, 5, 6, 7}
        assert len(set(replicas)) == len(replicas)
    # Rack-aware: a partition of RF 2 over two racks has one replica in each.
    racks = {4: "a", 5: "b", 6: "a", 7: "b"}
    assert all({racks[r] for r in proposed[("t", p)]} == {"a", "b"} for p in range(6))


def test_lag_is_leader_minus_replica_else_isr_membership_with_the_reason():
    lag = ra._lag(4, view(0, [1, 4], adding=[4], isr=[1]), 90, 100)
    assert lag.lag == 10 and lag.describe() == "4: 10 behind"
    unknown = ra._lag(4, view(0, [1, 4], adding=[4], isr=[1]), "broker 4 answered not_leader_or_follower", 100)
    assert unknown.lag is None
    assert unknown.describe() == "4: not in ISR (offsets not available: broker 4 answered not_leader_or_follower)"
