"""Partition health rules, broker loads and the lag of out-of-ISR replicas (pure)."""

from kafkactl.cluster.admin.broker_queries import BrokerQueryError, OffsetAnswer, parse_log_dir_media
from kafkactl.cluster.admin.inspect import broker_loads, partition_health
from kafkactl.cluster.admin.isr_lag import ReplicaLag, offset_questions, replica_lags
from kafkactl.cluster.admin.topics import PartitionInfo


def partition(leader, isr, replicas=(1, 2, 3), name="t", index=0):
    return PartitionInfo(name, index, list(replicas), leader, 5, list(isr))


def test_health_of_a_healthy_partition():
    health = partition_health(partition(1, [1, 2, 3]), {1, 2, 3}, min_isr=2)
    assert health.problems() == [] and health.offline_replicas == []


def test_health_with_a_follower_down_at_min_isr():
    health = partition_health(partition(1, [1, 2]), {1, 2}, min_isr=2)
    assert health.problems() == ["under-replicated-partitions", "at-min-isr-partitions"]
    assert health.offline_replicas == [3]


def test_health_without_a_leader_or_with_a_dead_one():
    leaderless = partition_health(partition(-1, [3]), {1, 2}, 1)
    assert leaderless.at_min_isr   # the --at-min-isr-partitions filter keeps Kafka's meaning
    assert leaderless.problems() == [
        "under-replicated-partitions", "under-min-isr-partitions", "unavailable-partitions", "non-preferred-leader"]
    dead_leader = partition_health(partition(3, [3, 1, 2], replicas=(3, 1, 2)), {1, 2}, 1)
    assert dead_leader.unavailable and not dead_leader.non_preferred_leader


def test_a_healthy_partition_at_its_minimum_by_configuration_shows_no_problem():
    assert partition_health(partition(1, [1], replicas=(1,)), {1}, min_isr=1).problems() == []
    assert partition_health(partition(1, [1, 2], replicas=(1, 2)), {1, 2}, min_isr=2).problems() == []


def test_broker_loads_count_leaders_and_replicas():
    loads = broker_loads([partition(1, [1, 2, 3]), partition(-1, [], replicas=(3,)), partition(2, [2], (2, 1))])
    assert {b: (l.leader_count, l.replica_count) for b, l in loads.items()} == {1: (1, 2), 2: (1, 2), 3: (0, 2)}


def test_lag_is_the_leaders_log_end_minus_the_followers():
    p = partition(1, [1, 2])
    assert offset_questions([p, partition(2, [2, 1, 3], index=1)]) == {1: {("t", 0)}, 3: {("t", 0)}}
    answers = {1: {("t", 0): OffsetAnswer(500, None)}, 3: {("t", 0): OffsetAnswer(120, None)}}
    assert replica_lags(p, answers) == [ReplicaLag(3, 120, 380)]


def test_lag_unknown_is_explained_per_replica():
    p = partition(1, [1], replicas=(1, 2, 3))
    answers = {1: {("t", 0): OffsetAnswer(500, None)}, 2: BrokerQueryError(2, "timed out")}
    assert replica_lags(p, answers) == [
        ReplicaLag(2, None, None, "broker 2 did not answer (timed out)"),
        ReplicaLag(3, None, None, "broker 3 is not registered (down?)")]
    leaderless = replica_lags(partition(-1, [1], replicas=(1, 2)), {2: {("t", 0): OffsetAnswer(7, None)}})
    assert leaderless == [ReplicaLag(2, 7, None, "leader: no leader")]


def test_log_dir_media_parsing():
    assert parse_log_dir_media("/a/b:ssd,/c:hdd") == {"/a/b": "ssd", "/c": "hdd"}
    assert parse_log_dir_media(None) == {}
