"""`kafkactl reassign execute/verify/status/cancel` through the Admin API (-b):
AlterPartitionReassignments and ListPartitionReassignments (KIP-455).

The same checks, rollback file, output and exit codes as through ZooKeeper
(cli/reassign.py), with two differences the API imposes:
- throttles are ZooKeeper configs (topic and broker entities written with
  /admin/reassign_partitions in one multi); the Admin API cannot write them
  atomically with the move, so --throttle is refused (exit 2);
- cancel is KIP-455's cancellation (a null target): the controller stops the
  moves and puts back each partition's replicas from before at once, instead
  of waiting for the moves to end and reversing them.

A partition's adding/removing replicas come from ListPartitionReassignments:
Metadata shows only the full replica set.
"""

from __future__ import annotations

import sys
import time

import typer

from kafkactl.cli.common import timeout_s
from kafkactl.cli.errors import CliError, CliUsageError
from kafkactl.cli.reassign_run import (
    WAIT_TIMEOUT_S, complete_assignment, confirm_or_refuse, emit, report_wait, save_plan, save_rollback,
    state_file, status_table,
)
from kafkactl.cluster.admin.wording import counted

POLL_INTERVAL_S = 0.5


def refuse_throttle(throttle: int | None) -> None:
    if throttle is not None:
        raise CliUsageError("--throttle: replication throttles are ZooKeeper configs written with the "
                            "reassignment; not possible through the Admin API, give -z/--zookeeper HOST:PORT")


def look(backend, topics) -> tuple[dict, dict]:
    """(the running reassignments' targets, every partition's view of `topics` with
    the adding/removing replicas the controller reports)."""
    from kafkactl.cluster.admin import reassignment as ra

    ongoing = backend.list_reassignments()
    views = ra.flatten(backend.partition_views(sorted(set(topics))))
    return {tp: _target(r) for tp, r in ongoing.items()}, views


def _target(moving) -> list[int]:
    """Where a partition is going: its full replica set less those being removed (Kafka's target)."""
    return [r for r in moving.replicas if r not in moving.removing]


def refuse_if_running(running: dict) -> None:
    if running:
        raise CliError(f"a reassignment is already running ({counted(len(running), 'partition')} listed by "
                       f"ListPartitionReassignments); wait for it (`kafkactl reassign status`) or "
                       f"`kafkactl reassign cancel` it")


def start(backend, targets: dict, others: str = "the others started") -> None:
    """AlterPartitionReassignments; Kafka takes or refuses each partition on its own."""
    answers = backend.alter_reassignments(targets)
    refused = {tp: o for tp, o in sorted(answers.items()) if o.error is not None}
    if refused:
        (topic, partition), outcome = next(iter(refused.items()))
        reason = outcome.error.upper() + (f" ({outcome.message})" if outcome.message else "")
        raise CliError(f"the controller refused topic {topic!r} partition {partition}: {reason} "
                       f"({counted(len(refused), 'partition')} refused, {others}; "
                       f"see `kafkactl reassign status`)")


def states_of(backend, targets: dict, refine=None) -> list:
    """Each target partition's progress; `refine` may revise it (named log dirs: see cli/reassign.py)."""
    from kafkactl.cluster.admin import reassignment as ra

    running, views = look(backend, {t for t, _ in targets})
    gone = {tp: ra.PartitionView(*tp, replicas=()) for tp in targets if tp not in views}
    states = ra.progress(targets, {**views, **gone}, running)
    return states if refine is None else refine(states)


def wait_with_progress(ctx: typer.Context, backend, targets: dict, refine=None) -> list:
    """Poll until no partition is in progress or --timeout (default 600 s); a progress bar on stderr."""
    from kafkactl.cluster.admin import reassignment as ra

    deadline = time.monotonic() + timeout_s(ctx, WAIT_TIMEOUT_S)
    with typer.progressbar(length=len(targets), label="reassigning", file=sys.stderr) as bar:
        shown = 0
        while True:
            states = states_of(backend, targets, refine)
            done = sum(1 for s in states if s.status == ra.COMPLETE)
            bar.update(max(0, done - shown))
            shown = max(shown, done)
            if all(s.status != ra.IN_PROGRESS for s in states) or time.monotonic() >= deadline:
                return states
            time.sleep(POLL_INTERVAL_S)


def status(ctx: typer.Context, backend) -> None:
    running, _ = look(backend, ())
    if not running:
        emit(ctx, [], lambda: "no reassignment is running")
        return
    rows = [s.to_dict() for s in states_of(backend, running)]
    emit(ctx, rows, lambda: status_table(rows))


def cancel(ctx: typer.Context, backend, wait: bool, yes: bool) -> None:
    """KIP-455 cancellation of every running partition: each gets back its replicas from before."""
    running = set(backend.list_reassignments())
    running, views = look(backend, {t for t, _ in running})
    if not running:
        raise CliError("no reassignment is running, nothing to cancel (to undo a finished one, "
                       "`kafkactl reassign execute --plan ROLLBACK_FILE`)")
    reverted = {tp: list(views[tp].original) for tp in running if tp in views}
    confirm_or_refuse(f"Cancel the running reassignment of {counted(len(reverted), 'partition')} (the controller "
                      f"puts back their replicas from before at once)? Continue?", yes)
    # Not `running` (the targets): they are in flight (see complete_assignment).
    saved = save_rollback(complete_assignment(views, running), None)
    revert_plan = save_plan(reverted, state_file("revert"), "revert plan")
    start(backend, {tp: None for tp in running}, "the others were cancelled")
    result = {"reverted": [{"topic": t, "partition": p, "replicas": r} for (t, p), r in sorted(reverted.items())],
              "revert_plan": str(revert_plan), "rollback_file": str(saved), "throttle_bytes_per_s": None}
    if not wait:
        emit(ctx, result, lambda: f"moving {counted(len(reverted), 'partition')} back; follow with "
             f"`kafkactl reassign verify --plan {revert_plan}`")
        return
    result["throttled_entities"] = []
    report_wait(ctx, result, wait_with_progress(ctx, backend, reverted), revert_plan)
