"""Lag and reset plans, computed as kafka-consumer-groups.sh computes them."""

import pytest

from kafkactl.cluster.admin.group_offsets import (
    EARLIEST, FROM_FILE, LATEST, SHIFT_BY, TO_OFFSET, TO_TIMESTAMP, LogRange, PartitionLag, ResetError, ResetRow,
    ResetSpec, TopicScope, lag, offsets_csv, parse_offsets_csv, parse_topic_scope, partition_lags, plan_reset,
    select_partitions, total_lag,
)


def test_lag_is_log_end_minus_committed_and_unknown_without_either():
    assert lag(40, 100) == 60
    assert lag(100, 100) == 0
    assert lag(-1, 100) is None        # -1 on the wire: nothing committed
    assert lag(None, 100) is None
    assert lag(40, None) is None       # the leader did not answer


def test_partition_rows_cover_committed_and_assigned_partitions():
    rows = partition_lags(committed={("t", 0): 5, ("t", 1): -1, ("old", 0): 7},
                          assigned={("t", 1): "m-1", ("t", 0): "m-2"},
                          log_ends={("t", 0): 9, ("t", 1): 3, ("old", 0): None})
    assert rows == [
        PartitionLag("old", 0, 7, None, None, None),
        PartitionLag("t", 0, 5, 9, 4, "m-2"),
        PartitionLag("t", 1, None, 3, None, "m-1"),
    ]
    assert total_lag(rows) == 4


def test_topic_scopes_in_kafkas_syntax():
    assert parse_topic_scope("orders") == TopicScope("orders", None)
    assert parse_topic_scope("orders:2,0,2") == TopicScope("orders", (0, 2))
    for bad, fragment in (("orders:a", "must be numbers"), (":1", "no topic"), ("t:-1", "not negative"),
                          ("t:", "must be numbers")):
        with pytest.raises(ResetError, match=fragment):
            parse_topic_scope(bad)


def test_selected_partitions_are_checked_against_the_topics():
    counts = {"a": 3, "b": 1, "gone": None}
    assert select_partitions([TopicScope("a", None), TopicScope("b", (0,))], counts) == [
        ("a", 0), ("a", 1), ("a", 2), ("b", 0)]
    with pytest.raises(ResetError, match="partition 3 does not exist"):
        select_partitions([TopicScope("a", (0, 3))], counts)
    with pytest.raises(ResetError, match="'gone': topic does not exist"):
        select_partitions([TopicScope("gone", None)], counts)
    with pytest.raises(ResetError, match="'nope': topic does not exist"):
        select_partitions([TopicScope("nope", None)], counts)


RANGES = {("t", 0): LogRange(10, 100), ("t", 1): LogRange(0, 5)}
COMMITTED = {("t", 0): 50, ("t", 1): 5}


def new_offsets(spec, committed=COMMITTED, by_time=None):
    return [row.new for row in plan_reset(sorted(RANGES), spec, committed, RANGES, by_time)]


def test_earliest_and_latest():
    assert new_offsets(ResetSpec(EARLIEST)) == [10, 0]
    assert new_offsets(ResetSpec(LATEST)) == [100, 5]


def test_a_given_offset_is_clamped_into_the_log():
    assert new_offsets(ResetSpec(TO_OFFSET, 3)) == [10, 3]
    assert new_offsets(ResetSpec(TO_OFFSET, 70)) == [70, 5]


def test_shift_moves_the_committed_offset_and_is_clamped():
    assert new_offsets(ResetSpec(SHIFT_BY, -45)) == [10, 0]
    assert new_offsets(ResetSpec(SHIFT_BY, 20)) == [70, 5]
    with pytest.raises(ResetError, match="cannot shift the offset of partition t:1"):
        new_offsets(ResetSpec(SHIFT_BY, 1), committed={("t", 0): 50, ("t", 1): -1})


def test_a_time_with_no_record_that_recent_goes_to_the_log_end():
    assert new_offsets(ResetSpec(TO_TIMESTAMP, 1_600_000_000_000), by_time={("t", 0): 42, ("t", 1): -1}) == [42, 5]


def test_file_offsets_are_clamped():
    spec = ResetSpec(FROM_FILE, file_offsets={("t", 0): 0, ("t", 1): 4})
    assert new_offsets(spec) == [10, 4]


def test_the_plan_shows_the_current_offset_and_refuses_unknown_log_offsets():
    rows = plan_reset([("t", 1)], ResetSpec(EARLIEST), {("t", 1): -1}, RANGES)
    assert rows == [ResetRow("t", 1, None, 0)]
    with pytest.raises(ResetError, match="partition t:0: its leader did not give"):
        plan_reset([("t", 0)], ResetSpec(LATEST), COMMITTED, {("t", 0): LogRange(0, None)})


def test_csv_in_both_of_kafkas_layouts():
    assert parse_offsets_csv("t,0,5\nt,1,7\n\n", "g") == {("t", 0): 5, ("t", 1): 7}
    text = "g,t,0,5\nother,t,0,9\ng,u,3,1\n"
    assert parse_offsets_csv(text, "g") == {("t", 0): 5, ("u", 3): 1}


@pytest.mark.parametrize("text, fragment", [
    ("t,0\n", "line 1: expected topic,partition,offset"),
    ("t,0,5\nt,x,5\n", "line 2: partition and offset must be numbers"),
    ("t,0,-3\n", "not negative"),
    ("other,t,0,5\n", "no offsets for group 'g'"),
    ("", "no offsets for group 'g'"),
])
def test_bad_csv(text, fragment):
    with pytest.raises(ResetError, match=fragment):
        parse_offsets_csv(text, "g")


def test_export_is_what_the_file_option_reads():
    rows = [ResetRow("t", 0, 3, 10), ResetRow("t", 1, None, 0)]
    assert offsets_csv(rows) == "t,0,10\nt,1,0\n"
    assert parse_offsets_csv(offsets_csv(rows), "g") == {("t", 0): 10, ("t", 1): 0}
