"""`kafkactl reassign`: move partition replicas, as kafka-reassign-partitions.sh does in ZooKeeper mode.

Plans are Kafka's reassignment JSON, so plans made by Kafka's own tool (with
or without log_dirs) and by the planner are accepted as they are. A replica
whose `log_dirs` entry names a dir (not "any") is put in that dir of its
broker with AlterReplicaLogDirs, as Kafka's tool does.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from kafkactl.cli.common import SHARED_EPILOG, ZK_TIMEOUT_S, cluster_backend, is_admin_api, timeout_s, zookeeper
from kafkactl.cli.errors import CliError, CliUsageError
from kafkactl.cli.reassign_admin import admin_wait_s
from kafkactl.cli.reassign_run import (
    WAIT_TIMEOUT_S, announce_rollback, complete_assignment, confirm_or_refuse, emit as _emit, ids as _ids,
    refuse_if_running, refuse_moving, remove_throttles, report_wait, rollback_dir, save_plan, save_rollback,
    start, state_file, status_table, throttle_writes, wait_with_progress,
)
from kafkactl.cluster.admin.wording import counted

app = typer.Typer(help="Move partition replicas between brokers (Kafka's reassignment JSON).",
                  no_args_is_help=True, epilog=SHARED_EPILOG)

LOG_DIR_RETRY_S = 10.0       # Kafka's tool asks a new replica's broker again for this long
LOG_DIR_RETRY_INTERVAL_S = 0.5

_PLAN_HELP = "Kafka's reassignment JSON (from `reassign generate`, kafka-reassign-partitions.sh or the planner)."


@app.command(epilog=SHARED_EPILOG)
def generate(
    ctx: typer.Context,
    topics: list[str] | None = typer.Option(
        None, "--topics", metavar="TOPIC[,TOPIC...]",
        help="Topics to move (repeatable, or comma-separated) [default with --replace-broker or "
             "--exclude-brokers: every topic]."),
    brokers: str | None = typer.Option(None, "--brokers", metavar="ID,ID,...",
                                       help="Brokers to spread the topics over (Kafka's assignment)."),
    replace_broker: list[str] | None = typer.Option(
        None, "--replace-broker", metavar="OLD:NEW",
        help="Move every replica on OLD to NEW, in place (repeatable); nothing else moves."),
    exclude_brokers: str | None = typer.Option(
        None, "--exclude-brokers", metavar="ID,ID,...",
        help="Move every replica off these brokers (decommission), each to the least loaded other broker, "
             "rack-aware; nothing else moves."),
    out: Path | None = typer.Option(None, "--out", metavar="FILE",
                                    help="Also write the proposed plan to FILE (new), for `reassign execute --plan`."),
) -> None:
    """Propose a plan, and print the current assignment of what it moves, to
    keep for a rollback. --brokers: Kafka's (rack-aware) assignment of the
    topics over those brokers; --replace-broker / --exclude-brokers: only the
    replicas on those brokers move. Writes nothing in the cluster."""
    from kafkactl.cluster.admin import reassignment as ra
    from kafkactl.cluster.admin.plan_file import format_reassignment

    ways = [w for w, given in (("--brokers", brokers), ("--replace-broker", replace_broker),
                               ("--exclude-brokers", exclude_brokers)) if given]
    if len(ways) != 1:
        raise CliUsageError("give one of --brokers, --replace-broker or --exclude-brokers")
    if ways[0] == "--brokers" and not topics:
        raise CliUsageError("--topics: give the topics to spread over --brokers")
    if out is not None and out.exists():
        raise CliUsageError(f"--out {out}: exists; give a new file")
    with cluster_backend(ctx) as backend:
        names = _split(topics) if topics else backend.topic_names()
        views = backend.partition_views(names)
        registered = {b.broker_id: b for b in backend.brokers()}
    missing = [t for t, parts in views.items() if parts is None]
    if missing:
        raise CliUsageError(f"--topics: topic {missing[0]!r} does not exist (see `kafkactl topics list`)")
    proposed = _proposal(views, registered, brokers, replace_broker, exclude_brokers)
    current = {tp: list(v.original) for tp, v in ra.flatten(views).items() if tp in proposed}
    result = {"current": format_reassignment(current), "proposed": format_reassignment(proposed)}
    if out is not None:
        out.write_text(json.dumps(result["proposed"], indent=2) + "\n")
    _emit(ctx, result, lambda: (
        "Current partition replica assignment (keep it to roll back):\n"
        f"{json.dumps(result['current'])}\n\n"
        "Proposed partition reassignment configuration:\n"
        f"{json.dumps(result['proposed'])}" + (f"\n\nwrote the proposed plan to {out}" if out else "")))


def _proposal(views, registered: dict, brokers: str | None, replace_broker: list[str] | None,
              exclude_brokers: str | None) -> dict:
    from kafkactl.cluster.admin import reassignment as ra
    from kafkactl.cluster.admin import replica_moves as moves
    from kafkactl.cluster.admin.replica_assignment import AssignmentError, BrokerInfo

    if brokers is not None:
        broker_ids = _broker_ids(brokers, "--brokers")
        unknown = [b for b in broker_ids if b not in registered]
        if unknown:
            raise CliUsageError(f"--brokers: broker {unknown[0]} is not registered "
                                f"(registered: {_ids(sorted(registered)) or 'none'})")
        try:
            return ra.propose(views, [BrokerInfo(b, registered[b].rack) for b in broker_ids])
        except AssignmentError as error:
            raise CliUsageError(f"--brokers: {error}") from None
    current = {tp: list(v.original) for tp, v in ra.flatten(views).items()}
    try:
        if replace_broker:
            return moves.replace_brokers(current, moves.parse_replacements(replace_broker), set(registered))
        return moves.move_off_brokers(current, set(_broker_ids(exclude_brokers, "--exclude-brokers")),
                                      {b: r.rack for b, r in registered.items()})
    except moves.MoveError as error:
        raise CliUsageError(str(error)) from None


@app.command(epilog=SHARED_EPILOG)
def execute(
    ctx: typer.Context,
    plan: Path = typer.Option(..., "--plan", metavar="FILE", help=_PLAN_HELP),
    throttle: int | None = typer.Option(None, "--throttle", metavar="BYTES_PER_S", min=1,
                                        help="Replication throttle for the moving replicas, per broker."),
    wait: bool = typer.Option(False, "--wait", help="Show progress until every partition is done."),
    rollback_file: Path | None = typer.Option(
        None, "--rollback-file", metavar="PATH",
        help="Where to save the current assignment [default: a new file in kafkactl's state dir]."),
) -> None:
    """Start a reassignment: validate the whole plan, save the current
    assignment as a rollback plan, then write the throttles (with --throttle)
    and /admin/reassign_partitions in one ZooKeeper multi.

    Replicas whose `log_dirs` entry names a dir (not "any") go to that dir:
    each named dir is checked against its broker's log dirs first (exit 2
    if one has no such dir, nothing written), then the brokers are asked to
    move the replicas they host (AlterReplicaLogDirs) and to create the new
    ones there, before the znode is written.

    Refused while another reassignment runs. Throttles stay until `reassign
    verify` finds every partition complete. --timeout bounds --wait
    (default 600 s). With -b, as Kafka's tool does with --bootstrap-server:
    the same throttle configs with IncrementalAlterConfigs first (a broker
    that is not live gets no rate), then AlterPartitionReassignments; a
    refusal after them names what stays throttled."""
    from kafkactl.cluster.admin import reassignment as ra
    from kafkactl.cluster.admin.plan_file import PlanError, check_against_cluster
    from kafkactl.cluster.admin.topics import live_brokers

    entries = read_plan(plan)
    targets = ra.targets_of(entries)
    zk_timeout_s = timeout_s(ctx, ZK_TIMEOUT_S)
    if is_admin_api(ctx):
        with cluster_backend(ctx, admin_extra_s=admin_wait_s(ctx, wait)) as backend:
            _execute_admin(ctx, backend, plan, entries, targets, throttle, wait, rollback_file)
        return
    with zookeeper(ctx, "reassign execute writes /admin/reassign_partitions and its throttles as "
                        "ZooKeeper configs") as client:
        refuse_if_running(client, zk_timeout_s)
        views = ra.read_partitions(client, sorted({t for t, _ in targets}), zk_timeout_s)
        brokers = live_brokers(client, zk_timeout_s)
        try:
            check_against_cluster(entries, ra.partition_numbers(views), [b.broker_id for b in brokers], str(plan))
        except PlanError as error:
            raise CliUsageError(str(error)) from None
        flat = ra.flatten(views)
        refuse_moving(flat, targets)
        current = {tp: list(flat[tp].replicas) for tp in targets}
        writes = throttle_writes(client, current, targets, throttle, zk_timeout_s)
        wanted = ra.wanted_log_dirs(entries)
        addresses = _addresses(brokers)
        if wanted:
            _check_log_dirs(entries, addresses, wanted, str(plan), zk_timeout_s)
        saved = save_rollback(current, rollback_file)
        pending = _alter_log_dirs(addresses, wanted, zk_timeout_s) if wanted else {}
        start(client, targets, writes, zk_timeout_s)
        pending = _retry_log_dirs(addresses, pending, zk_timeout_s)
        result = _started(current, targets, saved, throttle, [e.entity_path for e in writes.changes], wanted,
                          pending)
        _announce_start(ctx, result, saved, plan, wait)
        if not wait:
            return
        refine = _log_dir_refiner(addresses, wanted, zk_timeout_s) if wanted else None
        states = wait_with_progress(client, targets, timeout_s(ctx, WAIT_TIMEOUT_S), zk_timeout_s, refine)
    report_wait(ctx, result, states, plan)


@app.command(epilog=SHARED_EPILOG)
def verify(
    ctx: typer.Context,
    plan: Path = typer.Option(..., "--plan", metavar="FILE", help=_PLAN_HELP),
) -> None:
    """Each partition of the plan: complete, in progress (with how far each new
    replica is behind its leader, from the brokers) or failed. A replica the
    plan puts in a named log dir counts only once it is there (DescribeLogDirs);
    a move between dirs shows as in progress. Once all are complete, removes
    the throttles (the plan's topics' throttled replicas, every broker's rates;
    with -b the live brokers', with IncrementalAlterConfigs). Exit 1 while any
    partition is not complete."""
    from kafkactl.cluster.admin import reassignment as ra
    from kafkactl.cluster.admin.plan_file import PlanError, check_against_cluster
    from kafkactl.cluster.admin.topics import live_brokers

    entries = read_plan(plan)
    targets = ra.targets_of(entries)
    zk_timeout_s = timeout_s(ctx, ZK_TIMEOUT_S)
    if is_admin_api(ctx):
        with cluster_backend(ctx) as backend:
            _verify_admin(ctx, backend, plan, entries, targets)
        return
    with zookeeper(ctx, "reassign verify removes the throttles from ZooKeeper configs") as client:
        views = ra.read_partitions(client, sorted({t for t, _ in targets}), zk_timeout_s)
        try:  # brokers may have left since: only the partitions must exist
            check_against_cluster(entries, ra.partition_numbers(views), {r for e in entries for r in e.replicas},
                                  str(plan))
        except PlanError as error:
            raise CliUsageError(str(error)) from None
        states = ra.progress(targets, ra.flatten(views), ra.read_running(client, zk_timeout_s))
        brokers = live_brokers(client, zk_timeout_s)
        wanted = ra.wanted_log_dirs(entries)
        if wanted:
            states = _log_dir_refiner(_addresses(brokers), wanted, zk_timeout_s)(states)
        moving = [s for s in states if s.status == ra.IN_PROGRESS and s.view.adding]
        lags = ra.replica_lags({b.broker_id: b for b in brokers}, moving, zk_timeout_s) if moving else {}
        removed = []
        if all(s.status == ra.COMPLETE for s in states):
            removed = remove_throttles(client, {t for t, _ in targets}, zk_timeout_s)
    _report_verify(ctx, states, lags, removed)


def _verify_admin(ctx, backend, plan: Path, entries, targets: dict) -> None:
    """verify through the Admin API: the same report, the same throttles removed."""
    from kafkactl.cli import reassign_admin as admin
    from kafkactl.cluster.admin import reassignment as ra
    from kafkactl.cluster.admin.plan_file import PlanError, check_against_cluster

    deadline_s = timeout_s(ctx, ZK_TIMEOUT_S)
    views = backend.partition_views(sorted({t for t, _ in targets}))
    try:
        check_against_cluster(entries, ra.partition_numbers(views), {r for e in entries for r in e.replicas},
                              str(plan))
    except PlanError as error:
        raise CliUsageError(str(error)) from None
    brokers = backend.brokers()
    wanted = ra.wanted_log_dirs(entries)
    refine = _log_dir_refiner(_addresses(brokers), wanted, deadline_s) if wanted else None
    states = admin.states_of(backend, targets, refine)
    moving = [s for s in states if s.status == ra.IN_PROGRESS and s.view.adding]
    lags = ra.replica_lags({b.broker_id: b for b in brokers}, moving, deadline_s) if moving else {}
    complete = all(s.status == ra.COMPLETE for s in states)
    _report_verify(ctx, states, lags, admin.remove_throttles(backend, {t for t, _ in targets}) if complete else [])


def _report_verify(ctx, states, lags: dict, removed: list[str]) -> None:
    from kafkactl.cluster.admin import reassignment as ra

    rows = [dict(s.to_dict(), lag=[lag.to_dict() for lag in lags.get((s.topic, s.partition), [])]) for s in states]
    _emit(ctx, {"partitions": rows, "throttles_removed": removed}, lambda: _verify_table(rows, removed))
    if any(s.status != ra.COMPLETE for s in states):
        raise typer.Exit(1)


@app.command(epilog=SHARED_EPILOG)
def status(ctx: typer.Context) -> None:
    """What /admin/reassign_partitions asks for, against each partition's
    current replicas, adding/removing replicas and ISR. With -b: what
    ListPartitionReassignments lists."""
    from kafkactl.cluster.admin import reassignment as ra

    zk_timeout_s = timeout_s(ctx, ZK_TIMEOUT_S)
    if is_admin_api(ctx):
        from kafkactl.cli import reassign_admin

        with cluster_backend(ctx) as backend:
            reassign_admin.status(ctx, backend)
        return
    with zookeeper(ctx, "reassign status reads /admin/reassign_partitions") as client:
        running = ra.read_running(client, zk_timeout_s)
        views = ra.flatten(ra.read_partitions(client, sorted({t for t, _ in running or {}}), zk_timeout_s))
    if not running:
        _emit(ctx, [], lambda: "no reassignment is running")
        return
    gone = {tp: ra.PartitionView(*tp, replicas=()) for tp in running if tp not in views}
    rows = [s.to_dict() for s in ra.progress(running, {**views, **gone}, running)]
    _emit(ctx, rows, lambda: status_table(rows))


@app.command(epilog=SHARED_EPILOG)
def cancel(
    ctx: typer.Context,
    rollback_file: Path | None = typer.Option(
        None, "--rollback-file", metavar="PATH",
        help="The rollback plan `execute` saved [default: the newest one kafkactl saved that covers "
             "the running partitions, else the topic znodes' original replicas]."),
    wait: bool = typer.Option(False, "--wait", help="Also wait until the partitions are back."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
) -> None:
    """Undo the running reassignment: move its partitions back to their replicas from before.

    ZooKeeper-mode Kafka has no cancel: the controller finishes a partition's
    move once it started (it reads /admin/reassign_partitions when it is
    created, and a partition being moved keeps its target), and deleting
    the znode or the topic znode's adding/removing replicas behind its back
    leaves replicas and ISRs the controller no longer knows about. So cancel
    does the one safe thing: it waits for the running reassignment to end
    (bounded by --timeout, default 600 s), then starts a reassignment back to
    the original replicas of every partition it changed (from the rollback
    file, which keeps the replica order and so the preferred leader; else
    from the topic znodes, whose order may differ), with the same throttle
    rate if one is set. Data moves twice; nothing is lost. A move stuck on a
    dead broker only ends when that broker returns.

    With -b: KIP-455's cancellation (AlterPartitionReassignments with no
    target): the controller stops the moves and puts back each partition's
    replicas from before at once (--rollback-file does not apply), and the
    throttles go at once, as with Kafka's --cancel (-z's revert keeps the
    rate until `reassign verify` of the revert plan).

    Either way the rollback file saved (`rollback_file`) holds the replicas
    with a complete copy just before the cancel changes them: through -z the
    target of the move that ended, through -b the replicas from before it;
    never a target still in flight."""
    from kafkactl.cluster.admin import reassignment as ra

    zk_timeout_s = timeout_s(ctx, ZK_TIMEOUT_S)
    if is_admin_api(ctx):
        _cancel_admin(ctx, rollback_file, wait, yes)
        return
    with zookeeper(ctx, "reassign cancel rewrites /admin/reassign_partitions") as client:
        running = ra.read_running(client, zk_timeout_s)
        if running is None:
            raise CliError("no reassignment is running, nothing to cancel (to undo a finished one, "
                           "`kafkactl reassign execute --plan ROLLBACK_FILE`)")
        views = ra.flatten(ra.read_partitions(client, sorted({t for t, _ in running}), zk_timeout_s))
        rollback, source = _rollback_for(running, rollback_file)
        reverted = ra.revert_targets(running, views, rollback)
        if not reverted:
            _emit(ctx, {"reverted": []}, lambda: "the running reassignment changes no replica set; nothing to undo")
            return
        confirm_or_refuse(_cancel_prompt(reverted, source), yes)
        if not ra.wait_until_idle(client, _deadline(ctx), zk_timeout_s):
            raise CliError("the running reassignment did not end within the --timeout; nothing was changed "
                           "(see `kafkactl reassign status`)")
        _start_revert(ctx, client, reverted, wait, zk_timeout_s)


def _execute_admin(ctx, backend, plan: Path, entries, targets: dict, throttle: int | None, wait: bool,
                   rollback_file: Path | None) -> None:
    """execute's steps through the Admin API (cli/reassign_admin.py), in the same order."""
    from kafkactl.cli import reassign_admin as admin
    from kafkactl.cluster.admin import reassignment as ra
    from kafkactl.cluster.admin.plan_file import PlanError, check_against_cluster

    deadline_s = timeout_s(ctx, ZK_TIMEOUT_S)
    running, views = admin.look(backend, {t for t, _ in targets})
    admin.refuse_if_running(running)
    brokers = backend.brokers()
    try:
        check_against_cluster(entries, ra.partition_numbers(backend.partition_views(sorted({t for t, _ in targets}))),
                              [b.broker_id for b in brokers], str(plan))
    except PlanError as error:
        raise CliUsageError(str(error)) from None
    current = {tp: list(views[tp].replicas) for tp in targets}
    throttles = admin.plan_throttles(backend, current, targets, throttle, {b.broker_id for b in brokers})
    wanted = ra.wanted_log_dirs(entries)
    addresses = _addresses(brokers)
    if wanted:
        _check_log_dirs(entries, addresses, wanted, str(plan), deadline_s)
    saved = save_rollback(current, rollback_file)
    pending = _alter_log_dirs(addresses, wanted, deadline_s) if wanted else {}
    admin.warn_not_live(throttles)
    admin.start_throttled(backend, targets, throttles, saved)
    pending = _retry_log_dirs(addresses, pending, deadline_s)
    result = _started(current, targets, saved, throttle, list(throttles.entities), wanted, pending)
    _announce_start(ctx, result, saved, plan, wait)
    if not wait:
        return
    refine = _log_dir_refiner(addresses, wanted, deadline_s) if wanted else None
    report_wait(ctx, result, admin.wait_with_progress(ctx, backend, targets, refine), plan)


def _started(current, targets, saved: Path, throttle: int | None, throttled_entities: list[str], wanted,
             pending) -> dict:
    """What `execute` reports once the move started, through either back end."""
    from kafkactl.cluster.admin import reassignment as ra

    return {"partitions": len(targets), "moving": len(ra.moving_partitions(current, targets)),
            "rollback_file": str(saved), "throttle_bytes_per_s": throttle,
            "throttled_entities": throttled_entities, "log_dirs_named": len(wanted),
            "log_dirs_pending": [{"topic": t, "partition": p, "broker": b, "log_dir": d}
                                 for (t, p, b), d in sorted(pending.items())]}


def _announce_start(ctx, result: dict, saved: Path, plan: Path, wait: bool) -> None:
    """The rollback file and pending log dirs on stderr; without --wait, the summary."""
    announce_rollback(saved)
    pending = result["log_dirs_pending"]
    if pending:
        print(f"kafkactl: warning: {len(pending)} new replicas were not created yet to confirm their log dir; "
              f"their brokers will create them there (see `kafkactl reassign verify --plan {plan}`)",
              file=sys.stderr)
    if not wait:
        _emit(ctx, result, lambda: f"started reassignment of {counted(result['partitions'], 'partition')} "
              f"({result['moving']} move replicas, {result['log_dirs_named']} replicas to named log dirs); "
              f"follow with `kafkactl reassign verify --plan {plan}`")


# --- shared by the commands

def read_plan(path: Path):
    from kafkactl.cluster.admin.plan_file import PlanError, parse_reassignment_plan

    try:
        text = path.read_text()
    except OSError as error:
        raise CliUsageError(f"--plan {path}: cannot read it ({error.strerror or error})") from None
    try:
        return parse_reassignment_plan(text, str(path))
    except PlanError as error:
        raise CliUsageError(str(error)) from None


def _addresses(brokers) -> dict:
    from kafkactl.cluster.admin import broker_queries as bq

    return {b.broker_id: bq.BrokerAddress(b.broker_id, b.host, b.port) for b in brokers}


def _check_log_dirs(entries, addresses: dict, wanted: dict, source: str, timeout: float) -> None:
    """Every named dir exists on its broker (asked with DescribeLogDirs), before anything is written."""
    from kafkactl.cluster.admin import reassignment as ra
    from kafkactl.cluster.admin.plan_file import PlanError

    answers = ra.describe_dirs(addresses, {b for _, _, b in wanted}, timeout)
    try:
        ra.check_log_dirs(entries, answers, source)
    except PlanError as error:
        raise CliUsageError(f"{error}; nothing was written") from None
    except ra.BrokerDirsUnknown as error:
        raise CliError(f"{error}; nothing was written") from None


def _alter_log_dirs(addresses: dict, wanted: dict, timeout: float) -> dict:
    """AlterReplicaLogDirs for every named dir; returns the replicas not hosted
    yet (their brokers create them in the dir), refuses on any other error."""
    from kafkactl.cluster.admin import reassignment as ra

    results = ra.alter_log_dirs(addresses, wanted, timeout)
    failed = {r: e for r, e in results.items() if e not in (None, "replica_not_available")}
    if failed:
        (topic, partition, broker), error = sorted(failed.items())[0]
        raise CliError(f"broker {broker} refused to put topic {topic!r} partition {partition} in "
                       f"{wanted[(topic, partition, broker)]}: {error} ({counted(len(failed), 'replica')} refused); "
                       f"ZooKeeper was not changed, moves between log dirs already accepted go on")
    return {r: wanted[r] for r, e in results.items() if e == "replica_not_available"}


def _retry_log_dirs(addresses: dict, pending: dict, timeout: float) -> dict:
    """Ask again for the new replicas until their brokers host them (bounded)."""
    import time

    from kafkactl.cluster.admin import reassignment as ra

    deadline = time.monotonic() + LOG_DIR_RETRY_S
    while pending and time.monotonic() < deadline:
        time.sleep(LOG_DIR_RETRY_INTERVAL_S)
        results = ra.alter_log_dirs(addresses, pending, timeout)
        pending = {r: d for r, d in pending.items() if results.get(r) is not None}
    return pending


def _log_dir_refiner(addresses: dict, wanted: dict, timeout: float):
    from kafkactl.cluster.admin import reassignment as ra

    def refine(states):
        answers = ra.describe_dirs(addresses, {b for _, _, b in wanted}, timeout)
        return ra.log_dir_progress(states, wanted, answers)

    return refine


def _cancel_admin(ctx, rollback_file: Path | None, wait: bool, yes: bool) -> None:
    from kafkactl.cli import reassign_admin

    if rollback_file is not None:
        raise CliUsageError("--rollback-file: with -b the controller cancels the moves itself and puts back the "
                            "replicas it had before (KIP-455); the option applies to -z only")
    with cluster_backend(ctx, admin_extra_s=admin_wait_s(ctx, wait)) as backend:
        reassign_admin.cancel(ctx, backend, wait, yes)


def _rollback_for(running: dict, path: Path | None):
    """(original replicas per partition, where they come from)."""
    from kafkactl.cluster.admin import reassignment as ra

    if path is not None:
        return ra.targets_of(read_plan(path)), str(path)
    directory = rollback_dir()
    candidates = sorted(directory.glob("rollback-*.json"), key=lambda p: p.stat().st_mtime, reverse=True) \
        if directory.is_dir() else []
    for candidate in candidates:
        try:
            targets = ra.targets_of(read_plan(candidate))
        except CliUsageError:
            continue
        if set(running) <= set(targets):
            return targets, str(candidate)
    return None, "the topic znodes (no saved rollback file covers every running partition)"


def _cancel_prompt(reverted: dict, source: str) -> str:
    listed = ", ".join(f"{t}-{p} -> {_ids(r)}" for (t, p), r in list(sorted(reverted.items()))[:10])
    more = f" and {len(reverted) - 10} more" if len(reverted) > 10 else ""
    return (f"After the running reassignment ends, move {counted(len(reverted), 'partition')} back ({listed}{more}; "
            f"original replicas from {source}). Continue?")


def _start_revert(ctx, client, reverted: dict, wait: bool, zk_timeout_s: float) -> None:
    from kafkactl.cluster.admin import reassignment as ra

    views = ra.flatten(ra.read_partitions(client, sorted({t for t, _ in reverted}), zk_timeout_s))
    reverted = {tp: r for tp, r in reverted.items() if tp in views}
    current = {tp: list(views[tp].replicas) for tp in reverted}
    rate = ra.current_rate(client, zk_timeout_s)
    writes = throttle_writes(client, current, reverted, rate, zk_timeout_s)
    saved = save_rollback(complete_assignment(views, reverted), None)
    revert_plan = save_plan(reverted, state_file("revert"), "revert plan")
    start(client, reverted, writes, zk_timeout_s)
    result = {"reverted": [{"topic": t, "partition": p, "replicas": r} for (t, p), r in sorted(reverted.items())],
              "revert_plan": str(revert_plan), "rollback_file": str(saved), "throttle_bytes_per_s": rate}
    if not wait:
        _emit(ctx, result, lambda: f"moving {counted(len(reverted), 'partition')} back; follow with "
              f"`kafkactl reassign verify --plan {revert_plan}`")
        return
    states = wait_with_progress(client, reverted, timeout_s(ctx, WAIT_TIMEOUT_S), zk_timeout_s)
    result["throttled_entities"] = [e.entity_path for e in writes.changes]
    report_wait(ctx, result, states, revert_plan)


def _deadline(ctx) -> float:
    import time

    return time.monotonic() + timeout_s(ctx, WAIT_TIMEOUT_S)


def _split(values: list[str]) -> list[str]:
    names = [n.strip() for v in values for n in v.split(",") if n.strip()]
    if not names:
        raise CliUsageError("--topics: give at least one topic")
    return list(dict.fromkeys(names))


def _broker_ids(text: str, option: str = "--brokers") -> list[int]:
    items = [i.strip() for i in text.split(",") if i.strip()]
    if not items or not all(i.isdigit() for i in items):
        raise CliUsageError(f"{option} {text!r}: expected broker ids separated by commas, e.g. 1,2,3")
    ids = [int(i) for i in items]
    if len(set(ids)) != len(ids):
        raise CliUsageError(f"{option} {text!r}: a broker is listed twice")
    return ids


def _verify_table(rows: list[dict], removed: list[str]) -> str:
    from kafkactl.cli.output import render_table

    def progress_text(row: dict) -> str:
        if row["lag"]:
            return "; ".join(_lag_text(lag) for lag in row["lag"])
        return row["detail"]

    table = render_table([[r["topic"], r["partition"], r["status"], _ids(r["target"]), _ids(r["replicas"]),
                           progress_text(r)] for r in rows],
                         ["TOPIC", "PARTITION", "STATUS", "TARGET", "REPLICAS", "PROGRESS"])
    if removed:
        table += "\n\nthrottles removed from " + ", ".join(removed)
    return table


def _lag_text(lag: dict) -> str:
    if lag["lag"] is not None:
        return f"replica {lag['broker']}: {lag['lag']} messages behind"
    membership = "in ISR" if lag["in_isr"] else "not in ISR"
    return f"replica {lag['broker']}: {membership} ({lag['note']})"
