"""`kafkactl topics`: list, describe and create topics in Kafka's ZooKeeper layout.

This is the first slice of the topics noun (what `make demo` needs); the
full command set (alter, delete, filters, explicit assignments) grows here.
"""

from __future__ import annotations

import typer

from .common import SHARED_EPILOG, ZK_TIMEOUT_S, shared, timeout_s, zookeeper
from .errors import CliError, CliUsageError

app = typer.Typer(help="List, describe and create topics.", no_args_is_help=True, epilog=SHARED_EPILOG)


@app.command("list", epilog=SHARED_EPILOG)
def list_(ctx: typer.Context) -> None:
    """Topic names, one per line."""
    from kafkactl.cluster.admin.topics import list_topics

    from .output import emit

    with zookeeper(ctx) as client:
        names = list_topics(client, timeout_s(ctx, ZK_TIMEOUT_S))
    emit(names, shared(ctx).output, lambda: "\n".join(names) if names else "(no topics)")


@app.command(epilog=SHARED_EPILOG)
def describe(
    ctx: typer.Context,
    topics: list[str] | None = typer.Argument(None, metavar="[TOPIC]...", help="Topics [default: all]."),
) -> None:
    """Partitions with leader, leader epoch, replicas and ISR."""
    from kafkactl.cluster.admin.topics import describe_topics, list_topics

    from .output import emit, render_table

    deadline_s = timeout_s(ctx, ZK_TIMEOUT_S)
    with zookeeper(ctx) as client:
        names = list(topics) if topics else list_topics(client, deadline_s)
        described = describe_topics(client, names, deadline_s)
    missing = [name for name, partitions in described.items() if partitions is None]
    if missing:
        raise CliError(f"topic {missing[0]!r} does not exist (see `kafkactl topics list`)")
    rows = [p.to_dict() for partitions in described.values() for p in partitions]
    table = lambda: render_table(
        [[r["topic"], r["partition"], r["leader"], r["leader_epoch"], _ids(r["replicas"]), _ids(r["isr"])] for r in rows],
        ["TOPIC", "PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR"],
    )
    emit(rows, shared(ctx).output, table)


def _ids(values: list[int]) -> str:
    return ",".join(str(v) for v in values)


@app.command(epilog=SHARED_EPILOG)
def create(
    ctx: typer.Context,
    name: str = typer.Argument(..., metavar="TOPIC"),
    partitions: int = typer.Option(..., "--partitions", "-p", min=1, help="Number of partitions."),
    replication_factor: int = typer.Option(..., "--replication-factor", "-r", min=1, help="Replicas per partition."),
    config: list[str] | None = typer.Option(None, "--config", metavar="KEY=VALUE", help="Topic config (repeatable)."),
    if_not_exists: bool = typer.Option(False, "--if-not-exists", help="Succeed if the topic exists."),
) -> None:
    """Create a topic with Kafka's replica assignment (rack-aware round robin)."""
    from kafkactl.cluster.admin.replica_assignment import AssignmentError, BrokerInfo, assign_replicas
    from kafkactl.cluster.admin.topic_names import InvalidTopicName, validate_topic_name
    from kafkactl.cluster.admin.topics import TopicExistsError, create_topic, live_brokers
    from kafkactl.cluster.broker.topic_config import TopicConfigError, validate_topic_config

    from .output import emit

    overrides = _parse_configs(config or [])
    try:
        validate_topic_name(name)
        validate_topic_config(overrides)
    except (InvalidTopicName, TopicConfigError) as error:
        raise CliUsageError(str(error)) from None
    deadline_s = timeout_s(ctx, ZK_TIMEOUT_S)
    with zookeeper(ctx) as client:
        brokers = [BrokerInfo(b.broker_id, b.rack) for b in live_brokers(client, deadline_s)]
        try:
            assignment = assign_replicas(brokers, partitions, replication_factor)
        except AssignmentError as error:
            raise CliUsageError(f"--replication-factor: {error}") from None
        try:
            create_topic(client, name, assignment, overrides, deadline_s)
        except TopicExistsError as error:
            if if_not_exists:
                return
            raise CliError(f"{error} (use --if-not-exists to accept that)") from None
    result = {"topic": name, "partitions": {str(p): r for p, r in assignment.items()}}
    emit(result, shared(ctx).output, lambda: f"created topic {name} with {partitions} partitions")


def _parse_configs(items: list[str]) -> dict[str, str]:
    parsed = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise CliUsageError(f"--config {item!r}: expected KEY=VALUE")
        parsed[key.strip()] = value.strip()
    return parsed
