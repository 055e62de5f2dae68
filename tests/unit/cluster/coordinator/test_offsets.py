"""Who may commit offsets, and when they expire (cluster/coordinator/offsets.py),
with literal groups and clock values."""

from kio.schema.errors import ErrorCode as E

from kafkactl.cluster.coordinator.group import Group, Member
from kafkactl.cluster.coordinator.group_state import GroupState as S
from kafkactl.cluster.coordinator.offsets import (
    CommittedOffset, commit_check, expired_offsets, is_removable, partition_error)
from kafkactl.cluster.coordinator.subscription import subscribed_topics
from support.consumer_protocol import subscription

DAY_MS = 24 * 3600 * 1000


def group(state=S.STABLE, topics=("orders",), protocol_type="consumer", generation=3, instance=None):
    g = Group("g", generation_id=generation, protocol_type=protocol_type, protocol_name="range",
              state_timestamp_ms=1000)
    g.add(Member("m1", instance, "c", "/h", 60000, 10000, protocol_type,
                 (("range", subscription(list(topics))),)))
    g.state = state
    return g


def offset(committed_ms, expire_ms=-1):
    return CommittedOffset(5, "", committed_ms, expire_timestamp_ms=expire_ms)


def test_a_new_group_is_created_by_a_generation_minus_one_commit_only():
    assert commit_check(None, "", -1, None).create_group
    assert commit_check(None, "m1", 4, None).error is E.illegal_generation


def test_member_and_generation_are_checked_in_kafkas_order():
    assert commit_check(group(S.DEAD), "m1", 3, None).error is E.coordinator_not_available
    assert commit_check(group(instance="i1"), "other", 3, "i1").error is E.fenced_instance_id
    assert commit_check(group(S.COMPLETING_REBALANCE), "m1", 3, None).error is E.rebalance_in_progress
    assert commit_check(group(), "nobody", 3, None).error is E.unknown_member_id
    assert commit_check(group(), "m1", 2, None).error is E.illegal_generation
    accepted = commit_check(group(), "m1", 3, None)
    assert accepted.error is None and accepted.member_id == "m1" and not accepted.create_group


def test_an_empty_group_takes_admin_commits_and_a_rebalancing_one_takes_its_members():
    empty = group(S.EMPTY)
    assert commit_check(empty, "", -1, None) == commit_check(empty, "x", -1, None)
    assert commit_check(empty, "", -1, None).error is None
    assert commit_check(group(S.PREPARING_REBALANCE), "m1", 3, None).error is None
    assert commit_check(group(S.STABLE), "", -1, None).error is E.unknown_member_id


def test_partition_refusals():
    assert partition_error(False, None, 4096) is E.unknown_topic_or_partition
    assert partition_error(True, "x" * 4097, 4096) is E.offset_metadata_too_large
    assert partition_error(True, "x" * 4096, 4096) is None
    assert partition_error(True, None, 0) is None


def test_an_empty_groups_offsets_expire_a_retention_after_it_became_empty():
    g = group(S.EMPTY)          # empty since 1000
    offsets = {("orders", 0): offset(DAY_MS * 3)}
    assert expired_offsets(g, offsets, 1000 + DAY_MS - 1, DAY_MS) == []
    assert expired_offsets(g, offsets, 1000 + DAY_MS, DAY_MS) == [("orders", 0)]


def test_a_live_consumer_group_keeps_subscribed_topics_and_expires_the_others_by_commit_time():
    offsets = {("orders", 0): offset(0), ("old", 0): offset(0), ("old", 1): offset(DAY_MS)}
    assert expired_offsets(group(S.STABLE), offsets, DAY_MS, DAY_MS) == [("old", 0)]


def test_groups_without_a_protocol_type_expire_by_commit_time_and_others_never():
    offsets = {("t", 0): offset(0), ("t", 1): offset(10)}
    simple = Group("g", protocol_type=None)
    assert expired_offsets(simple, offsets, DAY_MS + 5, DAY_MS) == [("t", 0)]
    assert expired_offsets(None, offsets, DAY_MS + 10, DAY_MS) == [("t", 0), ("t", 1)]
    connect = group(S.STABLE, protocol_type="connect")
    assert expired_offsets(connect, offsets, 100 * DAY_MS, DAY_MS) == []


def test_an_explicit_expire_timestamp_wins_over_the_retention():
    offsets = {("orders", 0): offset(0, expire_ms=50)}
    assert expired_offsets(group(S.EMPTY), offsets, 50, DAY_MS) == [("orders", 0)]
    assert expired_offsets(group(S.EMPTY), offsets, 49, DAY_MS) == []


def test_an_unparsable_subscription_keeps_every_offset_of_a_live_group():
    g = group(S.STABLE)
    g.members["m1"].protocols = (("range", b"\x00"),)
    assert expired_offsets(g, {("x", 0): offset(0)}, 10 * DAY_MS, DAY_MS) == []


def test_only_an_empty_group_without_offsets_is_removable():
    assert is_removable(group(S.EMPTY), {})
    assert not is_removable(group(S.EMPTY), {("t", 0): offset(0)})
    assert not is_removable(group(S.STABLE), {})


def test_subscriptions_of_every_version_and_bad_bytes():
    assert subscribed_topics(subscription(["a", "b"])) == {"a", "b"}
    assert subscribed_topics(subscription(["a"], version=1, user_data=b"xy")) == {"a"}
    assert subscribed_topics(b"\x00\x00\x7f\xff\xff\xff") is None      # 2^31-1 topics declared in 6 bytes
    assert subscribed_topics(b"") is None
    assert subscribed_topics(b"\xff\xff\x00\x00\x00\x00") is None       # negative version
