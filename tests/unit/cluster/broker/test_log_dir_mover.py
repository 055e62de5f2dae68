"""The log dir mover's copy and swap, with real log files in a tmp dir and no processes.

A partition's log is copied into a future log in another dir while it keeps
growing, then swapped in; a crash is simulated at each step of the swap (the
manager is abandoned without its shutdown, as kill -9 would) and the dirs
are loaded again: nothing appended before the crash may be missing, and a
future log that is not complete is never taken for the partition's log.
"""

from __future__ import annotations

import glob
import os

import pytest

from kafkactl.cluster.broker.log_dir_mover import LogDirMover, copy_step, finish_move
from kafkactl.cluster.broker.partition import Partition
from kafkactl.cluster.log.config import LogConfig
from kafkactl.cluster.log.layout import FUTURE_COMPLETE_MARKER
from kafkactl.cluster.log.manager import LogDir, LogManager
from kafkactl.cluster.protocol.record_batch import build_batch

TOPIC = "orders"
SEGMENT_BYTES = 1024


class Clock:
    def __init__(self) -> None:
        self.now_ms = 1_000_000

    def __call__(self) -> int:
        return self.now_ms


class SimulatedCrash(Exception):
    pass


@pytest.fixture
def dirs(tmp_path):
    return [LogDir(str(tmp_path / "ssd0"), "ssd"), LogDir(str(tmp_path / "hdd0"), "hdd")]


@pytest.fixture
def managers(dirs):
    made = []

    def make(log_dirs=None):
        manager = LogManager(log_dirs or dirs, LogConfig(segment_bytes=SEGMENT_BYTES), Clock())
        manager.startup()
        made.append(manager)
        return manager

    yield make
    for manager in made:
        if manager._lock_files:
            manager.shutdown()


def abandon(manager: LogManager) -> None:
    """What kill -9 leaves: no flush, no checkpoints, no clean-shutdown marker; only the locks go."""
    for fd in manager._lock_files.values():
        os.close(fd)
    manager._lock_files.clear()


def append(log, count: int, first: int = 0) -> None:
    for i in range(first, first + count):
        log.append_as_leader(build_batch([(b"k%d" % i, b"value-%d" % i * 8, None, 1000 + i)]), 0)


def log_bytes(log_dir_path: str) -> bytes:
    """Every batch of a partition dir, in offset order (segment file names sort by base offset)."""
    return b"".join(open(path, "rb").read() for path in sorted(glob.glob(os.path.join(log_dir_path, "*.log"))))


def partition_with_data(manager: LogManager, batches: int = 40) -> Partition:
    log = manager.get_or_create_log(TOPIC, 0, preferred_media="ssd")
    append(log, batches)
    return Partition(TOPIC, 0, log, broker_id=1)


def start_move(manager: LogManager, partition: Partition, dirs) -> None:
    with partition.log_move_lock:
        partition.attach_future(manager.create_future_log(TOPIC, 0, os.path.abspath(dirs[1].path)))


def copy_until_caught_up(partition: Partition, max_bytes: int) -> int:
    steps = 0
    while not copy_step(partition, max_bytes).caught_up:
        steps += 1
    return steps


def test_a_log_of_several_segments_is_copied_while_it_grows_then_swapped(managers, dirs):
    manager = managers()
    partition = partition_with_data(manager)
    old_log = partition.log
    assert len(old_log.segment_base_offsets) > 3
    start_move(manager, partition, dirs)
    future_dir = manager.future_dir_of(TOPIC, 0)
    assert os.path.basename(partition.future_log.dir_path).startswith(f"{TOPIC}-0.")
    assert partition.future_log.dir_path.endswith("-future") and future_dir == os.path.abspath(dirs[1].path)

    for round_ in range(5):            # copy a little, append a little
        copy_step(partition, 300)
        append(old_log, 3, first=100 + 3 * round_)
    assert copy_until_caught_up(partition, 300) > 0
    append(old_log, 2, first=200)      # arrives between catching up and the swap
    expected, end_offset = log_bytes(old_log.dir_path), old_log.log_end_offset
    future_log = partition.future_log

    assert finish_move(manager, partition)
    new_log = partition.log
    assert new_log is future_log          # renamed in place, not reopened (no rescan during the swap)
    assert new_log is manager.get_log(TOPIC, 0) and new_log is not old_log and old_log.closed
    assert partition.future_log is None and manager.future_log(TOPIC, 0) is None
    assert manager.dir_of(TOPIC, 0) == os.path.abspath(dirs[1].path)
    assert new_log.dir_path == os.path.join(os.path.abspath(dirs[1].path), f"{TOPIC}-0")
    assert (new_log.log_start_offset, new_log.log_end_offset) == (0, end_offset)
    assert log_bytes(new_log.dir_path) == expected
    assert len(new_log.segment_base_offsets) > 3
    assert not os.path.exists(os.path.join(new_log.dir_path, FUTURE_COMPLETE_MARKER))
    assert glob.glob(os.path.join(dirs[0].path, f"{TOPIC}-0.*-delete"))   # purged after the delay
    assert not os.path.exists(os.path.join(dirs[0].path, f"{TOPIC}-0"))

    append(new_log, 1, first=300)       # the partition goes on in its new dir
    segments_before = len(new_log.segment_base_offsets)
    append(new_log, 40, first=400)      # enough to roll: new files go to the new dir too
    assert len(new_log.segment_base_offsets) > segments_before
    newest = new_log.segment_base_offsets[-1]
    for suffix in (".log", ".index", ".timeindex"):
        assert os.path.exists(os.path.join(new_log.dir_path, f"{newest:020d}{suffix}")), suffix
    assert not glob.glob(os.path.join(dirs[1].path, "*-future"))     # nothing written under the old name
    expected = log_bytes(new_log.dir_path)
    manager.shutdown()
    reloaded = managers()
    assert reloaded.dir_of(TOPIC, 0) == os.path.abspath(dirs[1].path)
    assert log_bytes(reloaded.get_log(TOPIC, 0).dir_path) == expected
    assert reloaded.get_log(TOPIC, 0).log_end_offset == end_offset + 41


def test_truncation_of_the_current_log_reaches_the_future_log(managers, dirs):
    manager = managers()
    partition = partition_with_data(manager, batches=20)
    start_move(manager, partition, dirs)
    copy_until_caught_up(partition, 10_000)
    partition.follower_truncate_to(12)
    assert partition.future_log.log_end_offset == 12
    append(partition.log, 5, first=500)     # different batches at the same offsets
    copy_until_caught_up(partition, 10_000)
    expected = log_bytes(partition.log.dir_path)
    assert finish_move(manager, partition)
    assert log_bytes(partition.log.dir_path) == expected


def test_the_swap_carries_the_log_start_offset_and_epochs_without_batches(managers, dirs):
    manager = managers()
    partition = partition_with_data(manager, batches=20)
    partition.log.maybe_increment_log_start_offset(7)
    partition.log.maybe_assign_epoch_start_offset(3, 20)   # a new leader epoch, nothing appended in it yet
    start_move(manager, partition, dirs)
    copy_until_caught_up(partition, 10_000)
    assert finish_move(manager, partition)
    assert partition.log.log_start_offset == 7
    assert partition.log.latest_epoch == 3
    assert partition.log.end_offset_for_epoch(0) == (0, 20)


def test_retention_overtaking_the_copy_restarts_it_at_the_new_start(managers, dirs):
    manager = managers()
    partition = partition_with_data(manager, batches=40)
    start_move(manager, partition, dirs)
    copy_step(partition, 200)
    first_kept = partition.log.segment_base_offsets[3]
    partition.log.maybe_increment_log_start_offset(first_kept)
    partition.log.delete_retained_segments()
    copy_until_caught_up(partition, 300)
    assert finish_move(manager, partition)
    assert partition.log.log_start_offset == first_kept
    assert partition.log.segment_base_offsets[0] == first_kept


STEPS = ("mark-complete", "retire-current", "promote-future")


@pytest.mark.parametrize("step", STEPS)
def test_a_crash_at_each_step_of_the_swap_loses_nothing(managers, dirs, step):
    manager = managers()
    partition = partition_with_data(manager)
    start_move(manager, partition, dirs)
    copy_until_caught_up(partition, 500)
    expected, end_offset = log_bytes(partition.log.dir_path), partition.log.log_end_offset

    def crash(at: str) -> None:
        if at == step:
            raise SimulatedCrash(at)

    with pytest.raises(SimulatedCrash):
        finish_move(manager, partition, fault=crash)
    abandon(manager)

    reloaded = managers()
    log = reloaded.get_log(TOPIC, 0)
    assert log.log_end_offset == end_offset
    assert log_bytes(log.dir_path) == expected
    ssd, hdd = (os.path.abspath(d.path) for d in dirs)
    if step == "mark-complete":
        # The current dir was never renamed: it stays authoritative; the copy resumes.
        assert reloaded.dir_of(TOPIC, 0) == ssd
        future = reloaded.future_log(TOPIC, 0)
        assert future is not None and reloaded.future_dir_of(TOPIC, 0) == hdd
        assert not os.path.exists(os.path.join(future.dir_path, FUTURE_COMPLETE_MARKER))
        resumed = Partition(TOPIC, 0, log, broker_id=1)
        resumed.attach_future(future)
        copy_until_caught_up(resumed, 500)
        assert finish_move(reloaded, resumed)
        assert log_bytes(resumed.log.dir_path) == expected
    else:
        assert reloaded.dir_of(TOPIC, 0) == hdd
        assert reloaded.future_log(TOPIC, 0) is None
        assert not os.path.exists(os.path.join(log.dir_path, FUTURE_COMPLETE_MARKER))
    assert not [n for d in dirs for n in os.listdir(d.path) if n.endswith(("-future", "-delete"))] \
        or step == "mark-complete"


def test_a_crash_in_the_middle_of_the_copy_resumes_it(managers, dirs):
    manager = managers()
    partition = partition_with_data(manager)
    start_move(manager, partition, dirs)
    for _ in range(3):
        copy_step(partition, 400)
    copied_to = partition.future_log.log_end_offset
    assert 0 < copied_to < partition.log.log_end_offset
    partition.future_log.flush()
    abandon(manager)

    reloaded = managers()
    log, future = reloaded.get_log(TOPIC, 0), reloaded.future_log(TOPIC, 0)
    assert reloaded.dir_of(TOPIC, 0) == os.path.abspath(dirs[0].path)
    assert future is not None and future.log_end_offset == copied_to
    resumed = Partition(TOPIC, 0, log, broker_id=1)
    resumed.attach_future(future)
    copy_until_caught_up(resumed, 400)
    expected = log_bytes(log.dir_path)
    assert finish_move(reloaded, resumed)
    assert log_bytes(resumed.log.dir_path) == expected


def test_an_incomplete_future_log_is_never_taken_for_the_current_one(managers, dirs):
    manager = managers()
    partition = partition_with_data(manager)
    start_move(manager, partition, dirs)
    copy_step(partition, 400)
    partition.future_log.flush()
    abandon(manager)
    # Started without the source dir (say it was dropped from log.dirs): the
    # partial copy is all there is of the partition, and it must not pass
    # for a complete log.
    reloaded = managers([dirs[1]])
    assert reloaded.get_log(TOPIC, 0) is None and reloaded.future_log(TOPIC, 0) is None
    assert not [n for n in os.listdir(dirs[1].path) if n.startswith(f"{TOPIC}-0")]


def test_deleting_a_partition_removes_its_future_log_first(managers, dirs):
    manager = managers()
    partition = partition_with_data(manager, batches=5)
    start_move(manager, partition, dirs)
    copy_step(partition, 400)
    assert manager.delete_log(TOPIC, 0)
    assert manager.future_log(TOPIC, 0) is None
    assert not [n for n in os.listdir(dirs[1].path) if n.endswith("-future")]


def test_a_new_log_goes_to_the_remembered_dir(managers, dirs):
    manager = managers()
    hdd = os.path.abspath(dirs[1].path)
    assert manager.configured_dir(dirs[1].path + "/") == hdd
    assert manager.configured_dir("/nowhere") is None and manager.configured_dir("relative") is None
    manager.maybe_update_preferred_log_dir(TOPIC, 3, hdd)
    manager.get_or_create_log(TOPIC, 3, preferred_media="ssd")
    assert manager.dir_of(TOPIC, 3) == hdd
    assert manager.preferred_dir_of(TOPIC, 3) is None   # used once


class FakeReplicaManager:
    def __init__(self, partition: Partition) -> None:
        self.partition = partition

    def get(self, topic: str, index: int):
        return self.partition if (topic, index) == (self.partition.topic, self.partition.index) else None


def test_the_mover_moves_a_partition_in_chunks(managers, dirs):
    manager = managers()
    partition = partition_with_data(manager)
    start_move(manager, partition, dirs)
    expected = log_bytes(partition.log.dir_path)
    mover = LogDirMover(FakeReplicaManager(partition), manager, chunk_bytes=256)
    rounds = 0
    while manager.future_log(TOPIC, 0) is not None:
        assert mover.run_once()
        rounds += 1
        assert rounds < 1000
    assert rounds > 3
    assert manager.dir_of(TOPIC, 0) == os.path.abspath(dirs[1].path)
    assert log_bytes(partition.log.dir_path) == expected
    assert not mover.run_once()    # nothing left to move


def test_the_mover_thread_stops_promptly_while_throttled(managers, dirs):
    manager = managers()
    partition = partition_with_data(manager)
    start_move(manager, partition, dirs)
    mover = LogDirMover(FakeReplicaManager(partition), manager, rate_bytes_per_s=100, chunk_bytes=256)
    mover.start()
    import time
    time.sleep(0.3)
    started = time.monotonic()
    mover.stop(timeout_s=5)
    assert time.monotonic() - started < 2
    assert manager.future_log(TOPIC, 0) is not None    # far from done at 100 B/s
