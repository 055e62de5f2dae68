"""`kafkactl reassign execute/verify/status/cancel` through the Admin API (-b):
AlterPartitionReassignments and ListPartitionReassignments (KIP-455).

The same checks, rollback file, output and exit codes as through ZooKeeper
(cli/reassign.py), with the differences the API imposes:
- throttles: the same configs as -z (reassignment.throttled), set the way
  kafka-reassign-partitions.sh --bootstrap-server sets them: IncrementalAlterConfigs
  SET/DELETE per topic and broker, before AlterPartitionReassignments. Not one
  multi with the move as through ZooKeeper, so a refusal after them names what
  stays throttled. A broker's configs go through that broker: one that is not
  live gets no rate (-z writes its znode), and verify clears the live brokers';
- cancel is KIP-455's cancellation (a null target): the controller stops the
  moves and puts back each partition's replicas from before at once, instead
  of waiting for the moves to end and reversing them; nothing moves after it,
  so it clears the throttles at once, as Kafka's --cancel does.

A partition's adding/removing replicas come from ListPartitionReassignments:
Metadata shows only the full replica set.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path

import typer

from kafkactl.cli.common import timeout_s
from kafkactl.cli.errors import CliError
from kafkactl.cli.reassign_run import (
    WAIT_TIMEOUT_S, complete_assignment, confirm_or_refuse, emit, report_wait, save_plan, save_rollback,
    state_file, status_table,
)
from kafkactl.cluster.admin.wording import counted

POLL_INTERVAL_S = 0.5
METADATA_SETTLE_S = 5.0     # how long a broker's Metadata may lag the controller's ListPartitionReassignments


def admin_wait_s(ctx: typer.Context, wait: bool) -> float:
    """With --wait the Admin API client must outlive the wait (--timeout, default 600 s): the
    requests before it and the last look after it get their own --timeout on top."""
    return timeout_s(ctx, WAIT_TIMEOUT_S) if wait else 0.0


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


def start(backend, targets: dict, others: str = "the others started", left=None) -> None:
    """AlterPartitionReassignments; Kafka takes or refuses each partition on its own.
    `left(moved)`: what a refusal leaves behind, to add to its message."""
    answers = backend.alter_reassignments(targets)
    refused = {tp: o for tp, o in sorted(answers.items()) if o.error is not None}
    if refused:
        (topic, partition), outcome = next(iter(refused.items()))
        reason = outcome.error.upper() + (f" ({outcome.message})" if outcome.message else "")
        raise CliError(f"the controller refused topic {topic!r} partition {partition}: {reason} "
                       f"({counted(len(refused), 'partition')} refused, {others}; "
                       f"see `kafkactl reassign status`)" + (left(len(refused) < len(targets)) if left else ""))


# --- throttles
#
# The writes do not depend on what DescribeConfigs says: a broker describes the
# configs it applies, which lag behind ZooKeeper for a moment after a change
# (a verify's removal just before, say), and a write skipped on a stale answer
# would leave a rate unset, or set for good. So, as Kafka's tool does, every
# key is SET or DELETEd; DescribeConfigs only tells which entities that
# changes, to name them as -z names them.

@dataclass(frozen=True, slots=True)
class ThrottlePlan:
    """What `execute --throttle` sends: per entity the keys to SET and DELETE."""
    rate: int | None
    writes: tuple = ()                # (configs.Entity, {key: value}, [key]), in -z's order
    entities: tuple[str, ...] = ()    # those whose configs change, as -z's `throttled_entities`
    not_live: tuple[int, ...] = ()    # brokers of the move that cannot be reached to set a rate


def plan_throttles(backend, current: dict, targets: dict, rate: int | None, live) -> ThrottlePlan:
    """Reads only: the throttles -z writes (reassignment.compute_throttles and
    throttled) as IncrementalAlterConfigs operations: a topic's two throttled-
    replicas keys SET (or DELETEd where the move needs none, as -z removes it),
    a broker's two rates SET. A broker's configs are described and altered
    through that broker: those not live are left out (`not_live`)."""
    from kafkactl.cluster.admin import configs
    from kafkactl.cluster.admin import reassignment as ra

    if not rate:
        return ThrottlePlan(None)
    throttles = ra.compute_throttles(current, targets)
    entities = ra.throttle_entities(throttles)
    reachable = [e for e in entities if e.entity_type == configs.TOPICS or int(e.name) in live]
    stored = backend.config_overrides(reachable)
    writes = []
    for entity in reachable:
        add = ra.throttled(entity, {}, throttles, rate)
        writes.append((entity, add, [k for k in configs.THROTTLED_REPLICAS_KEYS
                                     if entity.entity_type == configs.TOPICS and k not in add]))
    changed = tuple(e.entity_path for e in reachable if ra.throttled(e, stored[e], throttles, rate) != stored[e])
    return ThrottlePlan(rate, tuple(writes), changed, tuple(int(e.name) for e in entities if e not in reachable))


def warn_not_live(plan: ThrottlePlan) -> None:
    if plan.not_live:
        print(f"kafkactl: warning: no throttle rate on broker {', '.join(map(str, plan.not_live))}: not live, and "
              f"the Admin API sets a broker's configs through the broker itself", file=sys.stderr)


def start_throttled(backend, targets: dict, plan: ThrottlePlan, rollback: Path) -> None:
    """Kafka's order through the Admin API: the throttles, then AlterPartitionReassignments.
    Nothing undoes throttles already set when a step after them fails (undoing may
    fail too, and a half-undone throttle is worse than one the operator is told
    about), so the error names them and how to remove them."""
    from kafkactl.cluster.admin.admin_client import AdminApiError
    from kafkactl.cluster.admin.backend import RefusedChange

    written: list[str] = []

    def left(moved: bool) -> str:
        if not written:
            return ""
        how = ("`kafkactl configs alter --delete` removes them once the partitions that started are complete"
               if moved else f"`kafkactl reassign verify --plan {rollback}` removes them (no partition moved), "
                             f"as does `kafkactl configs alter --delete`")
        return f"; throttles stay on {', '.join(written)}: {how}"

    for entity, add, delete in plan.writes:
        try:
            backend.alter_entity(entity, add, delete)
        except (AdminApiError, RefusedChange) as error:
            raise type(error)(f"{error}; the reassignment was not started{left(False)}") from None
        written.append(entity.entity_path)
    try:
        start(backend, targets, left=left)
    except (AdminApiError, RefusedChange) as error:
        if not written:
            raise
        raise type(error)(f"{error} (see `kafkactl reassign status`){left(False)}") from None


def remove_throttles(backend, topics) -> list[str]:
    """-z's remove_throttles (what Kafka's --verify does once every partition is
    complete) through the Admin API: the throttled-replicas keys of `topics` and
    the throttle rates of every live broker DELETEd. The entities that had one,
    named and ordered as -z names them."""
    from kafkactl.cluster.admin import reassignment as ra
    from kafkactl.cluster.admin.admin_client import AdminApiError

    entities = ra.removal_entities(topics, [str(b.broker_id) for b in backend.brokers()])
    stored = backend.config_overrides(entities)
    removed: list[str] = []
    for entity in entities:
        try:
            backend.alter_entity(entity, {}, list(ra.cleared_keys(entity)))
        except AdminApiError as error:
            done = f" (removed from {', '.join(removed)} already)" if removed else ""
            raise AdminApiError(f"{error}: the throttles stay on {entity.entity_path}{done}") from None
        if ra.unthrottled(entity, stored[entity]) != stored[entity]:
            removed.append(entity.entity_path)
    return removed


def states_of(backend, targets: dict, refine=None) -> list:
    """Each target partition's progress; `refine` may revise it (named log dirs: see cli/reassign.py)."""
    from kafkactl.cluster.admin import reassignment as ra

    running, views = look(backend, {t for t, _ in targets})
    gone = {tp: ra.PartitionView(*tp, replicas=()) for tp in targets if tp not in views}
    states = ra.progress(targets, {**views, **gone}, running)
    return states if refine is None else refine(states)


def wait_with_progress(ctx: typer.Context, backend, targets: dict, refine=None) -> list:
    """Poll until no partition is in progress or --timeout (default 600 s); a progress bar on stderr.
    A partition that looks failed is looked at again for METADATA_SETTLE_S first."""
    from kafkactl.cluster.admin import reassignment as ra

    deadline = time.monotonic() + timeout_s(ctx, WAIT_TIMEOUT_S)
    settled_by = None
    with typer.progressbar(length=len(targets), label="reassigning", file=sys.stderr) as bar:
        shown = 0
        while True:
            states = states_of(backend, targets, refine)
            done = sum(1 for s in states if s.status == ra.COMPLETE)
            bar.update(max(0, done - shown))
            shown = max(shown, done)
            if any(s.status == ra.IN_PROGRESS for s in states):
                settled_by = None
            elif all(s.status == ra.COMPLETE for s in states):
                return states
            else:
                # "failed": the controller no longer lists the partition, yet the broker that
                # answered Metadata shows other replicas. Right after a move ends (at once, for
                # one that only removes replicas) that broker may not have had the controller's
                # UpdateMetadata yet: look again for a while before calling it failed.
                settled_by = settled_by or time.monotonic() + METADATA_SETTLE_S
            now = time.monotonic()
            if now >= deadline or (settled_by is not None and now >= settled_by):
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
                      f"puts back their replicas from before at once; the throttles go)? Continue?", yes)
    # Not `running` (the targets): they are in flight (see complete_assignment).
    saved = save_rollback(complete_assignment(views, running), None)
    revert_plan = save_plan(reverted, state_file("revert"), "revert plan")
    start(backend, {tp: None for tp in running}, "the others were cancelled")
    # -z's revert is a throttled move of its own; here nothing moves any more.
    removed = remove_throttles(backend, {t for t, _ in running})
    result = {"reverted": [{"topic": t, "partition": p, "replicas": r} for (t, p), r in sorted(reverted.items())],
              "revert_plan": str(revert_plan), "rollback_file": str(saved), "throttle_bytes_per_s": None,
              "throttles_removed": removed}
    if not wait:
        emit(ctx, result, lambda: f"moving {counted(len(reverted), 'partition')} back; follow with "
             f"`kafkactl reassign verify --plan {revert_plan}`"
             + (f"\nthrottles removed from {', '.join(removed)}" if removed else ""))
        return
    result["throttled_entities"] = []
    report_wait(ctx, result, wait_with_progress(ctx, backend, reverted), revert_plan)
