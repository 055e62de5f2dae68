"""Consumer protocol bytes from DescribeGroups: decoded when well formed,
refused (never a crash or a huge allocation) when not."""

import pytest

from kafkactl.cluster.admin.consumer_protocol import (
    MalformedProtocolData, decode_assignment, decode_subscription, describe_assignment, encode_assignment,
)

# Assignment v0: version 0, one topic "t" with partitions 0 and 2, null user data.
V0 = bytes.fromhex("0000" "00000001" "0001" "74" "00000002" "00000000" "00000002" "ffffffff")


def test_v0_from_literal_bytes():
    assignment = decode_assignment(V0)
    assert (assignment.version, assignment.partitions, assignment.user_data_bytes) == (0, {"t": [0, 2]}, -1)


def test_v3_with_user_data_and_two_topics():
    data = bytes.fromhex("0003" "00000002" "0001" "61" "00000001" "00000005"
                         "0002" "6262" "00000000" "00000003" "010203")
    assignment = decode_assignment(data)
    assert assignment.version == 3
    assert assignment.partitions == {"a": [5], "bb": []}
    assert assignment.user_data_bytes == 3


def test_a_newer_version_with_trailing_fields_reads_the_known_prefix():
    assert decode_assignment(V0 + b"\x00\x00\x00\x07more").partitions == {"t": [0, 2]}


def test_old_clients_that_omit_user_data_are_read():
    assert decode_assignment(V0[:-4]).user_data_bytes == -1


def test_encode_is_what_decode_reads():
    data = encode_assignment({"orders": [3, 1], "audit": [0]}, version=1, user_data=b"xy")
    assert decode_assignment(data).partitions == {"orders": [3, 1], "audit": [0]}
    assert decode_assignment(data).user_data_bytes == 2


@pytest.mark.parametrize("data, fragment", [
    (b"", "2 bytes wanted"),
    (bytes.fromhex("0000" "7fffffff"), "array of 2147483647 items"),      # a count the bytes cannot hold
    (bytes.fromhex("0000" "ffffffff"), "array of -1 items"),
    (bytes.fromhex("0000" "00000001" "0009" "6162636465"), "9 bytes wanted"),  # topic longer than the data
    (bytes.fromhex("0000" "00000001" "ffff" "00000000"), "null string"),
    (bytes.fromhex("0000" "00000001" "0001" "ff" "00000000"), "not UTF-8"),
    (bytes.fromhex("ffff"), "version -1"),
    (bytes.fromhex("0000" "00000000" "00000009" "00"), "9 bytes wanted"),  # user data cut short
])
def test_malformed_bytes_are_refused(data, fragment):
    with pytest.raises(MalformedProtocolData, match=fragment):
        decode_assignment(data)


def test_subscription_topics():
    data = bytes.fromhex("0001" "00000002" "0001" "78" "0002" "797a" "ffffffff" "00000000")
    assert decode_subscription(data).topics == ["x", "yz"]


def test_describe_assignment_for_output():
    assert describe_assignment("consumer", V0) == {"decoded": True, "size_bytes": 25, "version": 0,
                                                   "partitions": {"t": [0, 2]}}
    # Connect workers and others use their own bytes: only the size is shown.
    assert describe_assignment("connect", b"\x00\x01abc") == {"decoded": False, "size_bytes": 5, "partitions": {}}
    broken = describe_assignment("consumer", b"\x00\x00\x7f\xff\xff\xff")
    assert broken["decoded"] is False and "array of" in broken["error"]
    assert describe_assignment("consumer", b"")["size_bytes"] == 0
