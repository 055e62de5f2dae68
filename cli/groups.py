"""`kafkactl groups`: consumer groups, as kafka-consumer-groups.sh shows and changes them.

Spoken over the Kafka protocol to the brokers registered in ZooKeeper (-z),
or those Metadata names (-b) (cluster/admin/group_queries.py), so it works
on any Kafka, ZooKeeper-mode or KRaft:
each group's coordinator answers for its members and committed offsets,
each partition's leader for its log end offset. Lag is the log end offset
minus the committed offset (cluster/admin/group_offsets.py).
"""

from __future__ import annotations

import sys

import typer

from kafkactl.cli.common import SHARED_EPILOG, shared
from kafkactl.cli.errors import EXIT_FAILED, CliError, CliUsageError

app = typer.Typer(help="Consumer groups: list, describe, lag, reset offsets, delete.", no_args_is_help=True,
                  epilog=SHARED_EPILOG)

COMPLETION_TIMEOUT_S = 1.5
LATEST = -1


def complete_groups(ctx: typer.Context, incomplete: str) -> list[str]:
    """Live group names for shell completion; nothing at all when the cluster is out of reach."""
    try:
        from kafkactl.cluster.admin.broker_queries import BrokerAddress
        from kafkactl.cluster.admin.group_queries import GroupAdmin

        from kafkactl.cli.common import completion_backend

        with completion_backend(ctx, COMPLETION_TIMEOUT_S) as backend:
            brokers = [BrokerAddress(b.broker_id, b.host, b.port) for b in backend.brokers()]
        with GroupAdmin(brokers, COMPLETION_TIMEOUT_S) as admin:
            groups, _ = admin.list_groups()
    except Exception:  # noqa: BLE001 - completion must never print an error into the shell
        return []
    return [g.group_id for g in groups if g.group_id.startswith(incomplete)]


def group_argument():
    return typer.Argument(..., metavar="GROUP", help="The group id.", autocompletion=complete_groups)


def check_group(group: str) -> None:
    if not group.strip():
        raise CliUsageError("GROUP: the group id must not be empty")


# --- list ------------------------------------------------------------------------------------

@app.command("list", epilog=SHARED_EPILOG)
def list_(ctx: typer.Context) -> int:
    """Every group, from every broker (each lists the groups it coordinates).

    Exit 1 when a broker did not answer: the list may then be incomplete."""
    from kafkactl.cli.groups_cluster import group_cluster
    from kafkactl.cli.output import emit, render_table

    with group_cluster(ctx) as cluster:
        groups, failures = cluster.admin.list_groups()
    if failures and len(failures) == len(cluster.brokers):
        broker_id, reason = next(iter(failures.items()))
        raise CliError(f"no broker listed its groups (broker {broker_id}: {reason})")
    data = [{"group": g.group_id, "protocol_type": g.protocol_type, "state": g.state} for g in groups]
    rows = [[g["group"], g["protocol_type"] or "-", g["state"] or "-"] for g in data]
    emit(data, shared(ctx).output, lambda: render_table(rows, ["GROUP", "PROTOCOL TYPE", "STATE"]))
    for broker_id, reason in sorted(failures.items()):
        print(f"warning: broker {broker_id} did not list its groups ({reason}); the list may be incomplete",
              file=sys.stderr)
    return EXIT_FAILED if failures else 0


# --- describe ----------------------------------------------------------------------------------

@app.command(epilog=SHARED_EPILOG)
def describe(ctx: typer.Context, group: str = group_argument()) -> None:
    """State, protocol, members (with their assignment) and, per partition,
    the committed offset, log end offset and lag, with the total lag."""
    from kafkactl.cli.groups_cluster import group_cluster
    from kafkactl.cli.output import emit

    check_group(group)
    with group_cluster(ctx) as cluster:
        [data] = describe_groups(cluster, [group])
    if data["state"] == "Dead" and not data["partitions"]:
        raise CliUsageError(f"group {group!r} does not exist (see `kafkactl groups list`)")
    emit(data, shared(ctx).output, lambda: _describe_text(data))


def describe_groups(cluster, groups: list[str]) -> list[dict]:
    """Each group as plain data: description, members, partition lags."""
    from kafkactl.cluster.admin.consumer_protocol import describe_assignment
    from kafkactl.cluster.admin.group_offsets import partition_lags, total_lag

    from kafkactl.cli.groups_cluster import log_offsets, require_known

    descriptions = cluster.admin.describe_groups(groups)
    fetched = cluster.admin.fetch_offsets(groups)
    for group in groups:
        require_known(descriptions[group], group)
        if fetched[group].error is not None:
            raise CliError(f"group {group!r}: OffsetFetch failed: {fetched[group].error.upper()}")
    members = {g: [_member(m, descriptions[g].protocol_type, describe_assignment) for m in descriptions[g].members]
               for g in groups}
    assigned = {g: {(t, p): m["member_id"] for m in members[g] for t, ps in m["assignment"]["partitions"].items()
                    for p in ps} for g in groups}
    wanted = {tp for g in groups for tp in (*fetched[g].offsets, *assigned[g])}
    log_ends = log_offsets(cluster, {tp: LATEST for tp in wanted})
    result = []
    for group in groups:
        description = descriptions[group]
        rows = partition_lags(fetched[group].offsets, assigned[group], log_ends)
        coordinator = cluster.admin.coordinator_of(group)
        result.append({
            "group": group, "state": description.state, "protocol_type": description.protocol_type,
            "protocol": description.protocol, "coordinator": None if coordinator is None else coordinator.broker_id,
            "members": members[group], "partitions": [r.to_dict() for r in rows], "total_lag": total_lag(rows)})
    return result


def _member(member, protocol_type: str, describe_assignment) -> dict:
    return {"member_id": member.member_id, "group_instance_id": member.group_instance_id,
            "client_id": member.client_id, "host": member.host,
            "assignment": describe_assignment(protocol_type, member.assignment)}


def _describe_text(data: dict) -> str:
    from kafkactl.cli.output import render_table

    protocol = "/".join(p for p in (data["protocol_type"], data["protocol"]) if p) or "-"
    head = [
        f"group:        {data['group']}",
        f"state:        {data['state']}",
        f"protocol:     {protocol}",
        f"coordinator:  {'-' if data['coordinator'] is None else 'broker ' + str(data['coordinator'])}",
        f"members:      {len(data['members'])}",
        f"total lag:    {data['total_lag']}",
    ]
    members = render_table(
        [[m["member_id"], m["group_instance_id"] or "-", m["client_id"], m["host"], _assignment_text(m["assignment"])]
         for m in data["members"]],
        ["MEMBER ID", "INSTANCE ID", "CLIENT ID", "HOST", "ASSIGNMENT"]) if data["members"] else "(no members)"
    partitions = render_table(
        [[p["topic"], p["partition"], _dash(p["committed_offset"]), _dash(p["log_end_offset"]), _dash(p["lag"]),
          p["member_id"] or "-"] for p in data["partitions"]],
        ["TOPIC", "PARTITION", "COMMITTED", "LOG END", "LAG", "MEMBER ID"])
    return "\n".join(head) + "\n\n" + members + "\n\n" + partitions


def _assignment_text(assignment: dict) -> str:
    if not assignment["decoded"]:
        note = f"; {assignment['error']}" if "error" in assignment else ""
        return f"({assignment['size_bytes']} bytes, not decoded{note})" if assignment["size_bytes"] else "-"
    return " ".join(f"{t}:{','.join(str(p) for p in ps)}" for t, ps in assignment["partitions"].items()) or "-"


def _dash(value) -> str:
    return "-" if value is None else str(value)


# --- lag ----------------------------------------------------------------------------------------

@app.command(epilog=SHARED_EPILOG)
def lag(
    ctx: typer.Context,
    max_lag: int | None = typer.Option(None, "--max-lag", metavar="N", min=0,
                                       help="Exit 1 when any group's total lag exceeds N (for alerting)."),
) -> int:
    """Every group's total lag, largest first, with its state and members."""
    from kafkactl.cli.groups_cluster import group_cluster
    from kafkactl.cli.output import emit, render_table

    with group_cluster(ctx) as cluster:
        listed, failures = cluster.admin.list_groups()
        if failures and len(failures) == len(cluster.brokers):
            raise CliError(f"no broker listed its groups ({next(iter(failures.values()))})")
        described = describe_groups(cluster, [g.group_id for g in listed])
    data = sorted(({"group": d["group"], "state": d["state"], "members": len(d["members"]),
                    "partitions": len(d["partitions"]), "lag": d["total_lag"]} for d in described),
                  key=lambda d: (-d["lag"], d["group"]))
    rows = [[d["group"], d["state"], d["members"], d["partitions"], d["lag"]] for d in data]
    emit(data, shared(ctx).output, lambda: render_table(rows, ["GROUP", "STATE", "MEMBERS", "PARTITIONS", "LAG"]))
    for broker_id, reason in sorted(failures.items()):
        print(f"warning: broker {broker_id} did not list its groups ({reason})", file=sys.stderr)
    over = [d for d in data if max_lag is not None and d["lag"] > max_lag]
    if over:
        names = ", ".join(f"{d['group']} ({d['lag']})" for d in over)
        print(f"lag above --max-lag {max_lag}: {names}", file=sys.stderr)
    return EXIT_FAILED if over or failures else 0


# --- reset-offsets --------------------------------------------------------------------------------

@app.command("reset-offsets", epilog=SHARED_EPILOG)
def reset_offsets(
    ctx: typer.Context,
    group: str = group_argument(),
    topic: list[str] | None = typer.Option(None, "--topic", metavar="T[:P,...]",
                                           help="A topic, or some of its partitions (repeatable)."),
    all_topics: bool = typer.Option(False, "--all-topics", help="Every topic the group has committed offsets for."),
    to_earliest: bool = typer.Option(False, "--to-earliest", help="To each partition's log start offset."),
    to_latest: bool = typer.Option(False, "--to-latest", help="To each partition's log end offset."),
    to_offset: int | None = typer.Option(None, "--to-offset", metavar="N", min=0,
                                         help="To offset N (kept within each partition's log)."),
    to_datetime: str | None = typer.Option(
        None, "--to-datetime", metavar="ISO",
        help="To the first offset at or after a time: YYYY-MM-DDTHH:MM:SS[.SSS][Z|+HH:MM], UTC without a zone."),
    by_duration: str | None = typer.Option(
        None, "--by-duration", metavar="D", help="To the first offset at or after now minus D (PT1H, P1DT12H, ...)."),
    shift_by: int | None = typer.Option(None, "--shift-by", metavar="N",
                                        help="Move the committed offset by N (negative: back), kept within the log."),
    from_file: str | None = typer.Option(None, "--from-file", metavar="F",
                                         help="To the offsets in CSV file F (topic,partition,offset), as "
                                              "--export and kafka-consumer-groups.sh --export write it."),
    execute: bool = typer.Option(False, "--execute", help="Commit the new offsets (without it: a dry run)."),
    export: bool = typer.Option(False, "--export", help="Print the plan as CSV (topic,partition,offset)."),
) -> None:
    """Reset the group's committed offsets: a dry run printing the plan
    (current and new offset per partition) unless --execute.

    Refused unless the group is inactive (Empty, or Dead: no group yet), as
    kafka-consumer-groups.sh refuses: stop its consumers first. Offsets are
    clamped into [log start, log end] of each partition."""
    from kafkactl.cli.groups_reset import ResetRequest, reset

    check_group(group)
    reset(ctx, ResetRequest(group, topic or [], all_topics, to_earliest, to_latest, to_offset, to_datetime,
                            by_duration, shift_by, from_file, execute, export))


# --- delete, delete-offsets -------------------------------------------------------------------------

@app.command(epilog=SHARED_EPILOG)
def delete(ctx: typer.Context,
           groups: list[str] = typer.Argument(..., metavar="GROUP...", autocompletion=complete_groups)) -> None:
    """Delete groups and their committed offsets (DeleteGroups). The broker
    refuses a group that still has members (NON_EMPTY_GROUP)."""
    from kafkactl.cli.groups_cluster import group_cluster
    from kafkactl.cli.output import emit

    for group in groups:
        check_group(group)
    with group_cluster(ctx) as cluster:
        errors = cluster.admin.delete_groups(list(dict.fromkeys(groups)))
    failed = {g: e for g, e in errors.items() if e is not None}
    deleted = [g for g, e in errors.items() if e is None]
    if failed:
        lines = [_delete_error(g, e) for g, e in failed.items()]
        done = f" (deleted: {', '.join(deleted)})" if deleted else ""
        raise CliError(lines[0] + done, "\n".join(lines[1:]))
    emit({"deleted": deleted}, shared(ctx).output, lambda: "\n".join(f"deleted group {g}" for g in deleted))


def _delete_error(group: str, error: str) -> str:
    if error == "non_empty_group":
        return f"group {group!r} still has members (NON_EMPTY_GROUP): stop its consumers, then delete it"
    if error == "group_id_not_found":
        return f"group {group!r} does not exist (GROUP_ID_NOT_FOUND)"
    return f"group {group!r} was not deleted: {error.upper()}"


@app.command("delete-offsets", epilog=SHARED_EPILOG)
def delete_offsets(
    ctx: typer.Context,
    group: str = group_argument(),
    topic: list[str] = typer.Option(..., "--topic", metavar="T[:P,...]",
                                    help="A topic, or some of its partitions (repeatable)."),
) -> None:
    """Delete the group's committed offsets of some partitions (OffsetDelete).
    The broker refuses the partitions of topics the group's members are
    subscribed to (GROUP_SUBSCRIBED_TO_TOPIC)."""
    from kafkactl.cluster.admin.group_offsets import ResetError, parse_topic_scope, select_partitions

    from kafkactl.cli.groups_cluster import group_cluster, partition_counts
    from kafkactl.cli.output import emit, render_table

    check_group(group)
    try:
        scopes = [parse_topic_scope(t) for t in topic]
    except ResetError as error:
        raise CliUsageError(str(error)) from None
    with group_cluster(ctx) as cluster:
        try:
            partitions = select_partitions(scopes, partition_counts(cluster, [s.topic for s in scopes]))
        except ResetError as error:
            raise CliUsageError(str(error)) from None
        group_error, errors = cluster.admin.delete_offsets(group, partitions)
    _refuse_offset_delete(group, group_error, errors)
    data = [{"topic": t, "partition": p, "deleted": True} for (t, p) in sorted(errors)]
    emit(data, shared(ctx).output,
         lambda: render_table([[d["topic"], d["partition"], "deleted"] for d in data], ["TOPIC", "PARTITION", "RESULT"]))


def _refuse_offset_delete(group: str, group_error: str | None, errors: dict) -> None:
    if group_error == "group_id_not_found":
        raise CliError(f"group {group!r} does not exist (GROUP_ID_NOT_FOUND)")
    if group_error is not None:
        raise CliError(f"group {group!r}: OffsetDelete failed: {group_error.upper()}")
    failed = {tp: e for tp, e in errors.items() if e is not None}
    if not failed:
        return
    subscribed = sorted({t for (t, _), e in failed.items() if e == "group_subscribed_to_topic"})
    if subscribed:
        raise CliError(f"group {group!r} is subscribed to {', '.join(subscribed)} (GROUP_SUBSCRIBED_TO_TOPIC): "
                       f"its offsets there cannot be deleted while its members consume it; nothing was deleted there")
    (t, p), error = sorted(failed.items())[0]
    raise CliError(f"group {group!r}: offsets of {t}:{p} not deleted: {error.upper()}")
