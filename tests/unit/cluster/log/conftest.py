import os

import pytest

from kafkactl.cluster.log.config import LogConfig
from kafkactl.cluster.log.log import Log
from kafkactl.cluster.protocol.record_batch import build_batch


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
