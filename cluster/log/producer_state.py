"""Idempotent producers: sequence checks and duplicate detection per partition.

An idempotent producer numbers its batches per partition (producer id,
producer epoch, base sequence). When a response is lost the producer sends
the same batch again; the leader must recognise it and answer with the
offsets it already assigned instead of appending it twice. Like Kafka, the
state keeps the metadata of each producer's last five batches (a producer
has at most five requests in flight), and it is rebuilt from the batch
headers in the log when the log is opened or truncated, so a retry after a
broker restart is caught too.

Pure logic over batch headers; the Log calls it under its lock.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from kafkactl.cluster.log.errors import InvalidProducerEpochError, OutOfOrderSequenceError
from kafkactl.cluster.protocol.record_batch import BatchHeader

NO_PRODUCER_ID = -1
MAX_CACHED_BATCHES = 5
INT32_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    first_sequence: int
    last_sequence: int
    first_offset: int
    last_offset: int
    max_timestamp: int


@dataclass(slots=True)
class ProducerEntry:
    producer_epoch: int
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=MAX_CACHED_BATCHES))

    def duplicate_of(self, first_sequence: int, last_sequence: int) -> BatchMetadata | None:
        for batch in self.batches:
            if (batch.first_sequence, batch.last_sequence) == (first_sequence, last_sequence):
                return batch
        return None

    @property
    def last_sequence(self) -> int:
        return self.batches[-1].last_sequence if self.batches else -1


def last_sequence_of(header: BatchHeader) -> int:
    # Sequences wrap at INT32_MAX, like the producer's.
    return (header.base_sequence + header.last_offset_delta) % (INT32_MAX + 1)


def next_sequence(sequence: int) -> int:
    return 0 if sequence == INT32_MAX else sequence + 1


class ProducerStateManager:
    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}

    def check(self, headers: list[BatchHeader]) -> BatchMetadata | None:
        """Validate a produce payload's batches before anything is written.

        Returns the stored metadata when a batch is a retry of one already in
        the log (the whole payload is then a duplicate and must not be
        appended); raises OutOfOrderSequenceError or InvalidProducerEpochError.
        """
        staged: dict[int, ProducerEntry] = {}
        for header in headers:
            if header.producer_id == NO_PRODUCER_ID:
                continue
            entry = staged.get(header.producer_id) or self._copy(header.producer_id)
            duplicate = self._check_batch(entry, header)
            if duplicate is not None:
                return duplicate
            entry.batches.append(_metadata(header))
            staged[header.producer_id] = entry
        return None

    def _copy(self, producer_id: int) -> ProducerEntry | None:
        entry = self.producers.get(producer_id)
        if entry is None:
            return ProducerEntry(producer_epoch=-1)
        return ProducerEntry(entry.producer_epoch, deque(entry.batches, maxlen=MAX_CACHED_BATCHES))

    @staticmethod
    def _check_batch(entry: ProducerEntry, header: BatchHeader) -> BatchMetadata | None:
        if header.producer_epoch < entry.producer_epoch:
            raise InvalidProducerEpochError(
                f"producer {header.producer_id}: epoch {header.producer_epoch} is older than "
                f"{entry.producer_epoch}")
        if header.producer_epoch > entry.producer_epoch:
            # A new epoch (or a producer we have no state for, e.g. after
            # retention removed its batches) starts a fresh sequence.
            entry.producer_epoch = header.producer_epoch
            entry.batches.clear()
            return None
        duplicate = entry.duplicate_of(header.base_sequence, last_sequence_of(header))
        if duplicate is not None:
            return duplicate
        expected = next_sequence(entry.last_sequence)
        if entry.batches and header.base_sequence != expected:
            raise OutOfOrderSequenceError(
                f"producer {header.producer_id}: sequence {header.base_sequence}, expected {expected}")
        return None

    def update(self, headers: list[BatchHeader]) -> None:
        """Record batches that were appended (offsets assigned), leader or follower."""
        for header in headers:
            if header.producer_id == NO_PRODUCER_ID:
                continue
            entry = self.producers.get(header.producer_id)
            if entry is None or header.producer_epoch > entry.producer_epoch:
                entry = ProducerEntry(header.producer_epoch)
                self.producers[header.producer_id] = entry
            if header.producer_epoch == entry.producer_epoch:
                entry.batches.append(_metadata(header))

    def clear(self) -> None:
        self.producers.clear()


def _metadata(header: BatchHeader) -> BatchMetadata:
    return BatchMetadata(
        first_sequence=header.base_sequence,
        last_sequence=last_sequence_of(header),
        first_offset=header.base_offset,
        last_offset=header.last_offset,
        max_timestamp=header.max_timestamp,
    )
