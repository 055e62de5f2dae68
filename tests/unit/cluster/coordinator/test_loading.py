"""Replaying a `__consumer_offsets` partition (cluster/coordinator/loading.py)."""

from kafkactl.cluster.coordinator.group_state import GroupState as S
from kafkactl.cluster.coordinator.loading import replay, restore_group
from kafkactl.cluster.coordinator.records import (
    GroupKey, GroupValue, MemberMetadata, OffsetKey, OffsetValue, encode_group_value, encode_key,
    encode_offset_value)


def offset_record(group, topic, partition, value):
    return (encode_key(OffsetKey(group, topic, partition)),
            None if value is None else encode_offset_value(OffsetValue(value, "", 100)))


def group_record(group, members=(), generation=4):
    value = GroupValue("consumer", generation, "range" if members else None, members[0].member_id if members else None,
                       500, tuple(members))
    return encode_key(GroupKey(group)), encode_group_value(value)


MEMBER = MemberMetadata("m1", "c1", "/h", 60000, 10000, b"sub", b"assign", "static-1")


def test_the_last_record_of_a_key_wins_and_tombstones_delete():
    loaded = replay([
        offset_record("g", "t", 0, 5), offset_record("g", "t", 0, 9), offset_record("g", "t", 1, 3),
        offset_record("g", "t", 1, None), offset_record("h", "t", 0, 1), offset_record("h", "t", 0, None),
        group_record("g", [MEMBER]), group_record("gone"), (encode_key(GroupKey("gone")), None),
    ])
    assert {tp: o.offset for tp, o in loaded.offsets["g"].items()} == {("t", 0): 9}
    assert "h" not in loaded.offsets
    assert set(loaded.groups) == {"g"} and loaded.group_ids() == {"g"}


def test_a_bad_record_is_skipped_and_counted_never_raised():
    loaded = replay([(None, b"x"), (b"\x00\x07junk", b""), (b"\x00", None), offset_record("g", "t", 0, 2)])
    assert loaded.skipped == 3
    assert loaded.offsets["g"][("t", 0)].offset == 2


def test_a_group_with_members_loads_stable_with_fresh_sessions():
    loaded = replay([group_record("g", [MEMBER])])
    group = restore_group("g", loaded.groups["g"], now_ms=1_000)
    assert (group.state, group.generation_id, group.protocol_name, group.leader_id) == (S.STABLE, 4, "range", "m1")
    member = group.members["m1"]
    assert (member.assignment, member.metadata("range"), member.session_deadline_ms) == (b"assign", b"sub", 11_000)
    assert group.static_members == {"static-1": "m1"}


def test_groups_without_members_or_metadata_load_empty():
    empty = restore_group("g", replay([group_record("g")]).groups["g"], now_ms=0)
    assert (empty.state, empty.generation_id, empty.protocol_type) == (S.EMPTY, 4, "consumer")
    offsets_only = restore_group("o", None, now_ms=0)
    assert (offsets_only.state, offsets_only.protocol_type) == (S.EMPTY, None)
