"""`kafkactl elect`: preferred and unclean leader elections, as kafka-leader-election.sh asks for them.

Through ZooKeeper (-z) the ZooKeeper-mode way (below); through the Admin API
(-b) with ElectLeaders (cli/elect_admin.py). Both report the same outcomes.
"""

from __future__ import annotations

from pathlib import Path

import typer

from kafkactl.cli.common import SHARED_EPILOG, ZK_TIMEOUT_S, cluster_backend, shared, timeout_s
from kafkactl.cli.errors import CliError, CliUsageError
from kafkactl.cluster.admin.wording import counted

app = typer.Typer(help="Elect partition leaders: the preferred replica, or (losing data) out of the ISR.",
                  no_args_is_help=True, epilog=SHARED_EPILOG)

ELECTION_TIMEOUT_S = 60.0

_ALL = typer.Option(False, "--all", help="Every partition of every topic.")
_TOPIC = typer.Option(None, "--topic", metavar="TOPIC", help="The partitions of this topic.")
_PARTITION = typer.Option(None, "--partition", metavar="P", min=0, help="Only this partition (with --topic).")
_PLAN = typer.Option(None, "--plan", metavar="FILE",
                     help='Kafka\'s election JSON: {"partitions":[{"topic":"t","partition":0}]}.')
_NO_WAIT = typer.Option(False, "--no-wait", help="Write the trigger and return without a report.")


@app.command(epilog=SHARED_EPILOG)
def preferred(ctx: typer.Context, all_: bool = _ALL, topic: str | None = _TOPIC, partition: int | None = _PARTITION,
              plan: Path | None = _PLAN, no_wait: bool = _NO_WAIT) -> None:
    """Give leadership back to each partition's preferred (first) replica.

    Writes /admin/preferred_replica_election for the partitions that can
    move (preferred replica alive and in the ISR, not already leading, not
    being reassigned); refused while an earlier election is in progress.
    Reports old -> new leader and epoch, and why others could not move
    (--timeout bounds the wait, default 60 s). Exit 1 if any could not.
    With -b: ElectLeaders (PREFERRED) for the partitions that can move."""
    from kafkactl.cluster.admin import election
    from kafkactl.cluster.admin.backend import ADMIN_API

    zk_timeout_s = timeout_s(ctx, ZK_TIMEOUT_S)
    with cluster_backend(ctx) as backend:
        if backend.kind == ADMIN_API:
            from kafkactl.cli.elect_admin import elect

            asked, views, live = _select(backend, all_, topic, partition, plan)
            _report(ctx, elect(ctx, backend, "preferred", asked, views, live, no_wait))
            return
        client = backend.client
        if election.preferred_running(client, zk_timeout_s):
            raise CliError("a preferred replica election is in progress (/admin/preferred_replica_election "
                           "exists); wait for the controller to finish it")
        asked, views, live = _select(backend, all_, topic, partition, plan)
        eligible, outcomes = election.split(views, asked, live, election.preferred_obstacle)
        if eligible:
            try:
                election.start_preferred(client, eligible, zk_timeout_s)
            except election.ElectionRunning as error:
                raise CliError(str(error)) from None
            outcomes += _after(ctx, client, views, eligible, no_wait, election.preferred_obstacle,
                               election.preferred_achieved,
                               lambda: not election.preferred_running(client, zk_timeout_s))
    _report(ctx, outcomes)


@app.command(epilog=SHARED_EPILOG)
def unclean(ctx: typer.Context, all_: bool = _ALL, topic: str | None = _TOPIC, partition: int | None = _PARTITION,
            plan: Path | None = _PLAN, no_wait: bool = _NO_WAIT,
            yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation.")) -> None:
    """Elect a leader outside the ISR for offline partitions. DATA MAY BE LOST:
    the new leader may lack messages the old leaders acknowledged, and
    consumers may see offsets go back.

    ZooKeeper-mode Kafka has no trigger for it: its controller elects
    uncleanly when a topic's unclean.leader.election.enable becomes true. So
    kafkactl enables it on the topics concerned (this elects every offline
    partition of those topics, also ones not asked for: they are listed
    before you confirm), waits for the election (--timeout, default 60 s),
    then restores each topic's previous setting. Partitions with a live
    leader need nothing; those with no live replica cannot be elected.
    --no-wait is refused: the setting can only be restored after the
    election. Exit 1 if any asked-for partition could not be elected.
    With -b: ElectLeaders (UNCLEAN) for the asked-for partitions only, which
    needs no config change (--no-wait then returns after the request)."""
    from kafkactl.cluster.admin import configs, election
    from kafkactl.cluster.admin.backend import ADMIN_API

    from kafkactl.cli.common import is_admin_api

    if no_wait and not is_admin_api(ctx):
        raise CliUsageError("--no-wait: an unclean election must be waited for, so that each topic's "
                            "unclean.leader.election.enable can be restored after it")
    from kafkactl.cli.reassign import confirm_or_refuse

    zk_timeout_s = timeout_s(ctx, ZK_TIMEOUT_S)
    with cluster_backend(ctx) as backend:
        asked, views, live = _select(backend, all_, topic, partition, plan)
        if backend.kind == ADMIN_API:
            from kafkactl.cli.elect_admin import elect

            eligible, _ = election.split(views, asked, live, election.unclean_obstacle)
            if eligible:
                confirm_or_refuse(_unclean_prompt(eligible, []), yes)
            _report(ctx, elect(ctx, backend, "unclean", asked, views, live, no_wait))
            return
        client = backend.client
        eligible, outcomes = election.split(views, asked, live, election.unclean_obstacle)
        if eligible:
            topics = sorted({t for t, _ in eligible})
            also = election.other_offline(views, topics, asked, live)
            confirm_or_refuse(_unclean_prompt(eligible, also), yes)
            try:
                before = election.enable_unclean(client, topics, zk_timeout_s)
            except configs.ConcurrentChange as error:
                raise CliError(str(error)) from None
            try:
                outcomes += _after(ctx, client, views, eligible, False, election.unclean_obstacle,
                                   election.unclean_achieved, None)
            finally:
                _restore(client, before, zk_timeout_s)
    _report(ctx, outcomes)


def _select(backend, all_: bool, topic: str | None, partition: int | None, plan: Path | None):
    """(asked partitions, views of their topics' partitions, live broker ids); exit 2 on bad input."""
    from kafkactl.cluster.admin import reassignment as ra
    from kafkactl.cluster.admin.plan_file import PlanError, check_election_partitions

    pairs = _plan_pairs(all_, topic, partition, plan)
    topics = backend.topic_names() if all_ else sorted({t for t, _ in pairs}) if pairs else [topic]
    views = backend.partition_views(topics)
    flat = ra.flatten(views)
    if pairs is not None:
        try:
            check_election_partitions(pairs, ra.partition_numbers(views), str(plan))
        except PlanError as error:
            raise CliUsageError(str(error)) from None
        asked = pairs
    elif all_:
        asked = sorted(flat)
    else:
        if views[topic] is None:
            raise CliUsageError(f"--topic: topic {topic!r} does not exist (see `kafkactl topics list`)")
        if partition is not None and partition not in views[topic]:
            raise CliUsageError(f"--partition: topic {topic!r} has no partition {partition} "
                                f"(it has 0..{max(views[topic])})")
        asked = [(topic, partition)] if partition is not None else sorted(tp for tp in flat if tp[0] == topic)
    return asked, flat, {b.broker_id for b in backend.brokers()}


def _plan_pairs(all_: bool, topic: str | None, partition: int | None, plan: Path | None):
    from kafkactl.cluster.admin.plan_file import PlanError, parse_election_plan

    chosen = [n for n, given in (("--all", all_), ("--topic", topic is not None), ("--plan", plan is not None))
              if given]
    if len(chosen) != 1:
        raise CliUsageError("choose exactly one of --all, --topic TOPIC [--partition P] or --plan FILE"
                            + (f" (got {' and '.join(chosen)})" if chosen else ""))
    if partition is not None and topic is None:
        raise CliUsageError("--partition needs --topic")
    if plan is None:
        return None
    try:
        return parse_election_plan(plan.read_text(), str(plan))
    except OSError as error:
        raise CliUsageError(f"--plan {plan}: cannot read it ({error.strerror or error})") from None
    except PlanError as error:
        raise CliUsageError(str(error)) from None


def _after(ctx, client, before: dict, eligible: list, no_wait: bool, obstacle, achieved, finished):
    """Outcomes of the partitions asked to elect, after waiting for the controller."""
    import time

    from kafkactl.cluster.admin import election
    from kafkactl.cluster.admin import reassignment as ra
    from kafkactl.cluster.admin.topics import live_brokers

    if no_wait:
        return [election.Outcome(*tp, election.REQUESTED, before[tp].leader, -1, -1) for tp in eligible]
    zk_timeout_s = timeout_s(ctx, ZK_TIMEOUT_S)
    deadline = time.monotonic() + timeout_s(ctx, ELECTION_TIMEOUT_S)
    topics = sorted({t for t, _ in eligible})

    def look():
        views = ra.flatten(ra.read_partitions(client, topics, zk_timeout_s))
        return views, {b.broker_id for b in live_brokers(client, zk_timeout_s)}

    def done() -> bool:
        if finished is not None and not finished():
            return False
        views, live = look()
        return all(tp in views and achieved(views[tp], live) for tp in eligible)

    election.wait_for(done, deadline)
    views, live = look()
    return election.results(before, views, eligible, live, obstacle, achieved)


def _restore(client, before: dict, zk_timeout_s: float) -> None:
    import sys

    from kafkactl.cluster.admin import configs, election

    try:
        skipped = election.restore_unclean(client, before, zk_timeout_s)
    except configs.ConcurrentChange:
        skipped = [e.name for e in before]
    for topic in skipped:
        print(f"kafkactl: warning: topic {topic!r}: unclean.leader.election.enable was changed by someone else "
              f"meanwhile, so it was not restored (see `kafkactl configs describe --topic {topic}`)",
              file=sys.stderr)


def _unclean_prompt(eligible: list, also: list) -> str:
    names = ", ".join(f"{t}-{p}" for t, p in eligible[:10]) + (" ..." if len(eligible) > 10 else "")
    extra = (f" This also elects the other offline partitions of these topics: "
             f"{', '.join(f'{t}-{p}' for t, p in also[:10])}{' ...' if len(also) > 10 else ''}.") if also else ""
    return (f"Elect leaders outside the ISR for {counted(len(eligible), 'partition')} ({names}); messages acknowledged "
            f"by the old leaders may be lost.{extra} Continue?")


def _report(ctx, outcomes: list) -> None:
    from kafkactl.cluster.admin import election

    from kafkactl.cli.output import emit, render_table

    outcomes = sorted(outcomes, key=lambda o: (o.topic, o.partition))
    rows = [o.to_dict() for o in outcomes]
    shown = [o for o in outcomes if o.status != election.NOT_NEEDED]
    not_needed = len(outcomes) - len(shown)

    def table() -> str:
        text = render_table([[o.topic, o.partition, o.status, _leader(o.old_leader),
                              _leader(o.new_leader) if o.status != election.REQUESTED else "",
                              o.leader_epoch if o.status == election.ELECTED else "", o.reason] for o in shown],
                            ["TOPIC", "PARTITION", "RESULT", "OLD LEADER", "NEW LEADER", "EPOCH", "REASON"]) \
            if shown else "no partition needed an election"
        return text + (f"\n{counted(not_needed, 'partition')} needed no election" if shown and not_needed else "")

    emit(rows, shared(ctx).output, table)
    failed = [o for o in outcomes if o.status == election.FAILED]
    if failed:
        raise CliError(f"{len(failed)} of the partitions asked for could not be elected "
                       f"(first: {failed[0].topic}-{failed[0].partition}: {failed[0].reason})")


def _leader(broker_id: int) -> str:
    return "none" if broker_id < 0 else str(broker_id)
