import pytest

from kafkactl.cluster.log.config import LogConfig
from kafkactl.cluster.log.errors import InvalidProducerEpochError, OutOfOrderSequenceError
from kafkactl.cluster.log.log import Log
from kafkactl.cluster.protocol.record_batch import build_batch

T = 1_700_000_000_000


def idempotent(sequence, count=3, producer_id=7, epoch=0):
    return build_batch([(None, b"v%d" % i, None, T) for i in range(count)],
                       producer_id=producer_id, producer_epoch=epoch, base_sequence=sequence)


@pytest.fixture
def log(tmp_path):
    log = Log.open(str(tmp_path / "t-0"), "t", 0, LogConfig(), lambda: T, 0, True)
    yield log
    if not log.closed:
        log.close()


def test_retry_gets_original_offsets_and_is_not_written(log):
    first = log.append_as_leader(idempotent(0), 0)
    log.append_as_leader(idempotent(3), 0)
    retry = log.append_as_leader(idempotent(0), 0)
    assert (retry.first_offset, retry.last_offset) == (first.first_offset, first.last_offset) == (0, 2)
    assert log.log_end_offset == 6


def test_sequence_gap_and_old_epoch_are_refused_without_writing(log):
    log.append_as_leader(idempotent(0), 0)
    with pytest.raises(OutOfOrderSequenceError):
        log.append_as_leader(idempotent(5), 0)
    log.append_as_leader(idempotent(0, epoch=1), 0)  # a new epoch restarts the sequence
    with pytest.raises(InvalidProducerEpochError):
        log.append_as_leader(idempotent(3, epoch=0), 0)
    assert log.log_end_offset == 6


def test_only_the_last_five_batches_are_remembered(log):
    for n in range(6):
        log.append_as_leader(idempotent(3 * n), 0)
    assert log.append_as_leader(idempotent(3), 0).first_offset == 3  # 2nd batch: still known
    with pytest.raises(OutOfOrderSequenceError):
        log.append_as_leader(idempotent(0), 0)  # 1st batch: forgotten, so out of order


def test_duplicates_are_caught_after_reopen_and_after_truncation(tmp_path):
    path = str(tmp_path / "t-0")
    log = Log.open(path, "t", 0, LogConfig(), lambda: T, 0, True)
    log.append_as_leader(idempotent(0), 0)
    log.append_as_leader(idempotent(3), 0)
    log.close()
    log = Log.open(path, "t", 0, LogConfig(), lambda: T, 0, False)
    assert log.append_as_leader(idempotent(3), 0).first_offset == 3
    log.truncate_to(3)
    assert log.append_as_leader(idempotent(3), 0).first_offset == 3  # cut, so written again
    assert log.log_end_offset == 6
    log.close()


def test_batches_without_producer_id_are_never_deduplicated(log):
    plain = build_batch([(None, b"v", None, T)])
    log.append_as_leader(plain, 0)
    log.append_as_leader(plain, 0)
    assert log.log_end_offset == 2
