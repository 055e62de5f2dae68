"""Typed errors of the log layer, each carrying its Kafka wire error code."""

from kio.schema.errors import ErrorCode

from kafkactl.cluster.errors import KafkaError


class LogError(KafkaError):
    """Base of the log layer's errors; `error_code` is the Kafka error code."""

    error_code = ErrorCode.unknown_server_error


class OffsetOutOfRangeError(LogError):
    """A fetch or lookup offset outside [log_start_offset, log_end_offset]."""

    error_code = ErrorCode.offset_out_of_range

    def __init__(self, message: str, log_start_offset: int, log_end_offset: int) -> None:
        super().__init__(message)
        self.log_start_offset = log_start_offset
        self.log_end_offset = log_end_offset


class KafkaStorageError(LogError):
    """The files of a log or log dir cannot be trusted or used."""

    error_code = ErrorCode.kafka_storage_error


class LogClosedError(KafkaStorageError):
    """An operation on a log that was closed or deleted."""


class LogDirFailedError(KafkaStorageError):
    """An I/O error in a log dir, which took the dir offline (dir_failures.py)."""


class CheckpointFormatError(KafkaStorageError):
    """A checkpoint file that does not follow the format; names file and line."""

    def __init__(self, path: str, line_number: int, reason: str) -> None:
        super().__init__(f"{path}:{line_number}: {reason}")
        self.path = path
        self.line_number = line_number


class LogDirLockedError(KafkaStorageError):
    """Another process (or manager) holds the log dir's `.lock`."""


class UnexpectedAppendOffsetError(LogError):
    """A follower append starting below the log end offset.

    Not a wire error: the replica fetcher must truncate and refetch.
    """

    def __init__(self, message: str, first_offset: int, log_end_offset: int) -> None:
        super().__init__(message)
        self.first_offset = first_offset
        self.log_end_offset = log_end_offset


class OffsetsOutOfOrderError(LogError):
    """Batches of a follower append whose offsets do not strictly increase."""


class CorruptIndexError(KafkaStorageError):
    """An offset or time index that fails its sanity check; recovery rebuilds it."""


class OutOfOrderSequenceError(LogError):
    """An idempotent producer's batch does not follow its previous one."""

    error_code = ErrorCode.out_of_order_sequence_number


class InvalidProducerEpochError(LogError):
    """A batch from an older epoch of a producer that has moved on."""

    error_code = ErrorCode.invalid_producer_epoch
