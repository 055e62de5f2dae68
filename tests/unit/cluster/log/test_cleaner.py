"""The cleaner's rounds (cleaner.py): which log it takes, its checkpoint, the high watermark it is given."""

import errno
import os

import pytest

from kafkactl.cluster.log import cleaner as cleaner_module
from kafkactl.cluster.log.checkpoint import OffsetCheckpointFile
from kafkactl.cluster.log.cleaner import CleanerConfig, LogCleaner
from kafkactl.cluster.log.config import LogConfig
from kafkactl.cluster.log.errors import LogDirFailedError
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


def test_a_thread_count_changes_within_half_and_double_of_the_current_one():
    from kafkactl.cluster.log.cleaner import reconfiguration_problem

    assert reconfiguration_problem(2, 2) is None
    assert [reconfiguration_problem(2, n) for n in (1, 3, 4)] == [None, None, None]
    assert reconfiguration_problem(2, 5) == "Log cleaner threads cannot be increased to more than double the current value 2"
    assert reconfiguration_problem(5, 1) == "Log cleaner threads cannot be reduced to less than half the current value 5"
    assert reconfiguration_problem(5, 2) is None           # 5 // 2 = 2, as Kafka's integer division
    assert reconfiguration_problem(1, 0) == "Log cleaner threads should be at least 1"
    assert reconfiguration_problem(0, 1) is not None       # from none, Kafka allows no growth either


def test_reconfigure_restarts_the_threads_with_the_new_count_and_rate(make_manager, dirs, clock):
    manager = make_manager([dirs[0]])
    manager.startup()
    log = manager.get_or_create_log("c", 0, COMPACT)
    cleaner = LogCleaner(manager, CleanerConfig(threads=1, backoff_ms=10), lambda t, p: log.log_end_offset, clock)
    cleaner.start()
    try:
        first = list(cleaner._threads)
        cleaner.reconfigure(CleanerConfig(threads=2, backoff_ms=10, io_max_bytes_per_second=5e6))
        assert not any(t.is_alive() for t in first)          # the old generation stopped
        assert cleaner.running_threads == 2 and cleaner._throttle.rate_bytes_per_s == 5e6
        fill(log)
        from support.waiting import wait_for
        wait_for(lambda: cleaner.cleans >= 1, 10, what="a clean by the new threads")
        cleaner.reconfigure(CleanerConfig(enable=False))
        assert cleaner.running_threads == 0
    finally:
        cleaner.stop()


def test_reconfigure_interrupts_a_throttled_clean_and_the_log_is_cleaned_after(make_manager, dirs, clock):
    """A clean crawling at 1 byte/s stops between two pieces when the rate is raised; the
    log stays as it was, and the new threads clean it."""
    manager = make_manager([dirs[0]])
    manager.startup()
    log = manager.get_or_create_log("c", 0, COMPACT)
    fill(log)
    before = (log.segment_base_offsets, log.size_bytes)
    cleaner = LogCleaner(manager, CleanerConfig(backoff_ms=10, io_max_bytes_per_second=1),
                         lambda t, p: log.log_end_offset, clock)
    cleaner.start()
    try:
        from support.waiting import wait_for
        wait_for(lambda: cleaner._in_progress, 10, what="a clean under way")
        assert cleaner.cleans == 0 and (log.segment_base_offsets, log.size_bytes) == before
        cleaner.reconfigure(CleanerConfig(backoff_ms=10))
        wait_for(lambda: cleaner.cleans >= 1, 10, what="the clean done by the new thread")
    finally:
        cleaner.stop()


def test_an_io_error_while_cleaning_takes_the_logs_dir_offline(make_manager, dirs, clock, monkeypatch):
    manager = make_manager([dirs[0], dirs[1]])
    manager.startup()
    fill(manager.get_or_create_log("c", 0, COMPACT))

    def no_space(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(cleaner_module, "clean_log", no_space)
    cleaner = LogCleaner(manager, CleanerConfig(enable=False), lambda t, p: manager.get_log(t, p).log_end_offset,
                         clock)
    cleaner.start()
    with pytest.raises(LogDirFailedError, match="cleaning of c-0"):
        cleaner.run_once()
    assert manager.failures.offline_dirs == {manager.dir_of("c", 0)}
