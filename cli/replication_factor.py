"""`kafkactl topics alter T --replication-factor N`: generate the reassignment and run it.

Kafka's scripts cannot change a topic's replication factor; operators write
a reassignment JSON by hand and feed it to kafka-reassign-partitions.sh.
This writes it (cluster/admin/replication_factor.py: minimal moves, leaders
stay) and runs it with `reassign execute`'s steps (cli/reassign_run.py):
refused while another reassignment runs, the rollback file saved first,
throttles and /admin/reassign_partitions in one multi, progress with --wait.
The multi also checks that the topic znode is still the one the plan was
made from, since the operator may take a while to confirm.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import typer

from kafkactl.cli.common import ZK_TIMEOUT_S, shared, timeout_s, zookeeper
from kafkactl.cli.errors import CliError, CliUsageError
from kafkactl.cli.reassign_run import (
    WAIT_TIMEOUT_S, announce_rollback, confirm_or_refuse, emit, ids, refuse_if_running, remove_throttles,
    report_wait, save_plan, save_rollback, start, state_file, throttle_writes, wait_with_progress,
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
    from kafkactl.cluster.admin import reassignment as ra
    from kafkactl.cluster.admin.replication_factor import ReplicationFactorError, propose_replication_factor
    from kafkactl.cluster.admin.topics import (
        TopicNotFoundError, live_brokers, marked_for_deletion, read_assignment,
    )
    from kafkactl.cluster.zk import layout

    check_options(options)
    zk_timeout_s = timeout_s(ctx, ZK_TIMEOUT_S)
    with zookeeper(ctx, "topics alter --replication-factor writes its replication throttles as ZooKeeper "
                        "configs") as client:
        try:
            assignment, zk_version = read_assignment(client, topic, zk_timeout_s)
        except TopicNotFoundError as error:
            raise CliUsageError(f"{error} (see `kafkactl topics list`)") from None
        if topic in marked_for_deletion(client, zk_timeout_s):
            raise CliError(f"topic {topic!r} is marked for deletion")
        if options.out is None:   # a plan file is for later: another reassignment may run meanwhile
            refuse_if_running(client, zk_timeout_s)
        moving = sorted(set(assignment.adding_replicas) | set(assignment.removing_replicas))
        if moving:
            raise CliError(f"topic {topic!r} partition {moving[0]} is still being reassigned "
                           f"(adding/removing replicas in its topic znode); wait for it to finish")
        registered = {b.broker_id: b.rack for b in live_brokers(client, zk_timeout_s)}
        try:
            proposed = propose_replication_factor(topic, assignment.partitions, factor, registered,
                                                  _replica_counts(client, zk_timeout_s),
                                                  _leaders(client, topic, zk_timeout_s))
        except ReplicationFactorError as error:
            raise CliUsageError(f"--replication-factor {factor}: {error}") from None
        current = {(topic, p): list(assignment.partitions[p]) for p in proposed}
        targets = {(topic, p): r for p, r in proposed.items()}
        result = _proposal(topic, factor, assignment.partitions, current, targets)
        if not targets:
            emit(ctx, result, lambda: f"topic {topic} has replication factor {factor} already; nothing to do")
            return
        if options.out is not None:
            result["plan_file"] = str(save_plan(targets, options.out, "--out"))
            emit(ctx, result, lambda: _proposal_text(result) + f"\n\nwrote the plan to {options.out}; start it with "
                 f"`kafkactl reassign execute --plan {options.out}`")
            return
        writes = throttle_writes(client, current, targets, options.throttle, zk_timeout_s)
        result.update(dry_run=options.dry_run, throttle_bytes_per_s=options.throttle,
                      throttled_entities=[e.entity_path for e in writes.changes])
        if options.dry_run:
            emit(ctx, result, lambda: _proposal_text(result) + "\n\ndry run: nothing was written")
            return
        if shared(ctx).output == "table":
            print(_proposal_text(result) + "\n", flush=True)
        confirm_or_refuse(_prompt(result), options.yes)
        saved = save_rollback(current, options.rollback_file)
        plan = save_plan(targets, state_file("plan"), "plan file")
        start(client, targets, writes, zk_timeout_s, unchanged={layout.topic(topic): zk_version})
        announce_rollback(saved)
        result.update(rollback_file=str(saved), plan_file=str(plan))
        if not options.wait:
            emit(ctx, result, lambda: f"started the reassignment of {counted(len(targets), 'partition')} of "
                 f"topic {topic}; follow with `kafkactl reassign verify --plan {plan}`"
                 + (" (it also removes the throttles)" if options.throttle else ""))
            return
        states = wait_with_progress(client, targets, timeout_s(ctx, WAIT_TIMEOUT_S), zk_timeout_s)
        if options.throttle and all(s.status == ra.COMPLETE for s in states):
            result["throttles_removed"] = remove_throttles(client, {topic}, zk_timeout_s)
    report_wait(ctx, result, states, plan)


def _leaders(client, topic: str, zk_timeout_s: float) -> dict[int, int]:
    """Partition -> its current leader (none while a partition has no leader)."""
    from kafkactl.cluster.admin.topics import describe_topics

    return {info.partition: info.leader for info in describe_topics(client, [topic], zk_timeout_s)[topic] or ()
            if info.leader >= 0}


def _replica_counts(client, zk_timeout_s: float) -> dict[int, int]:
    """Replicas per broker over every topic (the topic znodes, read with multiRead)."""
    from kafkactl.cluster.admin.topics import list_topics, read_nodes
    from kafkactl.cluster.zk import codecs, layout

    names = list_topics(client, zk_timeout_s)
    counts: dict[int, int] = {}
    for name, node in zip(names, read_nodes(client, [layout.topic(n) for n in names], zk_timeout_s)):
        if node is None:
            continue   # deleted meanwhile
        for replicas in codecs.decode_topic(name, node[0]).partitions.values():
            for broker_id in replicas:
                counts[broker_id] = counts.get(broker_id, 0) + 1
    return counts


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
