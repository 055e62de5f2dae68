import pytest

from kafkactl.cluster.broker.quota import (
    ALL_REPLICAS, UNLIMITED, ReplicationQuota, ReplicationThrottles, ThrottledReplicasError, is_throttled,
    parse_throttled_replicas,
)


def test_throttled_replicas_use_kafkas_format():
    assert parse_throttled_replicas("0:1, 1:2") == {(0, 1), (1, 2)}
    assert parse_throttled_replicas("*") == ALL_REPLICAS
    assert parse_throttled_replicas("") == frozenset()
    assert is_throttled(parse_throttled_replicas("0:1"), 0, 1) and not is_throttled(frozenset({(0, 1)}), 0, 2)
    assert is_throttled(ALL_REPLICAS, 7, 9)
    with pytest.raises(ThrottledReplicasError, match="'x' is not PARTITION:BROKER"):
        parse_throttled_replicas("0:1,x")


def test_a_windows_worth_goes_at_once_then_the_rate():
    now = [0.0]
    quota = ReplicationQuota(1000, clock=lambda: now[0], window_s=2.0)
    quota.record(1500)
    assert not quota.is_exceeded()          # 1,500 of the window's 2,000 bytes
    quota.record(600)
    assert quota.is_exceeded()
    now[0] = 0.2                            # 200 bytes drained: 1,900 left
    assert not quota.is_exceeded()
    now[0] = 2.5
    assert not quota.is_exceeded()


def test_a_fetch_far_over_the_rate_is_owed_until_it_drained():
    # The cause of the unstable unclean-election test: at 1 byte/s one fetch
    # (1 MiB) must hold the replica back for good, not for a window (2 s).
    now = [0.0]
    quota = ReplicationQuota(1, clock=lambda: now[0], window_s=2.0)
    quota.record(1024 * 1024)
    for now[0] in (2.0, 2.5, 60.0, 3600.0):
        assert quota.is_exceeded(), now[0]
    now[0] = 1024 * 1024 - 2.0              # drained down to the window's worth
    assert not quota.is_exceeded()


def test_a_rate_change_drains_at_the_old_rate_until_then_and_removing_it_forgets_the_debt():
    now = [0.0]
    quota = ReplicationQuota(10, clock=lambda: now[0], window_s=1.0)
    quota.record(1000)
    now[0] = 10.0                           # 100 drained at 10 B/s: 900 left
    quota.set_rate(100)
    now[0] = 17.9                           # 790 more at 100 B/s: 110 left, over 100
    assert quota.is_exceeded()
    now[0] = 18.1
    assert not quota.is_exceeded()
    quota.record(10**6)
    quota.set_rate(UNLIMITED)
    quota.set_rate(1)
    assert not quota.is_exceeded()          # a new throttle starts with nothing owed


def test_unlimited_never_throttles_and_rates_change_live():
    quota = ReplicationQuota()
    quota.record(10**12)
    assert not quota.is_exceeded()
    quota.set_rate(1)
    quota.record(10)
    assert quota.is_exceeded()


def test_the_leader_list_names_the_leaders_replica_and_the_follower_list_the_followers():
    # As kafka-reassign-partitions.sh writes them for partition 0 moving from [1] to [1, 2].
    config = {"leader.replication.throttled.replicas": "0:1", "follower.replication.throttled.replicas": "0:2"}
    isr = {("t", 0): (1,)}

    def throttles(broker_id):
        return ReplicationThrottles(lambda topic: config, lambda topic, index: isr.get((topic, index)), broker_id)

    leader = throttles(1)
    assert leader.leader_throttled_replica("t", 0, 2)            # broker 1 leads a throttled replica
    assert not throttles(3).leader_throttled_replica("t", 0, 2)  # not listed: never throttled
    assert not leader.leader_throttled_replica("t", 1, 2)        # another partition
    leader.set_rates(1, UNLIMITED)
    assert not leader.leader_throttled("t", 0, 2)                # nothing served yet: the first fetch goes
    leader.leader_quota.record(1024 * 1024)
    assert leader.leader_throttled("t", 0, 2)
    isr[("t", 0)] = (1, 2)
    assert not leader.leader_throttled("t", 0, 2)                # in sync: never throttled
    config["leader.replication.throttled.replicas"] = "*"
    isr[("t", 0)] = (1,)
    assert throttles(3).leader_throttled_replica("t", 0, 2)


def test_the_follower_throttles_only_its_own_listed_out_of_sync_replicas():
    from types import SimpleNamespace

    config = {"follower.replication.throttled.replicas": "0:2"}
    follower = ReplicationThrottles(lambda topic: config, lambda topic, index: None, 2).follower
    assert follower.is_throttled(SimpleNamespace(topic="t", index=0, broker_id=2, isr=(1,)))
    assert not follower.is_throttled(SimpleNamespace(topic="t", index=0, broker_id=2, isr=(1, 2)))
    assert not follower.is_throttled(SimpleNamespace(topic="t", index=1, broker_id=2, isr=(1,)))
