"""What a clean of a compacted log keeps (cluster/log/compaction.py), with
literal logs."""

import pytest

from kafkactl.cluster.log.compaction import (
    Candidate, RecordSummary, SegmentSummary, choose_log, cleanable, delete_horizon_ms, dirty_ratio,
    first_dirty_offset, first_uncleanable_offset, group_segments, keep_empty_batch, offset_map,
    offset_map_capacity, retains_tombstones, survives,
)

NOW = 1_000_000_000


def seg(base, size=100, newest=NOW - 3_600_000, modified=NOW - 3_600_000):
    return SegmentSummary(base, size, newest, modified)


def rec(offset, key, tombstone=False):
    return RecordSummary(offset, None if key is None else key.encode(), tombstone)


def test_nothing_at_or_above_the_active_segment_or_the_high_watermark_is_cleaned():
    segments = [seg(0), seg(10), seg(20)]
    assert first_uncleanable_offset(20, 100, segments, NOW, 0) == 20
    # the high watermark inside segment 10: that segment waits, whole
    assert first_uncleanable_offset(20, 15, segments, NOW, 0) == 10
    assert first_uncleanable_offset(20, 10, segments, NOW, 0) == 10


def test_segments_younger_than_the_compaction_lag_wait():
    segments = [seg(0, newest=NOW - 60_000), seg(10, newest=NOW - 1_000), seg(20)]
    assert first_uncleanable_offset(20, 100, segments, NOW, min_compaction_lag_ms=10_000) == 10
    assert first_uncleanable_offset(20, 100, segments, NOW, min_compaction_lag_ms=120_000) == 0


def test_a_log_is_due_when_its_dirty_ratio_is_reached():
    segments = [seg(0, size=600), seg(10, size=400), seg(20)]
    assert cleanable(segments, first_dirty_offset=10, first_uncleanable=20, now_ms=NOW,
                     min_cleanable_dirty_ratio=0.4, max_compaction_lag_ms=2 ** 63 - 1)
    assert not cleanable(segments, first_dirty_offset=10, first_uncleanable=20, now_ms=NOW,
                         min_cleanable_dirty_ratio=0.5, max_compaction_lag_ms=2 ** 63 - 1)


def test_an_old_dirty_record_forces_a_clean_whatever_the_ratio():
    segments = [seg(0, size=900), seg(10, size=100, newest=NOW - 7_200_000), seg(20)]
    assert cleanable(segments, 10, 20, NOW, min_cleanable_dirty_ratio=0.5, max_compaction_lag_ms=3_600_000)
    assert not cleanable(segments, 10, 20, NOW, min_cleanable_dirty_ratio=0.5, max_compaction_lag_ms=86_400_000)


def test_nothing_dirty_is_never_due():
    assert not cleanable([seg(0), seg(10)], 10, 10, NOW, 0.0, 0)


def test_the_latest_record_of_each_key_survives_and_offsets_keep_their_gaps():
    log = [rec(0, "a"), rec(1, "b"), rec(2, "a"), rec(3, "c"), rec(4, "b"), rec(5, "a")]
    latest = offset_map(log[2:])          # dirty section: offsets 2..5
    assert latest == {b"a": 5, b"c": 3, b"b": 4}
    kept = [r.offset for r in log if survives(r, latest, retain_tombstones=True)]
    assert kept == [3, 4, 5]


def test_a_key_only_in_the_clean_section_keeps_its_record():
    latest = offset_map([rec(5, "x")])
    assert survives(rec(1, "old-key"), latest, retain_tombstones=True)


def test_keyless_records_are_dropped():
    assert not survives(rec(7, None), {}, retain_tombstones=True)


def test_a_tombstone_is_kept_until_the_delete_horizon_passed_its_segment():
    latest = offset_map([rec(4, "a", tombstone=True)])
    tombstone = rec(4, "a", tombstone=True)
    assert not survives(rec(1, "a"), latest, retain_tombstones=True)     # the tombstone made it obsolete
    assert survives(tombstone, latest, retain_tombstones=True)
    assert not survives(tombstone, latest, retain_tombstones=False)


def test_the_delete_horizon_is_the_clean_sections_last_change_minus_delete_retention():
    clean = [seg(0, modified=NOW - 5 * 86_400_000), seg(10, modified=NOW - 2 * 86_400_000)]
    horizon = delete_horizon_ms(clean, delete_retention_ms=86_400_000)
    assert horizon == NOW - 3 * 86_400_000
    assert not retains_tombstones(seg(0, modified=NOW - 4 * 86_400_000), horizon)
    assert retains_tombstones(seg(20, modified=NOW - 1 * 86_400_000), horizon)
    assert retains_tombstones(seg(0, modified=0), delete_horizon_ms([], 86_400_000))   # no clean section yet


def test_an_emptied_batch_stays_when_it_is_its_producers_last():
    last = {7: 41, 9: 12}
    assert keep_empty_batch(7, 41, last)
    assert not keep_empty_batch(7, 30, last)
    assert not keep_empty_batch(-1, 41, last)          # not an idempotent producer's


def test_the_last_batch_of_a_group_always_stays_so_the_group_keeps_its_end():
    assert keep_empty_batch(-1, 41, {}, last_of_group=True)
    assert not keep_empty_batch(-1, 41, {}, last_of_group=False)


def test_segments_are_grouped_up_to_segment_bytes_and_one_index_span():
    segments = [(0, 400, 10), (10, 400, 20), (20, 300, 30), (30, 900, 40), (40, 100, 50)]
    assert group_segments(segments, max_bytes=1000) == [[0, 1], [2], [3, 4]]
    assert group_segments(segments, max_bytes=100) == [[0], [1], [2], [3], [4]]
    wide = [(0, 1, 10), (10, 1, 2**31 + 5)]          # the second ends beyond an int32 from 0
    assert group_segments(wide, max_bytes=1000) == [[0], [1]]


@pytest.mark.parametrize("checkpointed, expected", [
    (None, 5),        # never cleaned: from the log start
    (3, 5),           # below the log start offset (retention or DeleteRecords moved it)
    (40, 40),
    (101, 5),         # beyond the log end: truncated, or a new log of the same name
])
def test_the_first_dirty_offset(checkpointed, expected):
    assert first_dirty_offset(checkpointed, log_start_offset=5, log_end_offset=100) == expected


def test_the_offset_map_capacity_is_kafkas_24_bytes_a_key_at_90_percent_per_thread():
    assert offset_map_capacity(128 * 1024 * 1024, 1) == 5_033_164
    assert offset_map_capacity(128 * 1024 * 1024, 2) == 2_516_582


def test_the_log_past_its_max_lag_goes_first_then_the_dirtiest():
    segments = [seg(0, size=300), seg(10, size=100), seg(20)]
    assert dirty_ratio(segments, 10, 20) == 0.25
    assert dirty_ratio(segments, 20, 20) == 0.0
    a, b, c = Candidate("a-0", 0.9, False), Candidate("b-0", 0.6, False), Candidate("c-0", 0.1, True)
    assert choose_log([a, b]) == a
    assert choose_log([a, b, c]) == c
    assert choose_log([]) is None
