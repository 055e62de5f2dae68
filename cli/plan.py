"""`kafkactl plan`: the placement planner, a PySpark job from a snapshot to a plan.

A noun that is a single command (`kafkactl plan --snapshot DIR --out DIR`):
it exposes `command`, which cli/main.py registers on the root app, rather
than a typer app of subcommands. PySpark and matplotlib are imported only
when it runs, and only after checking they are installed: they are the
`planner` extra (cli/extras.py), which a broker host's install lacks.
"""

from __future__ import annotations

from pathlib import Path

import typer

from kafkactl.cli.common import shared
from kafkactl.cli.errors import CliError, CliUsageError
from kafkactl.cluster.admin.wording import counted

_GOALS_HELP = "Soft goals, highest priority first [default: hot_on_ssd,disk,network,counts,topic_spread]."


def command(
    ctx: typer.Context,
    snapshot: Path = typer.Option(..., "--snapshot", metavar="DIR",
                                  help="Snapshot directory (brokers, log_dirs, partitions; JSON Lines or Parquet)."),
    out: Path = typer.Option(..., "--out", metavar="DIR",
                             help="Where to write plan.json, rollback.json, report.md/json, utilization.png "
                                  "(must not exist, or be empty)."),
    master: str = typer.Option("local[*]", "--master", metavar="URL", help="Spark master."),
    capacity_threshold: float = typer.Option(0.8, "--capacity-threshold", metavar="FRACTION",
                                             help="No log dir above this fraction of its capacity."),
    network_threshold: float | None = typer.Option(
        None, "--network-threshold", metavar="FRACTION",
        help="No broker above this fraction of its network in and out capacity [default: 0.8]."),
    network_in_threshold: float | None = typer.Option(None, "--network-in-threshold", metavar="FRACTION",
                                                      help="Inbound only (overrides --network-threshold)."),
    network_out_threshold: float | None = typer.Option(None, "--network-out-threshold", metavar="FRACTION",
                                                       help="Outbound only (overrides --network-threshold)."),
    exclude_brokers: str | None = typer.Option(None, "--exclude-brokers", metavar="ID,ID,...",
                                               help="Brokers to empty (decommission)."),
    add_brokers: str | None = typer.Option(None, "--add-brokers", metavar="ID,ID,...",
                                           help="New, empty brokers of the snapshot to fill."),
    goals: str | None = typer.Option(None, "--goals", metavar="GOAL,GOAL,...", help=_GOALS_HELP),
    max_bytes_moved: int | None = typer.Option(None, "--max-bytes-moved", metavar="BYTES",
                                               help="Move at most this many bytes."),
    max_moves: int | None = typer.Option(None, "--max-moves", metavar="N", help="Move at most N replicas."),
    throttle: int | None = typer.Option(None, "--throttle", metavar="BYTES_PER_S",
                                        help="Replication throttle, to estimate how long the plan takes."),
    seed: int = typer.Option(0, "--seed", metavar="N", help="Seed of Kafka's assignment in the report."),
) -> None:
    """Plan balanced, rack- and SSD/HDD-aware placement from a snapshot (PySpark).

    Read a snapshot, plan where every replica and log dir should be, and
    write the plan (Kafka's reassignment JSON, for `kafkactl reassign
    execute`) with a report. Exit 1, writing nothing, when a hard constraint
    cannot be met; exit 2 on a bad option or snapshot."""
    from kafkactl.cli.extras import PLANNER_MODULES, require

    require(PLANNER_MODULES, extra="planner", what="the planner")
    from kafkactl.planner import job

    if not master.strip():
        raise CliUsageError("--master: give a Spark master URL, e.g. local[*]")
    try:
        options = job.build_options(capacity_threshold, network_threshold, network_in_threshold,
                                    network_out_threshold, exclude_brokers, add_brokers, goals, max_bytes_moved,
                                    max_moves, throttle, seed)
        result = job.plan(snapshot, out, master, options, note=_note, quiet=not shared(ctx).debug)
    except job.PlanUsageError as error:
        raise CliUsageError(error.message, "\n".join(error.details)) from None
    except job.PlanError as error:
        raise CliError(error.message, "\n".join(error.details)) from None
    from kafkactl.cli.output import emit

    emit(result, shared(ctx).output, lambda: summary_table(result, out))


def _note(line: str) -> None:
    import sys

    print(f"kafkactl: note: {line}", file=sys.stderr)


def summary_table(result: dict, out: Path) -> str:
    from kafkactl.cli.output import render_table

    rows = []
    for name in ("disk_utilization_ssd", "disk_utilization_hdd", "network_in_utilization",
                 "network_out_utilization", "replica_count", "leader_count"):
        states = result["resources"][name]
        rows.append([name] + [_ratio(states[s]) for s in ("before", "after", "kafka_baseline", "lower_bound")])
    table = render_table(rows, ["RESOURCE (MAX/MEAN)", "BEFORE", "AFTER", "KAFKA", "LOWER BOUND"])
    moved = result["moves"]["after"]
    reassigning = result.get("snapshot_reassigning_partitions") or 0
    mid_move = (f"the snapshot was taken during a reassignment: {counted(reassigning, 'partition')} recorded at "
                f"their target replicas\n" if reassigning else "")
    return (f"{table}\n\n{mid_move}{counted(result['plan_partitions'], 'partition')} change: {moved['replica_moves']} replica moves, "
            f"{moved['bytes_moved']} bytes moved, {moved['dir_moves']} moves between dirs, "
            f"{moved['leader_changes']} leader changes\n{_duration_line(result)}"
            f"wrote {out}/plan.json, rollback.json, report.md, report.json, utilization.png "
            f"(run: kafkactl reassign execute --plan {out}/plan.json)")


def _duration_line(result: dict) -> str:
    """With --throttle only: the same estimate as report.md's moves table."""
    from kafkactl.planner.usage import human_duration, human_rate

    seconds = result["moves"]["after"]["estimated_duration_s"]
    if seconds is None:
        return ""
    return f"estimated duration at --throttle {human_rate(result['options']['throttle_bytes_per_s'])}: " \
           f"{human_duration(seconds)}\n"


def _ratio(stats: dict | None) -> str:
    return "-" if stats is None or stats["max_mean"] is None else f"{stats['max_mean']:.3f}"
