import os

import pytest

from kafkactl.cluster.log.errors import CheckpointFormatError
from kafkactl.cluster.log.leader_epoch import (
    UNDEFINED_EPOCH,
    UNDEFINED_EPOCH_OFFSET,
    EpochEntry,
    LeaderEpochCache,
)


@pytest.fixture
def path(tmp_path):
    return os.path.join(tmp_path, "leader-epoch-checkpoint")


def cache_with(path, *entries):
    cache = LeaderEpochCache(path)
    for epoch, offset in entries:
        cache.assign(epoch, offset)
    return cache


def test_assign_is_written_later_in_kafka_format(path):
    cache = cache_with(path, (0, 0), (2, 10), (5, 30))
    assert not os.path.exists(path)          # noted only: written by the log's periodic task
    assert cache.write_if_dirty() and not cache.write_if_dirty()
    assert cache.take_unsynced() == path and cache.take_unsynced() is None
    with open(path) as file:
        assert file.read() == "0\n3\n0 0\n2 10\n5 30\n"
    assert LeaderEpochCache.load(path).entries == cache.entries
    assert cache.latest_epoch == 5


def test_assign_ignores_repeats_and_replaces_divergent_entries(path):
    cache = cache_with(path, (1, 0), (2, 10))
    assert not cache.assign(2, 15)  # same epoch, later offset: nothing new
    assert cache.assign(2, 8)  # same epoch starting earlier wins
    assert cache.entries == [EpochEntry(1, 0), EpochEntry(2, 8)]
    assert cache.assign(3, 5)  # an entry starting at or after the new one goes
    assert cache.entries == [EpochEntry(1, 0), EpochEntry(3, 5)]
    with pytest.raises(ValueError):
        cache.assign(-1, 0)


def test_end_offset_for_follows_offset_for_leader_epoch(path):
    cache = cache_with(path, (1, 0), (3, 10), (6, 25))
    log_end_offset = 40
    assert cache.end_offset_for(6, log_end_offset) == (6, 40)  # latest epoch: the LEO
    assert cache.end_offset_for(3, log_end_offset) == (3, 25)
    assert cache.end_offset_for(4, log_end_offset) == (3, 25)  # unknown epoch: the floor epoch
    assert cache.end_offset_for(0, log_end_offset) == (0, 0)  # below the first entry
    assert cache.end_offset_for(7, log_end_offset) == (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
    assert cache.end_offset_for(UNDEFINED_EPOCH, 40) == (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
    assert LeaderEpochCache(None).end_offset_for(1, 40) == (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)


def test_epoch_for_offset(path):
    cache = cache_with(path, (1, 5), (3, 10))
    assert [cache.epoch_for_offset(o) for o in (0, 5, 9, 10, 99)] == [None, 1, 1, 3, 3]


def test_truncate_from_end(path):
    cache = cache_with(path, (1, 0), (3, 10), (6, 25))
    cache.truncate_from_end(25)
    assert cache.entries == [EpochEntry(1, 0), EpochEntry(3, 10)]
    cache.truncate_from_end(11)
    assert cache.entries == [EpochEntry(1, 0), EpochEntry(3, 10)]
    assert LeaderEpochCache.load(path).entries == cache.entries


def test_truncate_from_start(path):
    cache = cache_with(path, (1, 0), (3, 10), (6, 25))
    cache.truncate_from_start(12)
    assert cache.entries == [EpochEntry(3, 12), EpochEntry(6, 25)]
    cache.truncate_from_start(25)
    assert cache.entries == [EpochEntry(6, 25)]
    cache.truncate_from_start(3)
    assert cache.entries == [EpochEntry(6, 25)]
    assert LeaderEpochCache.load(path).entries == [EpochEntry(6, 25)]


def test_load_rejects_bad_files(path):
    with open(path, "w") as file:
        file.write("0\n2\n3 10\n1 20\n")
    with pytest.raises(ValueError, match="does not follow"):
        LeaderEpochCache.load(path)
    with open(path, "w") as file:
        file.write("0\n1\n3\n")
    with pytest.raises(CheckpointFormatError):
        LeaderEpochCache.load(path)
    os.unlink(path)
    assert LeaderEpochCache.load(path).entries == []
