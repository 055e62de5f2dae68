"""The cleaner's rounds (cleaner.py): which log it takes, its checkpoint, the high watermark it is given."""

import os

from kafkactl.cluster.log.checkpoint import OffsetCheckpointFile
from kafkactl.cluster.log.cleaner import CleanerConfig, LogCleaner
from kafkactl.cluster.log.config import LogConfig
from kafkactl.cluster.log.layout import CLEANER_OFFSET_CHECKPOINT
from kafkactl.cluster.protocol.record_batch import build_batch

COMPACT = LogConfig(segment_bytes=300, cleanup_policy="compact", min_cleanable_dirty_ratio=0.5)


def fill(log, rounds=6):
    for r in range(rounds):
        log.append_as_leader(build_batch([(b"k%d" % k, b"v%d" % r, None, 0) for k in range(5)]), 0)


def test_a_round_cleans_the_due_compacted_log_and_checkpoints_where_it_ended(make_manager, dirs, clock):
    manager = make_manager([dirs[0]])
    manager.startup()
    compacted = manager.get_or_create_log("c", 0, COMPACT)
    plain = manager.get_or_create_log("d", 0, LogConfig(segment_bytes=300))
    fill(compacted)
    fill(plain)
    cleaner = LogCleaner(manager, CleanerConfig(enable=False), lambda t, p: manager.get_log(t, p).log_end_offset,
                         clock)
    cleaner.start()
    result = cleaner.run_once()
    assert result is not None and result.end_offset == compacted.active_segment_base_offset
    assert cleaner.run_once() is None                     # nothing dirty left; the delete-only log is never due
    path = os.path.join(dirs[0].path, CLEANER_OFFSET_CHECKPOINT)
    assert OffsetCheckpointFile(path).read() == {("c", 0): result.end_offset}
    restarted = LogCleaner(manager, CleanerConfig(enable=False), lambda t, p: 0, clock)
    restarted.start()
    assert restarted.first_dirty_offsets() == {("c", 0): result.end_offset}


def test_a_partition_not_hosted_or_below_its_high_watermark_waits(make_manager, dirs, clock):
    manager = make_manager([dirs[0]])
    manager.startup()
    fill(manager.get_or_create_log("c", 0, COMPACT))
    assert LogCleaner(manager, CleanerConfig(enable=False), lambda t, p: None, clock).run_once() is None
    assert LogCleaner(manager, CleanerConfig(enable=False), lambda t, p: 0, clock).run_once() is None


def test_the_threads_clean_on_their_own_and_stop(make_manager, dirs, clock):
    manager = make_manager([dirs[0]])
    manager.startup()
    log = manager.get_or_create_log("c", 0, COMPACT)
    fill(log)
    cleaner = LogCleaner(manager, CleanerConfig(threads=2, backoff_ms=10), lambda t, p: log.log_end_offset, clock)
    cleaner.start()
    try:
        from support.waiting import wait_for
        wait_for(lambda: cleaner.cleans >= 1, 10, what="a clean by the cleaner's threads")
    finally:
        cleaner.stop()
