"""`kafkactl brokers`: registered brokers, their load, and their log dirs.

From ZooKeeper: endpoints, rack, broker epoch (the registration znode's
czxid, which Kafka uses as the broker epoch), whether it is the controller,
and how many partitions it leads and holds. Through the Admin API (-b) the
same from Metadata, which names no listener and no broker epoch (shown as
HOST:PORT and -1). From each broker: its log dirs
with bytes used (its partitions' sizes) and free (DescribeLogDirs), and their
media class (`log.dir.media` through DescribeConfigs; "unknown" for a broker
that does not report it, such as Apache Kafka).
"""

from __future__ import annotations

import typer

from kafkactl.cli.common import SHARED_EPILOG, cluster_backend, shared, timeout_s

app = typer.Typer(help="Registered brokers: endpoints, load and log dirs.", no_args_is_help=True,
                  epilog=SHARED_EPILOG)

BROKER_TIMEOUT_S = 5.0
UNKNOWN_MEDIA = "unknown"


@app.command("list", epilog=SHARED_EPILOG)
def list_(ctx: typer.Context) -> None:
    """Every registered broker, with its load and log dir totals."""
    from kafkactl.cli.output import emit, render_table

    brokers = _brokers(ctx, None)
    rows = [[b["id"], ",".join(b["endpoints"]), b["rack"] or "", b["broker_epoch"], _yes(b["controller"]),
             b["leader_count"], b["replica_count"], _dirs_summary(b)] for b in brokers]
    headers = ["ID", "ENDPOINTS", "RACK", "EPOCH", "CONTROLLER", "LEADERS", "REPLICAS", "LOG DIRS"]
    emit(brokers, shared(ctx).output, lambda: render_table(rows, headers))


@app.command(epilog=SHARED_EPILOG)
def describe(ctx: typer.Context, broker_id: int = typer.Argument(..., metavar="ID")) -> None:
    """One broker in detail, with each log dir's media class, bytes used and free."""
    from kafkactl.cli.output import emit

    [broker] = _brokers(ctx, broker_id)
    emit(broker, shared(ctx).output, lambda: _describe_text(broker))


def _brokers(ctx: typer.Context, only: int | None) -> list[dict]:
    """Every registered broker (or only `only`, exit 2 if it is not registered) as plain data."""
    from kafkactl.cluster.admin.inspect import broker_loads

    from kafkactl.cli.errors import CliUsageError

    with cluster_backend(ctx) as backend:
        registrations = backend.brokers()
        if only is not None:
            known = [r for r in registrations if r.broker_id == only]
            if not known:
                ids = ",".join(str(r.broker_id) for r in registrations) or "none"
                raise CliUsageError(f"ID: broker {only} is not registered (registered: {ids})")
            registrations = known
        controller = backend.controller()
        described = backend.describe_topics(backend.topic_names())
    loads = broker_loads([p for parts in described.values() if parts for p in parts])
    log_dirs = _log_dirs(registrations, timeout_s(ctx, BROKER_TIMEOUT_S))
    return [_broker_data(r, controller.broker_id, loads, log_dirs[r.broker_id]) for r in registrations]


def _broker_data(registration, controller_id: int, loads: dict, log_dirs) -> dict:
    load = loads.get(registration.broker_id)
    data = {
        "id": registration.broker_id,
        "endpoints": list(registration.endpoints),
        "rack": registration.rack,
        "broker_epoch": registration.broker_epoch,
        "registered_ms": registration.timestamp_ms,
        "controller": registration.broker_id == controller_id,
        "leader_count": load.leader_count if load else 0,
        "replica_count": load.replica_count if load else 0,
    }
    if isinstance(log_dirs, str):
        return {**data, "log_dirs": None, "log_dirs_error": log_dirs}
    return {**data, "log_dirs": log_dirs}


def _log_dirs(registrations, deadline_s: float) -> dict[int, list[dict] | str]:
    """Per broker its log dirs, or why they are unknown (the broker did not answer)."""
    from kafkactl.cluster.admin import broker_queries as bq

    addresses = [bq.BrokerAddress(r.broker_id, r.host, r.port) for r in registrations]
    dirs = bq.ask_brokers(addresses, bq.describe_log_dirs, deadline_s)
    configs = bq.ask_brokers(addresses, bq.broker_configs([_MEDIA_KEY]), deadline_s)
    result = {}
    for broker_id, answer in dirs.items():
        if isinstance(answer, bq.BrokerQueryError):
            result[broker_id] = str(answer)
            continue
        config = configs.get(broker_id)
        media = bq.parse_log_dir_media(config.get(_MEDIA_KEY)) if isinstance(config, dict) else {}
        result[broker_id] = [_dir_data(d, media) for d in answer]
    return result


_MEDIA_KEY = "log.dir.media"


def _dir_data(log_dir, media: dict[str, str]) -> dict:
    return {
        "path": log_dir.path,
        "media": media.get(log_dir.path, UNKNOWN_MEDIA),
        "used_bytes": log_dir.used_bytes,
        "free_bytes": log_dir.usable_bytes if log_dir.usable_bytes >= 0 else None,
        "total_bytes": log_dir.total_bytes if log_dir.total_bytes >= 0 else None,
        "partition_count": len(log_dir.partition_sizes),
        "error": log_dir.error,
    }


def _dirs_summary(broker: dict) -> str:
    if broker["log_dirs"] is None:
        return broker["log_dirs_error"]
    return "; ".join(f"{d['media']} {_size(d['used_bytes'])} used, {_size(d['free_bytes'])} free"
                     for d in broker["log_dirs"])


def _describe_text(broker: dict) -> str:
    from kafkactl.cli.output import render_table

    lines = [
        f"broker:        {broker['id']}",
        f"endpoints:     {', '.join(broker['endpoints'])}",
        f"rack:          {broker['rack'] or '-'}",
        f"broker epoch:  {broker['broker_epoch']}",
        f"controller:    {_yes(broker['controller'])}",
        f"leaders:       {broker['leader_count']}",
        f"replicas:      {broker['replica_count']}",
    ]
    if broker["log_dirs"] is None:
        return "\n".join(lines + [f"log dirs:      unknown: {broker['log_dirs_error']}"])
    table = render_table(
        [[d["path"], d["media"], _size(d["used_bytes"]), _size(d["free_bytes"]), _size(d["total_bytes"]),
          d["partition_count"], d["error"] or ""] for d in broker["log_dirs"]],
        ["LOG DIR", "MEDIA", "USED", "FREE", "TOTAL", "PARTITIONS", "ERROR"])
    return "\n".join(lines) + "\n\n" + table


def _size(value: int | None) -> str:
    if value is None:
        return "?"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return str(value)


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"
