import os

import pytest

from kafkactl.cluster.log.config import LogConfig
from kafkactl.cluster.log.log import Log
from kafkactl.cluster.log.manager import LogDir, LogManager
from kafkactl.cluster.protocol.record_batch import build_batch, validate_batches


class Clock:
    def __init__(self, now_ms: int = 1_000_000) -> None:
        self.now_ms = now_ms

    def __call__(self) -> int:
        return self.now_ms

    def advance(self, ms: int) -> None:
        self.now_ms += ms


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def partition_dir(tmp_path):
    return os.path.join(tmp_path, "orders-0")


@pytest.fixture
def open_log(partition_dir, clock):
    opened = []

    def open_(config=None, recovery_point=0, clean_shutdown=False, log_start_offset=None):
        log = Log.open(partition_dir, "orders", 0, config or LogConfig(), clock, recovery_point,
                       clean_shutdown, log_start_offset)
        opened.append(log)
        return log

    yield open_
    for log in opened:
        log.close()


def records(count: int, timestamp_ms: int, size: int = 10):
    """`count` records, timestamps timestamp_ms, timestamp_ms+1, ..."""
    return [(b"k%d" % i, b"v" * size, None, timestamp_ms + i) for i in range(count)]


def batch_of(count: int = 1, timestamp_ms: int = 0, size: int = 10, **kwargs) -> bytes:
    return build_batch(records(count, timestamp_ms, size), **kwargs)


@pytest.fixture
def make_batch():
    return batch_of


def read_offsets(fetch):
    """Every record offset in a FetchSlice, checking the bytes are whole valid batches."""
    data = fetch.region.read_bytes()
    result = []
    for header in validate_batches(data, 1 << 30, strict_counts=False):
        result.extend(range(header.base_offset, header.next_offset))
    return result


def fill_log(log, make_batch, batches, records_per_batch=2, timestamp_ms=0, epoch=0):
    """Append `batches` batches as leader, their timestamps increasing."""
    infos = []
    for i in range(batches):
        infos.append(log.append_as_leader(
            make_batch(records_per_batch, timestamp_ms + i * records_per_batch), epoch))
    return infos


def append_batches(log, make_batch, batches=1, records=2, timestamp_ms=0):
    """Append `batches` batches as leader, all at `timestamp_ms`."""
    for _ in range(batches):
        log.append_as_leader(make_batch(records, timestamp_ms=timestamp_ms), 0)


@pytest.fixture
def offsets_of():
    return read_offsets


@pytest.fixture
def fill():
    return fill_log


@pytest.fixture
def append():
    return append_batches


# --- log managers -------------------------------------------------------------------

@pytest.fixture
def dirs(tmp_path):
    return [LogDir(os.path.join(tmp_path, name), media)
            for name, media in (("ssd-a", "ssd"), ("ssd-b", "ssd"), ("hdd-a", "hdd"))]


@pytest.fixture
def make_manager(dirs, clock):
    """LogManager(log_dirs or dirs, config or LogConfig(), clock); shut down at the end if still running."""
    managers = []

    def make(log_dirs=None, config=None):
        manager = LogManager(log_dirs or dirs, config or LogConfig(), clock)
        managers.append(manager)
        return manager

    yield make
    for manager in managers:
        if manager._lock_files:
            manager.shutdown()


def abandon(manager):
    """Drop a manager without its shutdown, as a crash would: only the dir locks go."""
    for fd in manager._lock_files.values():
        os.close(fd)
    manager._lock_files.clear()


@pytest.fixture
def crash():
    return abandon
