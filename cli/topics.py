"""`kafkactl topics`: list, describe, create, delete and alter topics.

Through ZooKeeper (-z), what kafka-topics.sh does in ZooKeeper mode:
creation writes /config/topics/<t> and /brokers/topics/<t> in one multi,
deletion marks /admin/delete_topics/<t> for the controller, alter adds
partitions to /brokers/topics/<t> with a write conditional on the version
read. Through the Admin API (-b): Metadata, DescribeConfigs, CreateTopics,
DeleteTopics and CreatePartitions (cluster/admin/admin_backend.py). Either
way kafkactl plans the replica assignment itself (so both report the same),
and every input is validated before anything is written.
`alter --replication-factor`, which Kafka's scripts lack, is a reassignment
(cli/replication_factor.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from kafkactl.cli.common import SHARED_EPILOG, ZK_TIMEOUT_S, cluster_backend, shared, timeout_s
from kafkactl.cli.errors import EXIT_FAILED, CliError, CliUsageError
from kafkactl.cluster.admin.wording import counted

app = typer.Typer(help="List, describe, create, delete and alter topics.", no_args_is_help=True,
                  epilog=SHARED_EPILOG)

COMPLETION_TIMEOUT_S = 1.0
DELETE_WAIT_TIMEOUT_S = 60.0
POLL_INTERVAL_S = 0.2


def complete_topics(ctx: typer.Context, incomplete: str) -> list[str]:
    """Live topic names for shell completion; nothing at all when the cluster is out of reach."""
    try:
        from kafkactl.cli.common import completion_backend

        with completion_backend(ctx, COMPLETION_TIMEOUT_S) as backend:
            names = backend.topic_names()
    except Exception:  # noqa: BLE001 - completion must never print an error into the shell
        return []
    return [name for name in names if name.startswith(incomplete)]


def topic_arguments(help_text: str):
    return typer.Argument(None, metavar="[TOPIC]...", help=help_text, autocompletion=complete_topics)


@app.command("list", epilog=SHARED_EPILOG)
def list_(
    ctx: typer.Context,
    patterns: list[str] | None = typer.Argument(
        None, metavar="[PATTERN]...", help="Topic names or regular expressions matching whole names [default: all]."),
) -> None:
    """Topic names, one per line; those queued for deletion are marked."""
    from kafkactl.cli.output import emit

    with cluster_backend(ctx) as backend:
        names = _selected(patterns, backend.topic_names())
        deleting = set(backend.marked_for_deletion())
    lines = [f"{name} - marked for deletion" if name in deleting else name for name in names]
    emit(names, shared(ctx).output, lambda: "\n".join(lines) if lines else "(no topics)")


def _selected(patterns: list[str] | None, existing: list[str]) -> list[str]:
    from kafkactl.cluster.admin.topic_names import BadTopicPattern, select_topics

    if not patterns:
        return existing
    try:
        return select_topics(patterns, existing)
    except BadTopicPattern as error:
        raise CliUsageError(str(error)) from None


@app.command(epilog=SHARED_EPILOG)
def describe(
    ctx: typer.Context,
    topics: list[str] | None = topic_arguments(
        "Topic names or regular expressions matching whole names [default: all]."),
    under_replicated: bool = typer.Option(False, "--under-replicated-partitions",
                                          help="Only partitions whose ISR is smaller than their replicas."),
    under_min_isr: bool = typer.Option(False, "--under-min-isr-partitions",
                                       help="Only partitions with no leader or an ISR below min.insync.replicas."),
    at_min_isr: bool = typer.Option(False, "--at-min-isr-partitions",
                                    help="Only partitions whose ISR is exactly min.insync.replicas."),
    unavailable: bool = typer.Option(False, "--unavailable-partitions",
                                     help="Only partitions with no leader, or a leader that is not a live broker."),
    non_preferred: bool = typer.Option(False, "--non-preferred-leader",
                                       help="Only partitions not led by their first (preferred) replica."),
) -> int:
    """Partitions with leader, leader epoch, replicas and ISR.

    With health filters, only the partitions matching any of them are shown,
    and the exit code is 1 when there is one (0 when none).
    """
    filters = [name for name, given in (
        ("under-replicated-partitions", under_replicated), ("under-min-isr-partitions", under_min_isr),
        ("at-min-isr-partitions", at_min_isr), ("unavailable-partitions", unavailable),
        ("non-preferred-leader", non_preferred)) if given]
    rows = _describe_rows(ctx, list(topics or []), filters)
    _emit_partitions(ctx, rows)
    return EXIT_FAILED if filters and rows else 0


def _describe_rows(ctx: typer.Context, topics: list[str], filters: list[str]) -> list[dict]:
    from kafkactl.cluster.admin.inspect import matches, partition_health

    with cluster_backend(ctx) as backend:
        names = _selected(topics, backend.topic_names())
        described = backend.describe_topics(names)
        _require_existing(described)
        live = {b.broker_id for b in backend.brokers()}
        min_isr = backend.min_insync_replicas(names)
        deleting = set(backend.marked_for_deletion())
    rows = []
    for topic, partitions in described.items():
        for partition in partitions:
            health = partition_health(partition, live, min_isr[topic])
            if matches(health, filters):
                marked = topic in deleting
                rows.append({**partition.to_dict(), "offline_replicas": health.offline_replicas,
                             "min_insync_replicas": min_isr[topic], "marked_for_deletion": marked,
                             "problems": health.problems() + (["marked-for-deletion"] if marked else [])})
    return rows


def _require_existing(described: dict) -> None:
    missing = [name for name, partitions in described.items() if partitions is None]
    if missing:
        raise CliUsageError(f"topic {missing[0]!r} does not exist (see `kafkactl topics list`)")


def _emit_partitions(ctx: typer.Context, rows: list[dict]) -> None:
    from kafkactl.cli.output import emit, render_table

    def table() -> str:
        return render_table(
            [[r["topic"], r["partition"], r["leader"], r["leader_epoch"], _ids(r["replicas"]), _ids(r["isr"]),
              _ids(r["offline_replicas"]), ",".join(r["problems"])] for r in rows],
            ["TOPIC", "PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR", "OFFLINE", "PROBLEMS"],
        )

    emit(rows, shared(ctx).output, table)


def _ids(values: list[int]) -> str:
    return ",".join(str(v) for v in values)


# --- create ---------------------------------------------------------------------

@app.command(epilog=SHARED_EPILOG)
def create(
    ctx: typer.Context,
    name: str = typer.Argument(..., metavar="TOPIC"),
    partitions: int | None = typer.Option(None, "--partitions", "-p", min=1,
                                          help="Number of partitions [default: the brokers' num.partitions]."),
    replication_factor: int | None = typer.Option(
        None, "--replication-factor", "-r", min=1,
        help="Replicas per partition [default: the brokers' default.replication.factor]."),
    replica_assignment: str | None = typer.Option(
        None, "--replica-assignment", metavar="1:2:3,2:3:1",
        help="Explicit replicas per partition, partition 0 first (excludes --partitions/--replication-factor)."),
    config: list[str] | None = typer.Option(None, "--config", metavar="KEY=VALUE", help="Topic config (repeatable)."),
    if_not_exists: bool = typer.Option(False, "--if-not-exists", help="Succeed if the topic exists."),
) -> None:
    """Create a topic, with Kafka's replica assignment (rack-aware round robin) or an explicit one."""
    from kafkactl.cluster.admin.backend import NewTopic, TopicExists

    from kafkactl.cli.output import emit

    overrides = _parse_configs(config or [])
    _validate_new_topic(name, overrides)
    explicit = _explicit_assignment(replica_assignment, partitions, replication_factor)
    with cluster_backend(ctx) as backend:
        assignment = _plan_new_topic(backend, name, explicit, partitions, replication_factor)
        if assignment is not None:
            if "." in name or "_" in name:
                print("warning: topic names with '.' or '_' can collide in metric names; "
                      "use one of them, not both", file=sys.stderr)
            try:
                backend.create_topic(NewTopic(name, partitions, replication_factor, explicit, overrides), assignment)
            except TopicExists:
                assignment = None  # created by someone else meanwhile
    if assignment is None:
        if not if_not_exists:
            raise CliError(f"topic {name!r} already exists (use --if-not-exists to accept that)")
        emit({"topic": name, "created": False}, shared(ctx).output, lambda: f"topic {name} already exists")
        return
    result = {"topic": name, "created": True, "partitions": {str(p): r for p, r in assignment.items()},
              "config": overrides}
    emit(result, shared(ctx).output, lambda: f"created topic {name} with {counted(len(assignment), 'partition')}")


def _validate_new_topic(name: str, overrides: dict[str, str]) -> None:
    from kafkactl.cluster.admin.topic_names import InvalidTopicName, validate_topic_name
    from kafkactl.cluster.broker.topic_config import TopicConfigError, validate_topic_config

    try:
        validate_topic_name(name)
    except InvalidTopicName as error:
        raise CliUsageError(f"TOPIC: {error}") from None
    try:
        validate_topic_config(overrides)
    except TopicConfigError as error:
        raise CliUsageError(f"--config {error}") from None


def _explicit_assignment(text: str | None, partitions: int | None, replication_factor: int | None):
    from kafkactl.cluster.admin.topic_changes import InvalidChange, parse_replica_assignment

    if text is None:
        return None   # --partitions / --replication-factor, or the brokers' defaults
    if partitions is not None or replication_factor is not None:
        raise CliUsageError("--replica-assignment cannot be used with --partitions or --replication-factor "
                            "(the assignment gives both)")
    try:
        return parse_replica_assignment(text)
    except InvalidChange as error:
        raise CliUsageError(str(error)) from None


def _plan_new_topic(backend, name, explicit, partitions, replication_factor):
    """The new topic's assignment; None when the topic exists already."""
    from kafkactl.cluster.admin.replica_assignment import AssignmentError, BrokerInfo, assign_replicas
    from kafkactl.cluster.admin.topic_changes import InvalidChange, check_name_collision, validate_assignment

    existing = backend.topic_names()
    if name in existing:
        return None
    registrations = backend.brokers()
    brokers = [BrokerInfo(b.broker_id, b.rack) for b in registrations]
    if explicit is None and (partitions is None or replication_factor is None):
        partitions, replication_factor = _broker_defaults(backend, registrations, partitions, replication_factor)
    try:
        check_name_collision(name, existing)
        if explicit is not None:
            validate_assignment(explicit, {b.broker_id for b in brokers})
            return {p: replicas for p, replicas in enumerate(explicit)}
    except InvalidChange as error:
        raise CliUsageError(str(error)) from None
    try:
        return assign_replicas(brokers, partitions, replication_factor)
    except AssignmentError as error:
        raise CliUsageError(f"--replication-factor: {error}") from None


DEFAULT_KEYS = {"num.partitions": "--partitions", "default.replication.factor": "--replication-factor"}


def _broker_defaults(backend, registrations, partitions: int | None,
                     replication_factor: int | None) -> tuple[int, int]:
    """What is not given comes from the brokers' num.partitions and
    default.replication.factor, as when Kafka's tools leave them out: asked of
    the controller (it creates topics in Kafka), else of the lowest live broker."""
    from kafkactl.cluster.admin.admin_client import AdminApiError
    from kafkactl.cluster.admin.backend import RefusedChange

    if not registrations:
        raise CliError("no live broker to take --partitions / --replication-factor defaults from; give both")
    try:
        answer = backend.broker_defaults(list(DEFAULT_KEYS))
    except (RefusedChange, AdminApiError) as error:
        raise CliError(f"{error}; give --partitions and --replication-factor") from None
    values = []
    for key, given in (("num.partitions", partitions), ("default.replication.factor", replication_factor)):
        if given is not None:
            values.append(given)
            continue
        try:
            values.append(int(answer[key]))
        except (KeyError, TypeError, ValueError):
            raise CliError(f"the brokers have no usable {key} ({answer.get(key)!r}); "
                           f"give {DEFAULT_KEYS[key]}") from None
    return values[0], values[1]


def _parse_configs(items: list[str]) -> dict[str, str]:
    parsed = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise CliUsageError(f"--config {item!r}: expected KEY=VALUE")
        parsed[key.strip()] = value.strip()
    return parsed


# --- delete ---------------------------------------------------------------------

@app.command(epilog=SHARED_EPILOG)
def delete(
    ctx: typer.Context,
    names: list[str] = typer.Argument(..., metavar="TOPIC...", autocompletion=complete_topics),
    if_exists: bool = typer.Option(False, "--if-exists", help="Skip topics that do not exist."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
    wait: bool = typer.Option(False, "--wait", help="Wait until the controller has deleted them "
                                                    "(bounded by --timeout, default 60 s)."),
) -> None:
    """Mark topics for deletion; the controller deletes them (/admin/delete_topics, or DeleteTopics with -b)."""
    from kafkactl.cluster.admin.topic_changes import INTERNAL_TOPICS

    internal = [n for n in names if n in INTERNAL_TOPICS]
    if internal:
        raise CliUsageError(f"TOPIC: {internal[0]!r} is an internal topic and cannot be deleted")
    with cluster_backend(ctx) as backend:
        existing, pending = set(backend.topic_names()), set(backend.marked_for_deletion())
        missing = [n for n in dict.fromkeys(names) if n not in existing]
        if missing and not if_exists:
            raise CliUsageError(f"topic {missing[0]!r} does not exist (use --if-exists to skip it)")
        already = [n for n in dict.fromkeys(names) if n in existing and n in pending]
        to_mark = [n for n in dict.fromkeys(names) if n in existing and n not in pending]
        if to_mark:
            _confirm(f"Delete topic(s) {', '.join(to_mark)} and all their data?", yes)
            backend.delete_topics(to_mark)
        gone = _wait_deleted(backend, to_mark + already, ctx) if wait else None
    _report_deletion(ctx, to_mark, already, missing, gone)


def _confirm(question: str, yes: bool) -> None:
    if yes:
        return
    if not sys.stdin.isatty():
        raise CliUsageError("refusing to delete without confirmation: stdin is not a terminal; pass --yes")
    if not typer.confirm(question, default=False):
        raise CliError("not confirmed; nothing was changed")


def _wait_deleted(backend, topics: list[str], ctx: typer.Context) -> list[str]:
    """Poll until the controller removed every topic; raise if it does not in time."""
    import time

    from kafkactl.cluster.admin.backend import ZOOKEEPER

    deadline = time.monotonic() + timeout_s(ctx, DELETE_WAIT_TIMEOUT_S)
    while True:
        # The markers first: the controller removes a topic's znodes no later
        # than its marker, so a topic still there after its marker was seen
        # gone was really dropped, not deleted between the two reads. (The
        # Admin API has no markers to see: DeleteTopics was accepted.)
        marked = set(backend.marked_for_deletion())
        existing = set(backend.topic_names())
        remaining = [t for t in topics if t in existing]
        if not remaining:
            return topics
        dropped = [t for t in remaining if t not in marked] if backend.kind == ZOOKEEPER else []
        if dropped:
            raise CliError(f"the controller dropped the deletion of {', '.join(dropped)} "
                           f"(is delete.topic.enable false on the brokers?)")
        if time.monotonic() >= deadline:
            raise CliError(f"still being deleted: {', '.join(remaining)} (a broker holding a replica may be "
                           f"down; the controller finishes when it returns)")
        time.sleep(POLL_INTERVAL_S)


def _report_deletion(ctx, marked: list[str], already: list[str], missing: list[str], gone: list[str] | None):
    from kafkactl.cli.output import emit

    data = {"marked_for_deletion": marked, "already_marked": already, "missing": missing}
    if gone is not None:
        data["deleted"] = gone
    lines = [f"topic {t} marked for deletion" for t in marked]
    lines += [f"topic {t} was already marked for deletion" for t in already]
    lines += [f"topic {t} does not exist; skipped" for t in missing]
    if gone:
        lines.append(f"deleted: {', '.join(gone)}")
    emit(data, shared(ctx).output, lambda: "\n".join(lines) or "nothing to delete")


# --- alter ----------------------------------------------------------------------

@app.command(epilog=SHARED_EPILOG)
def alter(
    ctx: typer.Context,
    name: str = typer.Argument(..., metavar="TOPIC", autocompletion=complete_topics),
    partitions: int | None = typer.Option(None, "--partitions", "-p", min=1,
                                          help="New total number of partitions (only adds)."),
    replica_assignment: str | None = typer.Option(
        None, "--replica-assignment", metavar="1:2:3,2:3:1",
        help="With --partitions: replicas of the new partitions (or of all partitions; the existing ones "
             "are kept)."),
    replication_factor: int | None = typer.Option(
        None, "--replication-factor", "-r", min=1,
        help="New number of replicas of every partition: a reassignment, proposed and started here."),
    yes: bool = typer.Option(False, "--yes", "-y", help="With --replication-factor: do not ask for confirmation."),
    throttle: int | None = typer.Option(
        None, "--throttle", metavar="BYTES_PER_S", min=1,
        help="With --replication-factor: replication throttle for the moving replicas, per broker."),
    wait: bool = typer.Option(False, "--wait",
                              help="With --replication-factor: show progress until every partition is done."),
    rollback_file: Path | None = typer.Option(
        None, "--rollback-file", metavar="PATH",
        help="With --replication-factor: where to save the current assignment [default: a new file in "
             "kafkactl's state dir]."),
    dry_run: bool = typer.Option(False, "--dry-run", help="With --replication-factor: show the plan; write nothing."),
    out: Path | None = typer.Option(
        None, "--out", metavar="FILE",
        help="With --replication-factor: write the plan to FILE (new) for `reassign execute --plan` instead "
             "of starting it."),
) -> None:
    """Add partitions to a topic (--partitions; never removes any), or change
    its replication factor (--replication-factor), one at a time.

    --replication-factor does what Kafka's scripts cannot: it proposes the
    reassignment and runs it as `reassign execute` does. Increasing keeps
    every replica where it is (leaders and preferred leaders stay) and adds
    replicas on the least loaded brokers, preferring racks the partition
    does not use yet; decreasing never removes the first replica (the
    preferred leader) and removes those on a rack the partition uses twice
    first, then those on the most loaded brokers. The plan is shown; once
    confirmed, the current assignment is saved as a rollback plan, then the
    throttles (--throttle) and /admin/reassign_partitions are written in
    one multi that also checks the topic is as the plan was made from it.
    With -b, as `reassign execute -b`: the topic's replicas are read again
    (the start is refused if they changed), then the same throttle configs
    go with IncrementalAlterConfigs (a broker that is not live gets no
    rate), then AlterPartitionReassignments. Refused while another
    reassignment runs. With --wait, the throttles are removed once every
    partition is complete; without, by `reassign verify --plan` with the
    plan file it prints. --timeout bounds --wait (default 600 s)."""
    from kafkactl.cli.replication_factor import RunOptions, alter_replication_factor

    options = RunOptions(yes, throttle, wait, rollback_file, dry_run, out)
    if partitions is not None and replication_factor is not None:
        raise CliUsageError("give --partitions or --replication-factor, not both: one change at a time")
    if replication_factor is not None:
        if replica_assignment is not None:
            raise CliUsageError("--replica-assignment goes with --partitions (for replicas of your own, "
                                "write a plan for `kafkactl reassign execute`)")
        alter_replication_factor(ctx, name, replication_factor, options)
        return
    if partitions is None:
        raise CliUsageError("give --partitions (to add partitions) or --replication-factor")
    if options.given():
        raise CliUsageError(f"{options.given()[0]} goes with --replication-factor (adding partitions moves no data)")
    _alter_partitions(ctx, name, partitions, replica_assignment)


def _alter_partitions(ctx: typer.Context, name: str, partitions: int, replica_assignment: str | None) -> None:
    from kafkactl.cluster.admin.backend import ZOOKEEPER
    from kafkactl.cluster.admin.topic_changes import InvalidChange, parse_replica_assignment
    from kafkactl.cluster.admin.topics import ConcurrentChangeError, TopicNotFoundError

    from kafkactl.cli.output import emit

    try:
        explicit = parse_replica_assignment(replica_assignment) if replica_assignment else None
    except InvalidChange as error:
        raise CliUsageError(str(error)) from None
    with cluster_backend(ctx) as backend:
        try:
            if backend.kind == ZOOKEEPER:
                added = _add_partitions(backend.client, name, partitions, explicit, timeout_s(ctx, ZK_TIMEOUT_S))
            else:
                added = _create_partitions(backend, name, partitions, explicit)
        except TopicNotFoundError as error:
            raise CliUsageError(f"{error} (see `kafkactl topics list`)") from None
        except ConcurrentChangeError as error:
            raise CliError(str(error)) from None
    data = {"topic": name, "partitions": partitions, "added": {str(p): r for p, r in added.items()}}
    emit(data, shared(ctx).output,
         lambda: f"topic {name}: added partitions {_ids(sorted(added))}; it now has {partitions}")


def _add_partitions(client, name: str, count: int, explicit, deadline_s: float) -> dict[int, list[int]]:
    import dataclasses

    from kafkactl.cluster.admin.replica_assignment import BrokerInfo
    from kafkactl.cluster.admin.topic_changes import InvalidChange, new_partitions_assignment
    from kafkactl.cluster.admin.topics import live_brokers, marked_for_deletion, read_assignment, write_assignment

    assignment, zk_version = read_assignment(client, name, deadline_s)
    if name in marked_for_deletion(client, deadline_s):
        raise CliError(f"topic {name!r} is marked for deletion")
    if assignment.adding_replicas or assignment.removing_replicas:
        raise CliError(f"topic {name!r} is being reassigned; add partitions once that is done "
                       f"(`kafkactl reassign status`)")
    brokers = [BrokerInfo(b.broker_id, b.rack) for b in live_brokers(client, deadline_s)]
    try:
        added = new_partitions_assignment(assignment.partitions, count, brokers, explicit)
    except InvalidChange as error:
        raise CliUsageError(str(error)) from None
    updated = dataclasses.replace(assignment, partitions={**assignment.partitions, **added})
    write_assignment(client, name, updated, zk_version, deadline_s)
    return added


def _create_partitions(backend, name: str, count: int, explicit) -> dict[int, list[int]]:
    """CreatePartitions with the new partitions' replicas planned as through ZooKeeper."""
    from kafkactl.cluster.admin.replica_assignment import BrokerInfo
    from kafkactl.cluster.admin.topic_changes import InvalidChange, new_partitions_assignment
    from kafkactl.cluster.admin.topics import TopicNotFoundError

    partitions = backend.describe_topics([name])[name]
    if partitions is None:
        raise TopicNotFoundError(f"topic {name!r} does not exist")
    brokers = [BrokerInfo(b.broker_id, b.rack) for b in backend.brokers()]
    try:
        added = new_partitions_assignment({p.partition: p.replicas for p in partitions}, count, brokers, explicit)
    except InvalidChange as error:
        raise CliUsageError(str(error)) from None
    backend.add_partitions(name, count, [added[p] for p in sorted(added)])
    return added
