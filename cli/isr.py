"""`kafkactl isr`: leaders and ISRs, and how far each replica outside the ISR is behind.

Leader, leader epoch, replicas and ISR come from ZooKeeper (-z) or Metadata
(-b); the lag of an out-of-ISR replica (in offsets) from the brokers
themselves (ListOffsets); "since" is when the partition's leader or ISR last
changed (the state znode's mtime). The Admin API does not say when: with -b
isr_changed_ms is null and the table leaves "since" out.
"""

from __future__ import annotations

from contextlib import contextmanager, nullcontext

import typer

from kafkactl.cli.common import SHARED_EPILOG, cluster_backend, is_admin_api, shared, timeout_s
from kafkactl.cli.topics import complete_topics

# A group that runs by itself; interspersed args, so options may follow the
# topics (click groups otherwise stop reading options at the first argument).
app = typer.Typer(help="Leaders and ISRs, with the lag of replicas outside the ISR.",
                  invoke_without_command=True, subcommand_metavar="", epilog=SHARED_EPILOG,
                  context_settings={"allow_interspersed_args": True})

ISR_TIMEOUT_S = 5.0
DEFAULT_WATCH_S = 2.0


@app.callback(invoke_without_command=True, epilog=SHARED_EPILOG)
def isr(
    ctx: typer.Context,
    topics: list[str] | None = typer.Argument(None, metavar="[TOPIC]...", help="Topics [default: all].",
                                              autocompletion=complete_topics),
    watch: bool = typer.Option(False, "--watch", "-w", help="Refresh until Ctrl-C, as watch(1) does."),
    interval: float = typer.Option(DEFAULT_WATCH_S, "--interval", metavar="SECONDS",
                                   help="Seconds between refreshes with --watch."),
) -> None:
    """Per partition: leader, leader epoch, replicas, ISR, and for each replica
    outside the ISR how far behind it is and (through ZooKeeper) since when; then a summary."""
    if not interval > 0:
        from kafkactl.cli.errors import CliUsageError

        raise CliUsageError(f"--interval {interval!r}: give a positive number of seconds")
    if not watch:
        with _backend(ctx) as backend:
            _show(ctx, backend, list(topics or []))
        return
    if is_admin_api(ctx):
        # The Admin client has one deadline for its command: a fresh one per refresh.
        _watch(ctx, lambda: _backend(ctx), list(topics or []), interval)
        return
    with _backend(ctx) as backend:     # one ZooKeeper session for every refresh
        _watch(ctx, lambda: nullcontext(backend), list(topics or []), interval)


@contextmanager
def _backend(ctx: typer.Context):
    """Either back end; ZooKeeper's reads bounded as the brokers' ListOffsets are (--timeout, default 5 s)."""
    with cluster_backend(ctx, ISR_TIMEOUT_S) as backend:
        yield backend


def _watch(ctx: typer.Context, backends, topics: list[str], interval_s: float) -> None:
    """Tables redrawn in place on a terminal (as watch(1) does), one after the
    other elsewhere; with -o json one document per line, for a pipe.
    `backends()`: a context manager giving the back end for one refresh.
    A refresh that fails for want of an answer is reported on stderr and the
    watch goes on; bad input (a topic that does not exist) ends it, exit 2."""
    import sys
    import time

    from kafkactl.cli.errors import CliError, CliUsageError

    output = shared(ctx).output
    terminal = sys.stdout.isatty()
    try:
        while True:
            if output == "table":
                if terminal:
                    print("\033[H\033[2J", end="")  # clear the screen: only on a terminal
                print(time.strftime("%Y-%m-%d %H:%M:%S"))
            try:
                with backends() as backend:
                    _show(ctx, backend, topics, one_line=output == "json")
            except CliUsageError:
                raise
            except CliError as error:
                # A refresh without an answer (a broker restarting, a busy
                # cluster) is what a watch is for: say so and go on.
                print(f"kafkactl: error: {error} (trying again in {interval_s:g} s)", file=sys.stderr, flush=True)
            sys.stdout.flush()
            time.sleep(interval_s)
    except KeyboardInterrupt:
        return


def _show(ctx: typer.Context, backend, topics: list[str], one_line: bool = False) -> None:
    from kafkactl.cluster.admin.isr_lag import isr_report, summary

    from kafkactl.cli.errors import CliUsageError
    from kafkactl.cli.output import emit

    rows, missing = isr_report(backend, topics or None, timeout_s(ctx, ISR_TIMEOUT_S))
    if missing:
        raise CliUsageError(f"topic {missing[0]!r} does not exist (see `kafkactl topics list`)")
    totals = summary(rows)
    report = {"partitions": rows, "summary": totals}
    if one_line:
        import json
        import sys

        sys.stdout.write(json.dumps(report, separators=(",", ":")) + "\n")
        return
    emit(report, shared(ctx).output, lambda: _table(rows, totals))


def _table(rows: list[dict], totals: dict[str, int]) -> str:
    import time

    from kafkactl.cli.output import render_table

    now_ms = int(time.time() * 1000)
    table = render_table(
        [[r["topic"], r["partition"], r["leader"], r["leader_epoch"], _ids(r["replicas"]), _ids(r["isr"]),
          _out_of_isr(r, now_ms)] for r in rows],
        ["TOPIC", "PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR", "OUT OF ISR"])
    line = (f"partitions: {totals['partitions']}, under-replicated: {totals['under_replicated']}, "
            f"under min ISR: {totals['under_min_isr']}, offline: {totals['offline']}")
    return f"{table}\n\n{line}"


def _out_of_isr(row: dict, now_ms: int) -> str:
    from kafkactl.cluster.admin.inspect import format_time_ms

    if not row["out_of_isr"]:
        return ""
    parts = []
    for lag in row["out_of_isr"]:
        if lag["problem"] is not None:
            parts.append(f"{lag['broker_id']}: lag unknown, {lag['problem']}")
        else:
            parts.append(f"{lag['broker_id']}: {lag['lag']} behind")
    if row["isr_changed_ms"] is None:     # the Admin API does not say when the ISR changed
        return "; ".join(parts)
    return "; ".join(parts) + f" (since {format_time_ms(row['isr_changed_ms'], now_ms)})"


def _ids(values: list[int]) -> str:
    return ",".join(str(v) for v in values)
