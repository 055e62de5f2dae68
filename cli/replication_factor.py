"""`kafkactl topics alter T --replication-factor N`: generate the reassignment and run it.

Kafka's scripts cannot change a topic's replication factor; operators write
a reassignment JSON by hand and feed it to kafka-reassign-partitions.sh.
This writes it (cluster/admin/replication_factor.py: minimal moves, leaders
stay) and runs it with `reassign execute`'s steps, through either back end
(cli/replication_factor_steps.py): refused while another reassignment runs,
the rollback file saved first, then the throttles and the reassignment,
progress with --wait. The operator may take a while to confirm, so the
start is refused if the topic changed since the plan was made: through
ZooKeeper the multi checks the topic znode's version; through the Admin API,
which has no such condition, the topic's replicas are read again just before.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import typer

from kafkactl.cli.common import cluster_backend, shared
from kafkactl.cli.errors import CliError, CliUsageError
from kafkactl.cli.reassign_admin import admin_wait_s
from kafkactl.cli.reassign_run import (
    announce_rollback, confirm_or_refuse, emit, ids, report_wait, save_plan, save_rollback, state_file,
)
from kafkactl.cluster.admin.wording import counted


@dataclass(frozen=True)
class RunOptions:
    """How to carry the change out (the options `reassign execute` has, and more)."""
    yes: bool = False
    throttle: int | None = None
    wait: bool = False
    rollback_file: Path | None = None
    dry_run: bool = False
    out: Path | None = None

    def given(self) -> list[str]:
        """The options given, by name, for the usage errors."""
        return [name for name, value in (("--yes", self.yes), ("--throttle", self.throttle), ("--wait", self.wait),
                                         ("--rollback-file", self.rollback_file), ("--dry-run", self.dry_run),
                                         ("--out", self.out)) if value]


def check_options(options: RunOptions) -> None:
    """Usage errors, before ZooKeeper is asked anything."""
    if options.out is not None:
        if options.dry_run:
            raise CliUsageError("give --dry-run or --out, not both (--out changes nothing in the cluster either)")
        executing = [o for o in options.given() if o not in ("--out",)]
        if executing:
            raise CliUsageError(f"{executing[0]}: with --out nothing is started; give it to "
                                f"`kafkactl reassign execute --plan {options.out}`")
        if options.out.exists():
            raise CliUsageError(f"--out {options.out}: exists; give a new file")


def alter_replication_factor(ctx: typer.Context, topic: str, factor: int, options: RunOptions) -> None:
    from kafkactl.cli.replication_factor_steps import steps_for
    from kafkactl.cluster.admin import reassignment as ra
    from kafkactl.cluster.admin.replication_factor import ReplicationFactorError, propose_replication_factor

    check_options(options)
    with cluster_backend(ctx, admin_extra_s=admin_wait_s(ctx, options.wait)) as backend:
        steps = steps_for(ctx, backend)
        seen = steps.read_topic(topic)
        if topic in backend.marked_for_deletion():
            raise CliError(f"topic {topic!r} is marked for deletion")
        if options.out is None:   # a plan file is for later: another reassignment may run meanwhile
            steps.refuse_if_running()
        if seen.moving:
            raise CliError(f"topic {topic!r} partition {seen.moving[0]} is still being reassigned "
                           f"({steps.moving_source}); wait for it to finish")
        registered = {b.broker_id: b.rack for b in backend.brokers()}
        try:
            proposed = propose_replication_factor(topic, seen.partitions, factor, registered, steps.replica_load(),
                                                  seen.leaders)
        except ReplicationFactorError as error:
            raise CliUsageError(f"--replication-factor {factor}: {error}") from None
        current = {(topic, p): list(seen.partitions[p]) for p in proposed}
        targets = {(topic, p): r for p, r in proposed.items()}
        result = _proposal(topic, factor, seen.partitions, current, targets)
        if not targets:
            emit(ctx, result, lambda: f"topic {topic} has replication factor {factor} already; nothing to do")
            return
        if options.out is not None:
            result["plan_file"] = str(save_plan(targets, options.out, "--out"))
            emit(ctx, result, lambda: _proposal_text(result) + f"\n\nwrote the plan to {options.out}; start it with "
                 f"`kafkactl reassign execute --plan {options.out}`")
            return
        throttled = steps.plan_throttles(current, targets, options.throttle, set(registered))
        result.update(dry_run=options.dry_run, throttle_bytes_per_s=options.throttle, throttled_entities=throttled)
        if options.dry_run:
            emit(ctx, result, lambda: _proposal_text(result) + "\n\ndry run: nothing was written")
            return
        if shared(ctx).output == "table":
            print(_proposal_text(result) + "\n", flush=True)
        confirm_or_refuse(_prompt(result), options.yes)
        steps.refuse_if_changed(seen)
        saved = save_rollback(current, options.rollback_file)
        plan = save_plan(targets, state_file("plan"), "plan file")
        steps.start(targets, seen, saved)
        announce_rollback(saved)
        result.update(rollback_file=str(saved), plan_file=str(plan))
        if not options.wait:
            emit(ctx, result, lambda: f"started the reassignment of {counted(len(targets), 'partition')} of "
                 f"topic {topic}; follow with `kafkactl reassign verify --plan {plan}`"
                 + (" (it also removes the throttles)" if options.throttle else ""))
            return
        states = steps.wait(targets)
        if options.throttle and all(s.status == ra.COMPLETE for s in states):
            result["throttles_removed"] = steps.remove_throttles(topic)
    report_wait(ctx, result, states, plan)


def _proposal(topic: str, factor: int, partitions: dict, current: dict, targets: dict) -> dict:
    from kafkactl.cluster.admin.plan_file import format_reassignment

    return {"topic": topic, "replication_factor": factor,
            "replication_factors_now": sorted({len(r) for r in partitions.values()}),
            "partitions_changing": len(targets),
            "current": format_reassignment(current), "proposed": format_reassignment(targets)}


def _proposal_text(result: dict) -> str:
    from kafkactl.cli.output import render_table

    rows = []
    for before, after in zip(result["current"]["partitions"], result["proposed"]["partitions"]):
        old, new = before["replicas"], after["replicas"]
        rows.append([after["partition"], ids(old), ids(new), ids(b for b in new if b not in old),
                     ids(b for b in old if b not in new)])
    now = "/".join(str(f) for f in result["replication_factors_now"])
    head = (f"topic {result['topic']}: replication factor {now} -> {result['replication_factor']}, "
            f"{counted(result['partitions_changing'], 'partition')} change; the first replica (preferred "
            f"leader) of each stays")
    if result.get("throttle_bytes_per_s"):
        head += f"; throttled at {result['throttle_bytes_per_s']} bytes/s"
    return head + "\n\n" + render_table(rows, ["PARTITION", "REPLICAS", "PROPOSED", "ADDED", "REMOVED"])


def _prompt(result: dict) -> str:
    pairs = list(zip(result["current"]["partitions"], result["proposed"]["partitions"]))
    added = sorted({b for before, after in pairs for b in after["replicas"] if b not in before["replicas"]})
    removed = sorted({b for before, after in pairs for b in before["replicas"] if b not in after["replicas"]})
    changes = ([f"copying data to brokers {ids(added)}"] if added else []) + \
        ([f"deleting replicas on brokers {ids(removed)}"] if removed else [])
    return (f"Change the replication factor of topic {result['topic']} to {result['replication_factor']} "
            f"({counted(result['partitions_changing'], 'partition')}: {', '.join(changes)})?")
