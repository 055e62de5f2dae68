"""Consumer group offsets without the network: lag, and reset plans.

Lag is Kafka's: the partition's log end offset (what a consumer can read:
ListOffsets "latest", the high watermark) minus the group's committed
offset; unknown when either is unknown (no commit yet, or no leader
answered). A group's total lag sums the lags that are known.

A reset plan says, per partition, the committed offset now and the offset to
commit, computed as kafka-consumer-groups.sh computes it:
- earliest / latest: the log start / end offset;
- an offset, a shift of the committed offset, or a file's offsets: clamped
  into [log start, log end];
- a time: the first offset whose timestamp is at or after it (ListOffsets by
  timestamp), or the log end offset when no record is that recent.
Shifting needs a committed offset: a partition without one is an error, as in
Kafka's tool.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

TopicPartition = tuple[str, int]

EARLIEST, LATEST, TO_OFFSET, SHIFT_BY, TO_TIMESTAMP, FROM_FILE = (
    "earliest", "latest", "offset", "shift", "timestamp", "file")


class ResetError(ValueError):
    """The plan cannot be made (bad scope, or an offset the brokers did not give)."""


@dataclass(frozen=True, slots=True)
class PartitionLag:
    topic: str
    partition: int
    committed: int | None
    log_end: int | None
    lag: int | None
    member_id: str | None          # the member it is assigned to, if any

    def to_dict(self) -> dict:
        return {"topic": self.topic, "partition": self.partition, "committed_offset": self.committed,
                "log_end_offset": self.log_end, "lag": self.lag, "member_id": self.member_id}


def lag(committed: int | None, log_end: int | None) -> int | None:
    """Kafka's lag: unknown without a committed offset (-1 on the wire) or a log end offset."""
    if committed is None or committed < 0 or log_end is None or log_end < 0:
        return None
    return log_end - committed


def partition_lags(committed: Mapping[TopicPartition, int], assigned: Mapping[TopicPartition, str],
                   log_ends: Mapping[TopicPartition, int | None]) -> list[PartitionLag]:
    """One row per partition that is committed or assigned, sorted by topic and partition."""
    rows = []
    for tp in sorted(set(committed) | set(assigned)):
        offset = committed.get(tp)
        offset = offset if offset is not None and offset >= 0 else None
        log_end = log_ends.get(tp)
        rows.append(PartitionLag(tp[0], tp[1], offset, log_end, lag(offset, log_end), assigned.get(tp)))
    return rows


def total_lag(rows: Iterable[PartitionLag]) -> int:
    return sum(row.lag for row in rows if row.lag is not None)


# --- which partitions -------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class TopicScope:
    topic: str
    partitions: tuple[int, ...] | None     # None: every partition of the topic


def parse_topic_scope(text: str) -> TopicScope:
    """`T` or `T:P,P,...` as --topic takes it (Kafka's syntax)."""
    topic, sep, listed = text.strip().partition(":")
    if not topic:
        raise ResetError(f"--topic {text!r}: no topic name")
    if not sep:
        return TopicScope(topic, None)
    try:
        partitions = tuple(sorted({int(p) for p in listed.split(",")}))
    except ValueError:
        raise ResetError(f"--topic {text!r}: partitions must be numbers, as in T:0,1,2") from None
    if any(p < 0 for p in partitions):
        raise ResetError(f"--topic {text!r}: partitions are not negative")
    return TopicScope(topic, partitions)


def select_partitions(scopes: Iterable[TopicScope], partition_counts: Mapping[str, int | None]) -> list[TopicPartition]:
    """Every partition the scopes name, checked against the topics that exist
    (`partition_counts`: topic -> partitions, None for a topic that does not exist)."""
    selected: set[TopicPartition] = set()
    for scope in scopes:
        count = partition_counts.get(scope.topic)
        if count is None:
            raise ResetError(f"--topic {scope.topic!r}: topic does not exist")
        wanted = scope.partitions if scope.partitions is not None else tuple(range(count))
        missing = [p for p in wanted if p >= count]
        if missing:
            raise ResetError(f"--topic {scope.topic}: partition {missing[0]} does not exist "
                             f"(the topic has {count})")
        selected.update((scope.topic, p) for p in wanted)
    return sorted(selected)


# --- the plan ---------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ResetSpec:
    kind: str                                  # EARLIEST, LATEST, TO_OFFSET, ...
    value: int = 0                             # the offset, the shift, or the time in ms
    file_offsets: Mapping[TopicPartition, int] | None = None   # FROM_FILE


@dataclass(frozen=True, slots=True)
class LogRange:
    """What the partition's leader said: the log start and end offsets."""
    start: int | None
    end: int | None


@dataclass(frozen=True, slots=True)
class ResetRow:
    topic: str
    partition: int
    current: int | None
    new: int

    def to_dict(self) -> dict:
        return {"topic": self.topic, "partition": self.partition, "current_offset": self.current,
                "new_offset": self.new}


def plan_reset(partitions: Iterable[TopicPartition], spec: ResetSpec, committed: Mapping[TopicPartition, int],
               ranges: Mapping[TopicPartition, LogRange],
               by_time: Mapping[TopicPartition, int | None] | None = None) -> list[ResetRow]:
    """The plan for each partition (see the module doc); ResetError when an
    offset it needs is unknown."""
    rows = []
    for tp in sorted(partitions):
        current = committed.get(tp)
        current = current if current is not None and current >= 0 else None
        rows.append(ResetRow(tp[0], tp[1], current, _new_offset(tp, spec, current, ranges.get(tp), by_time)))
    return rows


def _new_offset(tp: TopicPartition, spec: ResetSpec, current: int | None, log_range: LogRange | None,
                by_time: Mapping[TopicPartition, int | None] | None) -> int:
    name = f"{tp[0]}:{tp[1]}"
    if log_range is None or log_range.start is None or log_range.end is None:
        raise ResetError(f"partition {name}: its leader did not give its log start and end offsets")
    if spec.kind == EARLIEST:
        return log_range.start
    if spec.kind == LATEST:
        return log_range.end
    if spec.kind == TO_OFFSET:
        return _clamp(spec.value, log_range)
    if spec.kind == SHIFT_BY:
        if current is None:
            raise ResetError(f"cannot shift the offset of partition {name}: the group has no committed offset there")
        return _clamp(current + spec.value, log_range)
    if spec.kind == TO_TIMESTAMP:
        found = (by_time or {}).get(tp)
        return found if found is not None and found >= 0 else log_range.end
    if spec.kind == FROM_FILE:
        return _clamp((spec.file_offsets or {})[tp], log_range)
    raise ResetError(f"unknown reset kind {spec.kind!r}")


def _clamp(offset: int, log_range: LogRange) -> int:
    assert log_range.start is not None and log_range.end is not None
    return max(log_range.start, min(offset, log_range.end))


# --- the CSV kafka-consumer-groups.sh --export writes ------------------------------------

MAX_CSV_ROWS = 1_000_000


def parse_offsets_csv(text: str, group: str) -> dict[TopicPartition, int]:
    """Offsets from `topic,partition,offset` lines, or `group,topic,partition,offset`
    lines (Kafka's export for several groups: only `group`'s rows are taken)."""
    offsets: dict[TopicPartition, int] = {}
    lines = [(n, line.strip()) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    if len(lines) > MAX_CSV_ROWS:
        raise ResetError(f"--from-file: {len(lines)} rows; at most {MAX_CSV_ROWS}")
    for number, line in lines:
        fields = [f.strip() for f in line.split(",")]
        if len(fields) == 4:
            if fields[0] != group:
                continue
            fields = fields[1:]
        if len(fields) != 3 or not fields[0]:
            raise ResetError(f"--from-file line {number}: expected topic,partition,offset, got {line!r}")
        try:
            partition, offset = int(fields[1]), int(fields[2])
        except ValueError:
            raise ResetError(f"--from-file line {number}: partition and offset must be numbers, got {line!r}") from None
        if partition < 0 or offset < 0:
            raise ResetError(f"--from-file line {number}: partition and offset are not negative, got {line!r}")
        offsets[(fields[0], partition)] = offset
    if not offsets:
        raise ResetError(f"--from-file: no offsets for group {group!r}")
    return offsets


def offsets_csv(rows: Iterable[ResetRow]) -> str:
    """The plan as kafka-consumer-groups.sh --export writes it for one group (no header)."""
    return "".join(f"{row.topic},{row.partition},{row.new}\n" for row in rows)
