"""`kafkactl groups reset-offsets`: the plan, and with --execute its commit.

Every option is checked (and --from-file read) before anything is sent. The
group must be inactive (Empty, or Dead: no group yet), as Kafka's tool
requires, in the dry run too, so the plan shown is one that could run. The
new offsets are committed as Kafka's admin client commits them: to the
coordinator, with no member id and generation -1, which the coordinator
accepts only while the group has no members.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path

import typer

from kafkactl.cli.common import shared
from kafkactl.cli.errors import CliError, CliUsageError

EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
MAX_FILE_BYTES = 64 * 1024 * 1024
INACTIVE_STATES = ("Empty", "Dead")
# OffsetCommit answers for a group that gained members since it was described.
ACTIVE_GROUP_ERRORS = frozenset({"unknown_member_id", "illegal_generation", "rebalance_in_progress"})


@dataclass(frozen=True)
class ResetRequest:
    group: str
    topics: list[str]
    all_topics: bool
    to_earliest: bool
    to_latest: bool
    to_offset: int | None
    to_datetime: str | None
    by_duration: str | None
    shift_by: int | None
    from_file: str | None
    execute: bool
    export: bool


def reset(ctx: typer.Context, request: ResetRequest) -> None:
    from kafkactl.cluster.admin.group_offsets import ResetError, plan_reset

    from kafkactl.cli.groups_cluster import group_cluster

    spec, scopes = validate(request)
    with group_cluster(ctx) as cluster:
        _refuse_active(cluster, request.group)
        committed = _committed(cluster, request.group)
        partitions = _partitions(cluster, request, scopes, spec, committed)
        ranges = _log_ranges(cluster, partitions)
        by_time = _offsets_at_time(cluster, partitions, spec)
        try:
            rows = plan_reset(partitions, spec, committed, ranges, by_time)
        except ResetError as error:
            raise CliError(str(error)) from None
        if request.execute:
            _commit(cluster, request.group, rows)
    _emit(ctx, request, rows)


def validate(request: ResetRequest):
    """The reset spec and topic scopes; CliUsageError naming the option for bad input."""
    from kafkactl.cluster.admin.group_offsets import ResetError, parse_topic_scope

    _one_scenario(request)
    if request.from_file is not None:
        if request.topics or request.all_topics:
            raise CliUsageError("--from-file takes its partitions from the file: drop --topic/--all-topics")
    elif bool(request.topics) == request.all_topics:
        raise CliUsageError("give --topic T[:P,...] (repeatable) or --all-topics, not both"
                            if request.all_topics else "give --topic T[:P,...] (repeatable) or --all-topics")
    try:
        scopes = [parse_topic_scope(t) for t in request.topics]
    except ResetError as error:
        raise CliUsageError(str(error)) from None
    return _spec(request), scopes


def _one_scenario(request: ResetRequest) -> None:
    given = [name for name, value in (
        ("--to-earliest", request.to_earliest), ("--to-latest", request.to_latest),
        ("--to-offset", request.to_offset is not None), ("--to-datetime", request.to_datetime is not None),
        ("--by-duration", request.by_duration is not None), ("--shift-by", request.shift_by is not None),
        ("--from-file", request.from_file is not None)) if value]
    if len(given) != 1:
        got = " and ".join(given) if given else "none"
        raise CliUsageError("give exactly one of --to-earliest, --to-latest, --to-offset, --to-datetime, "
                            f"--by-duration, --shift-by, --from-file (got {got})")


def _spec(request: ResetRequest):
    from kafkactl.cluster.admin import group_offsets as go
    from kafkactl.cluster.admin.offset_times import BadTimeSpec, parse_datetime_ms, parse_duration_ms

    try:
        if request.to_datetime is not None:
            return go.ResetSpec(go.TO_TIMESTAMP, parse_datetime_ms(request.to_datetime))
        if request.by_duration is not None:
            return go.ResetSpec(go.TO_TIMESTAMP, int(time.time() * 1000) - parse_duration_ms(request.by_duration))
    except BadTimeSpec as error:
        option = "--to-datetime" if request.to_datetime is not None else "--by-duration"
        raise CliUsageError(f"{option}: {error}") from None
    if request.from_file is not None:
        return go.ResetSpec(go.FROM_FILE, file_offsets=_read_offsets_file(request.from_file, request.group))
    if request.to_offset is not None:
        return go.ResetSpec(go.TO_OFFSET, request.to_offset)
    if request.shift_by is not None:
        return go.ResetSpec(go.SHIFT_BY, request.shift_by)
    return go.ResetSpec(go.EARLIEST if request.to_earliest else go.LATEST)


def _read_offsets_file(path: str, group: str) -> dict:
    from kafkactl.cluster.admin.group_offsets import ResetError, parse_offsets_csv

    try:
        with Path(path).open("rb") as file:
            data = file.read(MAX_FILE_BYTES + 1)
    except OSError as error:
        raise CliUsageError(f"--from-file {path}: cannot read it ({error.strerror or error})") from None
    if len(data) > MAX_FILE_BYTES:
        raise CliUsageError(f"--from-file {path}: larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB")
    try:
        return parse_offsets_csv(data.decode("utf-8"), group)
    except UnicodeDecodeError:
        raise CliUsageError(f"--from-file {path}: not UTF-8 text") from None
    except ResetError as error:
        raise CliUsageError(f"{error} ({path})") from None


def _refuse_active(cluster, group: str) -> None:
    from kafkactl.cli.groups_cluster import require_known

    description = cluster.admin.describe_groups([group])[group]
    require_known(description, group)
    if description.state not in INACTIVE_STATES:
        # Kafka's tool's own words, so scripts that look for them still work.
        raise CliError(f"Assignments can only be reset if the group '{group}' is inactive, but the current state "
                       f"is {description.state}.")


def _committed(cluster, group: str) -> dict:
    fetched = cluster.admin.fetch_offsets([group])[group]
    if fetched.error is not None:
        raise CliError(f"group {group!r}: OffsetFetch failed: {fetched.error.upper()}")
    return fetched.offsets


def _partitions(cluster, request: ResetRequest, scopes, spec, committed: dict) -> list:
    from kafkactl.cluster.admin.group_offsets import ResetError, TopicScope, select_partitions

    from kafkactl.cli.groups_cluster import partition_counts

    if request.all_topics:
        if not committed:
            raise CliError(f"group {request.group!r} has no committed offsets: name the topics with --topic")
        return sorted(committed)
    if spec.file_offsets is not None:
        scopes = [TopicScope(t, (p,)) for t, p in sorted(spec.file_offsets)]
    try:
        return select_partitions(scopes, partition_counts(cluster, [s.topic for s in scopes]))
    except ResetError as error:
        raise CliUsageError(str(error)) from None


def _log_ranges(cluster, partitions: list) -> dict:
    from kafkactl.cluster.admin.group_offsets import LogRange

    from kafkactl.cli.groups_cluster import log_offsets

    starts = log_offsets(cluster, {tp: EARLIEST_TIMESTAMP for tp in partitions})
    ends = log_offsets(cluster, {tp: LATEST_TIMESTAMP for tp in partitions})
    return {tp: LogRange(starts[tp], ends[tp]) for tp in partitions}


def _offsets_at_time(cluster, partitions: list, spec) -> dict | None:
    from kafkactl.cluster.admin.group_offsets import TO_TIMESTAMP

    from kafkactl.cli.groups_cluster import log_offsets

    if spec.kind != TO_TIMESTAMP:
        return None
    found = log_offsets(cluster, {tp: spec.value for tp in partitions})
    unknown = [tp for tp, offset in found.items() if offset is None]
    if unknown:
        raise CliError(f"partition {unknown[0][0]}:{unknown[0][1]}: its leader did not give the offset for the time")
    return found


def _commit(cluster, group: str, rows) -> None:
    errors = cluster.admin.commit_offsets(group, {(r.topic, r.partition): r.new for r in rows})
    failed = sorted((tp, e) for tp, e in errors.items() if e is not None)
    if not failed:
        return
    (topic, partition), error = failed[0]
    more = f" (and {len(failed) - 1} more partitions)" if len(failed) > 1 else ""
    if error in ACTIVE_GROUP_ERRORS:
        raise CliError(f"group {group!r} became active meanwhile ({error.upper()}): nothing committed for "
                       f"{topic}:{partition}{more}; stop its consumers and reset again")
    raise CliError(f"group {group!r}: the offset of {topic}:{partition} was not committed: {error.upper()}{more}")


def _emit(ctx: typer.Context, request: ResetRequest, rows) -> None:
    from kafkactl.cluster.admin.group_offsets import offsets_csv

    from kafkactl.cli.output import emit, render_table

    if request.export:
        sys.stdout.write(offsets_csv(rows))
    else:
        data = {"group": request.group, "executed": request.execute, "partitions": [r.to_dict() for r in rows]}
        table = [[r.topic, r.partition, "-" if r.current is None else r.current, r.new] for r in rows]
        emit(data, shared(ctx).output,
             lambda: render_table(table, ["TOPIC", "PARTITION", "CURRENT OFFSET", "NEW OFFSET"]))
    if request.execute:
        print(f"committed the new offsets of {len(rows)} partitions for group {request.group}", file=sys.stderr)
    else:
        print("dry run: nothing committed (add --execute to commit these offsets)", file=sys.stderr)
