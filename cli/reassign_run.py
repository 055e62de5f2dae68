"""Starting and following a reassignment: what `reassign execute`, `reassign
cancel` and `topics alter --replication-factor` share.

One order for all of them, so that a failure at any step leaves ZooKeeper as
it was: refuse while another reassignment runs or a partition is still
moving; compute the throttle writes (reads only); save the current
assignment as a rollback plan (the only thing written before the multi,
and its path is printed); then the throttles and /admin/reassign_partitions
in one multi; then, with --wait, a progress bar until every partition is
complete or the deadline.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from kafkactl.cli.common import shared
from kafkactl.cli.errors import CliError, CliUsageError
from kafkactl.cluster.admin.wording import counted

WAIT_TIMEOUT_S = 600.0


def confirm_or_refuse(prompt: str, yes: bool) -> None:
    """Ask before a destructive step; without a terminal, only --yes goes on."""
    if yes:
        return
    if not sys.stdin.isatty():
        raise CliUsageError("this command needs confirmation: rerun with --yes (stdin is not a terminal)")
    typer.confirm(prompt, abort=True, err=True)


def refuse_if_running(client, zk_timeout_s: float) -> None:
    from kafkactl.cluster.admin import reassignment as ra

    if ra.read_running(client, zk_timeout_s) is not None:
        raise CliError("a reassignment is already running (/admin/reassign_partitions exists); wait for it "
                       "(`kafkactl reassign status`) or `kafkactl reassign cancel` it")


def refuse_moving(views: dict, targets) -> None:
    moving = [tp for tp in targets if views[tp].is_moving]
    if moving:
        topic, partition = moving[0]
        raise CliError(f"topic {topic!r} partition {partition} is still being reassigned "
                       f"(adding/removing replicas in its topic znode); wait for it to finish")


def throttle_writes(client, current: dict, targets: dict, rate: int | None, zk_timeout_s: float):
    """The config writes for Kafka's throttles on the moving partitions at
    `rate` bytes/s (none without a rate). Reads only."""
    from kafkactl.cluster.admin import configs
    from kafkactl.cluster.admin import reassignment as ra

    if not rate:
        return configs.ConfigWrites()
    return ra.throttle_writes(client, ra.compute_throttles(current, targets), rate, zk_timeout_s)


def save_rollback(current: dict, path: Path | None) -> Path:
    """Write the current assignment as a plan, before anything changes."""
    return save_plan(current, path if path is not None else state_file("rollback"), "--rollback-file")


def complete_assignment(views: dict, partitions) -> dict:
    """What `reassign cancel` saves as its rollback file, through either back end:
    each partition's replicas that hold a complete copy just before the cancel
    changes it (the replica set less those still being added). Through -z the
    running move has ended by then, so that is its target, where the revert
    starts from; through -b the controller stops the move, so it is the replicas
    from before it. A target still in flight is never saved: its new replicas
    hold part of the data, executing it would restart the move that was
    cancelled, and a later cancel would take the newest rollback file as the
    replicas to go back to."""
    return {tp: list(views[tp].original) for tp in partitions if tp in views}


def save_plan(assignment: dict, path: Path, option: str) -> Path:
    from kafkactl.cluster.admin.plan_file import format_reassignment

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(format_reassignment(assignment)) + "\n")
    except OSError as error:
        raise CliError(f"{option} {path}: cannot write it ({error.strerror or error}); nothing was changed")
    return path


def announce_rollback(saved: Path) -> None:
    print(f"current assignment saved to {saved} (roll back with `kafkactl reassign execute --plan {saved}`)",
          file=sys.stderr)


def start(client, targets: dict, writes, zk_timeout_s: float, unchanged: dict | None = None) -> None:
    """The throttles and /admin/reassign_partitions, in one multi (see ra.start)."""
    from kafkactl.cluster.admin import configs
    from kafkactl.cluster.admin import reassignment as ra

    try:
        ra.start(client, targets, writes, zk_timeout_s, unchanged)
    except ra.ReassignmentRunning as error:
        raise CliError(f"{error} (see `kafkactl reassign status`)") from None
    except configs.ConcurrentChange as error:
        raise CliError(str(error)) from None


def wait_with_progress(client, targets: dict, wait_s: float, zk_timeout_s: float, refine=None):
    """A progress bar on stderr until every partition is complete or the deadline."""
    import time

    from kafkactl.cluster.admin import reassignment as ra

    with typer.progressbar(length=len(targets), label="reassigning", file=sys.stderr) as bar:
        shown = [0]

        def on_progress(done: int) -> None:
            if done > shown[0]:
                bar.update(done - shown[0])
                shown[0] = done

        return ra.wait_until_complete(client, targets, time.monotonic() + wait_s, on_progress, zk_timeout_s,
                                      refine)


def remove_throttles(client, topics, zk_timeout_s: float) -> list[str]:
    """What Kafka's --verify does once every partition is complete: the
    throttled-replicas keys of `topics` and every broker's throttle rates go,
    in one multi. The entities changed."""
    from kafkactl.cluster.admin import reassignment as ra

    writes = ra.throttle_removal(client, topics, zk_timeout_s)
    if writes:
        commit_configs(client, writes, zk_timeout_s)
    return [e.entity_path for e in writes.changes]


def commit_configs(client, writes, zk_timeout_s: float) -> None:
    from kafkactl.cluster.admin import configs

    transaction = client.transaction()
    writes.add_to(transaction)
    try:
        configs.commit(client, transaction, zk_timeout_s)
    except configs.ConcurrentChange as error:
        raise CliError(str(error)) from None


def report_wait(ctx, result: dict, states, plan: Path) -> None:
    """The last look of --wait; exit 1 naming what is not complete."""
    from kafkactl.cluster.admin import reassignment as ra

    rows = [s.to_dict() for s in states]
    unfinished = [s for s in states if s.status != ra.COMPLETE]
    removed = result.get("throttles_removed")

    def table() -> str:
        text = status_table(rows)
        if removed:
            return text + "\n\nthrottles removed from " + ", ".join(removed)
        if result["throttled_entities"] and not unfinished and removed is None:
            return text + f"\n\nrun `kafkactl reassign verify --plan {plan}` to remove the throttles"
        return text

    emit(ctx, dict(result, partitions=rows), table)
    if unfinished:
        raise CliError(f"{counted(len(unfinished), 'partition')} {'is' if len(unfinished) == 1 else 'are'} not complete "
                       f"({'the --timeout passed' if any(s.status == ra.IN_PROGRESS for s in unfinished) else 'failed'})"
                       f"; see `kafkactl reassign verify --plan {plan}`")


def state_file(kind: str) -> Path:
    """A new file in kafkactl's state dir: `<kind>-<UTC time>-<pid>.json`."""
    import os
    import time

    return rollback_dir() / f"{kind}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{os.getpid()}.json"


def rollback_dir() -> Path:
    from kafkactl.cli.config import default_cluster_dir

    return default_cluster_dir().parent / "reassignments"


def emit(ctx, data, table) -> None:
    from kafkactl.cli.output import emit as emit_output

    emit_output(data, shared(ctx).output, table)


def status_table(rows: list[dict]) -> str:
    from kafkactl.cli.output import render_table

    return render_table([[r["topic"], r["partition"], r["status"], ids(r["target"]), ids(r["replicas"]),
                          ids(r["adding"]), ids(r["removing"]), ids(r["isr"]), r["detail"]] for r in rows],
                        ["TOPIC", "PARTITION", "STATUS", "TARGET", "REPLICAS", "ADDING", "REMOVING", "ISR",
                         "DETAIL"])


def ids(values) -> str:
    return ",".join(str(v) for v in values)
