import pytest

from kafkactl.cluster.broker.quota import (
    ALL_REPLICAS, ReplicationQuota, ThrottledReplicasError, is_throttled, parse_throttled_replicas,
)


def test_throttled_replicas_use_kafkas_format():
    assert parse_throttled_replicas("0:1, 1:2") == {(0, 1), (1, 2)}
    assert parse_throttled_replicas("*") == ALL_REPLICAS
    assert parse_throttled_replicas("") == frozenset()
    assert is_throttled(parse_throttled_replicas("0:1"), 0, 1) and not is_throttled(frozenset({(0, 1)}), 0, 2)
    assert is_throttled(ALL_REPLICAS, 7, 9)
    with pytest.raises(ThrottledReplicasError, match="'x' is not PARTITION:BROKER"):
        parse_throttled_replicas("0:1,x")


def test_quota_is_a_rate_over_a_sliding_window():
    now = [0.0]
    quota = ReplicationQuota(1000, clock=lambda: now[0], window_s=2.0)
    quota.record(1500)
    assert not quota.is_exceeded()          # 1,500 of the window's 2,000 bytes
    quota.record(600)
    assert quota.is_exceeded()
    now[0] = 2.5                            # the samples left the window
    assert not quota.is_exceeded()


def test_unlimited_never_throttles_and_rates_change_live():
    quota = ReplicationQuota()
    quota.record(10**12)
    assert not quota.is_exceeded()
    quota.set_rate(1)
    quota.record(10)
    assert quota.is_exceeded()
