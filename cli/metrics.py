"""`kafkactl metrics`: what the brokers measure, gathered into a cluster snapshot.

`snapshot` reads the assignment, leaders and live brokers from ZooKeeper,
scrapes every live broker's GET /metrics and writes the three files the
placement planner reads (docs/snapshot.md). Kafka's broker registration has
no metrics port, so where each broker serves its metrics comes from
--metrics-endpoints, else --metrics-port (on each broker's registered host),
else the local cluster that the context points at.
"""

from __future__ import annotations

import typer

from kafkactl.cli.common import SHARED_EPILOG, ZK_TIMEOUT_S, cluster_backend, shared, timeout_s
from kafkactl.cli.errors import CliError, CliUsageError
from kafkactl.cluster.admin.wording import counted

app = typer.Typer(help="Broker metrics and cluster snapshots for the planner.", no_args_is_help=True,
                  epilog=SHARED_EPILOG)


@app.command(epilog=SHARED_EPILOG)
def snapshot(
    ctx: typer.Context,
    out: str = typer.Option(..., "--out", metavar="DIR", help="Directory to create (new or empty)."),
    capacity_file: str | None = typer.Option(
        None, "--capacity-file", metavar="FILE",
        help="JSON network capacities (default and per broker) and log dir capacities; see docs/snapshot.md."),
    network_in_capacity: int | None = typer.Option(
        None, "--network-in-capacity", min=1, metavar="BYTES_PER_S",
        help="Every broker's inbound network capacity (a broker's entry in --capacity-file wins)."),
    network_out_capacity: int | None = typer.Option(
        None, "--network-out-capacity", min=1, metavar="BYTES_PER_S",
        help="Every broker's outbound network capacity (a broker's entry in --capacity-file wins)."),
    metrics_port: int | None = typer.Option(
        None, "--metrics-port", min=1, max=65535, metavar="PORT",
        help="The brokers' metrics.port, on each broker's registered host."),
    metrics_endpoints: str | None = typer.Option(
        None, "--metrics-endpoints", metavar="ID=HOST:PORT,...",
        help="Where each broker serves /metrics; others fall back to --metrics-port."),
    allow_reassignment_in_progress: bool = typer.Option(
        False, "--allow-reassignment-in-progress",
        help="While partitions are being reassigned, record their target replicas (and say so in "
             "snapshot.json) instead of refusing."),
) -> None:
    """Write brokers.jsonl, log_dirs.jsonl, partitions.jsonl and snapshot.json for the planner.

    Refused (exit 1, nothing written) while a reassignment is in progress,
    unless --allow-reassignment-in-progress."""
    from kafkactl.cluster.admin.snapshot import (
        CapacityFileError, Capacities, SnapshotError, build_snapshot, load_capacity_file, out_dir_problem,
        read_cluster_via, scrape_brokers, write_snapshot)
    from kafkactl.cluster.admin.snapshot_moves import ReassignmentInProgress, read_moving, settle

    from kafkactl.cli.output import emit

    problem = out_dir_problem(out)
    if problem:   # a usage error, as `kafkactl plan --out` says it, before anything is asked of the cluster
        raise CliUsageError(f"--out {problem}")

    explicit = _parse_endpoints(metrics_endpoints) if metrics_endpoints else {}
    if capacity_file is None:
        for value, option in ((network_in_capacity, "--network-in-capacity"),
                              (network_out_capacity, "--network-out-capacity")):
            if value is None:
                raise CliUsageError(f"{option}: a network capacity is needed (BYTES_PER_S), "
                                    f"or a --capacity-file with one")
    try:
        capacities = (load_capacity_file(capacity_file, network_in_capacity, network_out_capacity)
                      if capacity_file else Capacities(network_in_capacity, network_out_capacity))
    except CapacityFileError as error:
        raise CliUsageError(f"--capacity-file: {error}") from None
    deadline_s = timeout_s(ctx, ZK_TIMEOUT_S)
    with cluster_backend(ctx, deadline_s) as backend:
        brokers, partitions = read_cluster_via(backend)
        moving = read_moving(backend, sorted({p.topic for p in partitions}))
    if moving.any and not allow_reassignment_in_progress:
        raise CliError(f"{ReassignmentInProgress(moving)}; no snapshot written")
    endpoints = _endpoints(ctx, brokers, explicit, metrics_port)
    try:
        metrics = scrape_brokers(endpoints, deadline_s)
        partitions, metrics, reassigning = settle(partitions, metrics, moving.targets)
        built = build_snapshot(brokers, partitions, metrics, capacities, reassigning)
        written = write_snapshot(built, out)
    except CapacityFileError as error:
        raise CliUsageError(f"{error}; no snapshot written") from None
    except SnapshotError as error:
        raise CliError(f"{error}; no snapshot written") from None
    result = {"out": str(written), "brokers": len(built.brokers), "log_dirs": len(built.log_dirs),
              "partitions": len(built.partitions), "reassigning_partitions": reassigning,
              "metrics_endpoints": {str(b): u for b, u in endpoints.items()}}
    mid_move = (f" ({counted(reassigning, 'partition')} being reassigned, recorded at their target replicas)"
                if reassigning else "")
    emit(result, shared(ctx).output,
         lambda: f"wrote a snapshot of {counted(len(built.brokers), 'broker')}, "
                 f"{counted(len(built.log_dirs), 'log dir')} and {counted(len(built.partitions), 'partition')} "
                 f"to {written}{mid_move}")


def _parse_endpoints(text: str) -> dict[int, str]:
    endpoints = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        broker, sep, address = item.partition("=")
        host, colon, port = address.rpartition(":")
        if not sep or not broker.strip().isdigit() or not colon or not host or not port.isdigit() \
                or not 0 < int(port) < 65536:
            raise CliUsageError(f"--metrics-endpoints: {item!r}: expected BROKER_ID=HOST:PORT")
        endpoints[int(broker)] = address.strip()
    return endpoints


def _endpoints(ctx: typer.Context, brokers, explicit: dict[int, str], port: int | None) -> dict[int, str]:
    """broker id -> metrics URL for every live broker."""
    local = {} if port is not None else _local_cluster_endpoints(ctx)
    urls = {}
    for broker in brokers:
        if broker.broker_id in explicit:
            address = explicit[broker.broker_id]
        elif port is not None:
            address = f"{_bracketed(broker.host)}:{port}"
        elif broker.broker_id in local:
            address = local[broker.broker_id]
        else:
            raise CliUsageError(f"no metrics endpoint for broker {broker.broker_id}: pass --metrics-port "
                                f"(the brokers' metrics.port) or --metrics-endpoints ID=HOST:PORT,...")
        urls[broker.broker_id] = f"http://{address}/metrics"
    return urls


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _local_cluster_endpoints(ctx: typer.Context) -> dict[int, str]:
    """From the context's local cluster, when it is the cluster being talked to."""
    from kafkactl.cluster.local import LocalCluster, LocalClusterError

    from kafkactl.cli.config import BOOTSTRAP_KEY, load_config, resolve_target

    config = load_config()
    name = shared(ctx).context or config.current_context
    entry = config.contexts.get(name or "", {})
    address = resolve_target(shared(ctx)).address
    if not entry.get("cluster_dir") or address not in (entry.get("zookeeper"), entry.get(BOOTSTRAP_KEY)):
        return {}
    try:
        spec = LocalCluster(entry["cluster_dir"]).spec()
    except LocalClusterError:
        return {}
    return {b.id: f"{spec.host}:{b.metrics_port}" for b in spec.brokers if b.metrics_port is not None}
