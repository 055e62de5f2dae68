"""`__consumer_offsets` records in Kafka's key and value schemas
(cluster/coordinator/records.py): byte layouts written out by hand from the
schemas, every version read, bad records refused naming the field."""

import struct

import pytest

from kafkactl.cluster.coordinator.records import (
    GroupKey, GroupValue, MemberMetadata, OffsetKey, OffsetValue, RecordFormatError, decode_group_value,
    decode_key, decode_offset_value, encode_group_value, encode_key, encode_offset_value,
)


def s(text):
    return b"\xff\xff" if text is None else struct.pack(">h", len(text.encode())) + text.encode()


def i16(n):
    return struct.pack(">h", n)


def i32(n):
    return struct.pack(">i", n)


def i64(n):
    return struct.pack(">q", n)


def by(data):
    return i32(len(data)) + data


def test_offset_key_is_version_1_group_topic_partition():
    key = OffsetKey("g", "orders", 7)
    assert encode_key(key) == i16(1) + s("g") + s("orders") + i32(7)
    assert decode_key(encode_key(key)) == key
    assert decode_key(i16(0) + s("g") + s("orders") + i32(7)) == key      # version 0 reads the same


def test_group_key_is_version_2_group():
    assert encode_key(GroupKey("g")) == i16(2) + s("g")
    assert decode_key(i16(2) + s("g")) == GroupKey("g")


def test_offset_value_version_3_with_leader_epoch():
    value = OffsetValue(offset=42, metadata="m", commit_timestamp_ms=1_700_000_000_000, leader_epoch=5)
    encoded = encode_offset_value(value)
    assert encoded == i16(3) + i64(42) + i32(5) + s("m") + i64(1_700_000_000_000)
    assert decode_offset_value(encoded) == value


@pytest.mark.parametrize(("raw", "expected"), [
    (i16(0) + i64(9) + s("") + i64(100), OffsetValue(9, "", 100)),
    (i16(1) + i64(9) + s("x") + i64(100) + i64(200), OffsetValue(9, "x", 100, expire_timestamp_ms=200)),
    (i16(2) + i64(9) + s("x") + i64(100), OffsetValue(9, "x", 100)),
])
def test_older_offset_values_are_read(raw, expected):
    assert decode_offset_value(raw) == expected


MEMBER = MemberMetadata("m-1", "client", "/127.0.0.1", rebalance_timeout_ms=300_000, session_timeout_ms=45_000,
                        subscription=b"\x00\x01sub", assignment=b"\x00\x01asg", group_instance_id="static-1")


def test_group_value_version_3_layout():
    value = GroupValue("consumer", 4, "range", "m-1", 1_700_000_000_123, (MEMBER,))
    encoded = encode_group_value(value)
    assert encoded == (i16(3) + s("consumer") + i32(4) + s("range") + s("m-1") + i64(1_700_000_000_123) + i32(1)
                       + s("m-1") + s("static-1") + s("client") + s("/127.0.0.1") + i32(300_000) + i32(45_000)
                       + by(b"\x00\x01sub") + by(b"\x00\x01asg"))
    assert decode_group_value(encoded) == value


def test_an_empty_group_has_null_protocol_and_leader():
    value = GroupValue("consumer", 1, None, None, 5, ())
    assert decode_group_value(encode_group_value(value)) == value


def test_older_group_values_are_read():
    member_v0 = s("m-1") + s("client") + s("/h") + i32(10_000) + by(b"s") + by(b"a")
    v0 = i16(0) + s("consumer") + i32(2) + s("range") + s("m-1") + i32(1) + member_v0
    [member] = decode_group_value(v0).members
    assert (member.rebalance_timeout_ms, member.session_timeout_ms) == (10_000, 10_000)   # v0: the session's
    member_v1 = s("m-1") + s("client") + s("/h") + i32(60_000) + i32(10_000) + by(b"s") + by(b"a")
    v2 = i16(2) + s("consumer") + i32(2) + s("range") + s("m-1") + i64(77) + i32(1) + member_v1
    decoded = decode_group_value(v2)
    assert decoded.current_state_timestamp_ms == 77
    assert (decoded.members[0].rebalance_timeout_ms, decoded.members[0].session_timeout_ms) == (60_000, 10_000)
    assert decoded.members[0].group_instance_id is None


@pytest.mark.parametrize(("raw", "decode", "message"), [
    (i16(3) + s("g"), decode_key, "unknown version 3"),
    (i16(1) + s("g") + s("t"), decode_key, "partition runs past the end"),
    (i16(1) + i16(30_000) + b"g", decode_key, "group runs past the end"),
    (i16(2) + s("g") + b"\x00", decode_key, "1 bytes left over"),
    (i16(2) + b"\xff\xff", decode_key, "group is null"),
    (i16(3) + i64(1) + i32(0) + b"\xff\xfe", decode_offset_value, "metadata is null"),
    (i16(4) + i64(1), decode_offset_value, "unknown version 4"),
    (i16(2) + i64(1) + i16(1) + b"\xff" + i64(0), decode_offset_value, "metadata is not UTF-8"),
    (i16(3) + s("c") + i32(1) + s(None) + s(None) + i64(0) + i32(0x7FFFFFFF), decode_group_value,
     "members declares 2147483647 entries"),
    (i16(3) + s("c") + i32(1) + s(None) + s(None) + i64(0) + i32(-1), decode_group_value,
     "members declares -1 entries"),
])
def test_bad_records_are_refused_naming_the_field(raw, decode, message):
    with pytest.raises(RecordFormatError, match=message):
        decode(raw)


def test_a_member_whose_bytes_lie_about_their_length_is_refused():
    member = s("m") + s(None) + s("c") + s("h") + i32(1) + i32(1) + i32(1_000_000) + b"x"
    raw = i16(3) + s("c") + i32(1) + s("r") + s("m") + i64(0) + i32(1) + member
    with pytest.raises(RecordFormatError, match="subscription runs past the end"):
        decode_group_value(raw)
