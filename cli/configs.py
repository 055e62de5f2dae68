"""`kafkactl configs`: dynamic topic and broker configs, as kafka-configs.sh writes them.

Through ZooKeeper (-z), overrides live in /config/topics/<t>,
/config/brokers/<id> and /config/brokers/<default>; every change also
creates a /config/changes/config_change_ notification, in the same multi,
which is how brokers learn of it. Through the Admin API (-b): DescribeConfigs
(the dynamic sources only) and IncrementalAlterConfigs, a broker's own
configs sent to that broker. Either way keys and values are checked first.
"""

from __future__ import annotations

import typer

from kafkactl.cli.common import SHARED_EPILOG, cluster_backend, shared
from kafkactl.cli.errors import CliError, CliUsageError

app = typer.Typer(help="Describe and alter dynamic topic and broker configs.", no_args_is_help=True,
                  epilog=SHARED_EPILOG)

_TOPIC = typer.Option(None, "--topic", metavar="TOPIC", help="A topic's configs.")
_BROKER = typer.Option(None, "--broker", metavar="ID", min=0,
                       help="A broker's own dynamic configs (/config/brokers/ID; they win over --broker-default).")
_DEFAULT = typer.Option(False, "--broker-default",
                        help="The cluster-wide dynamic broker defaults (/config/brokers/<default>).")


@app.command(epilog=SHARED_EPILOG)
def describe(ctx: typer.Context, topic: str | None = _TOPIC, broker: int | None = _BROKER,
             broker_default: bool = _DEFAULT) -> None:
    """A topic's overrides and the defaults of the other keys, or a broker's
    dynamic configs (its own and the cluster-wide defaults it inherits).

    Topic defaults shown are Kafka's; a broker's server.properties may change
    them and is not in ZooKeeper. A broker key kafkactl's broker does not
    apply, or that brokers ignore (wrong level, bad value), has a NOTE saying
    so (`applied` and `note` with -o json)."""
    from kafkactl.cluster.admin import configs

    entity = _entity(topic, broker, broker_default)
    with cluster_backend(ctx) as backend:
        if entity.entity_type == configs.TOPICS:
            _require_topic(backend, entity.name)
        wanted = [entity] if entity.entity_type == configs.TOPICS else [configs.broker_entity(None), entity]
        stored = backend.config_overrides(list(dict.fromkeys(wanted)))
    rows = _topic_rows(stored[entity]) if entity.entity_type == configs.TOPICS else _broker_rows(stored, entity)
    _emit(ctx, rows, lambda: _table(rows))


@app.command(epilog=SHARED_EPILOG)
def alter(
    ctx: typer.Context,
    topic: str | None = _TOPIC,
    broker: int | None = _BROKER,
    broker_default: bool = _DEFAULT,
    add: list[str] | None = typer.Option(None, "--add", metavar="KEY=VALUE",
                                         help="Set a config (repeatable; the value is taken as is)."),
    delete: list[str] | None = typer.Option(None, "--delete", metavar="KEY", help="Remove an override (repeatable)."),
) -> None:
    """Set or remove overrides: keys and values are checked first (an unknown
    key or bad value writes nothing), then the config and its change
    notification are written in one ZooKeeper multi.

    Broker configs: every config Kafka 2.8 updates dynamically
    (log.retention.ms, min.insync.replicas, message.max.bytes,
    max.connections, num.io.threads, the replication throttle rates, ...),
    checked by type and range as Kafka checks them. Listener, SSL and SASL
    configs are per broker (--broker only); read-only ones (broker.id,
    log.dirs, ...) are refused. Brokers apply a change at once, without a
    restart: --broker over --broker-default over server.properties. Keys
    kafkactl's broker does not implement are stored for Kafka brokers and
    said so (docs/broker-configs.md)."""
    from kafkactl.cluster.admin import configs

    entity = _entity(topic, broker, broker_default)
    additions = _parse_pairs(add or [])
    deletions = [k.strip() for k in delete or [] if k.strip()]
    if not additions and not deletions:
        raise CliUsageError("nothing to change: give --add KEY=VALUE or --delete KEY")
    try:
        configs.validate(entity, additions)   # before connecting: bad input never waits on ZooKeeper
    except configs.ConfigError as error:
        raise CliUsageError(f"--add {error}") from None
    with cluster_backend(ctx) as backend:
        if entity.entity_type == configs.TOPICS:
            _require_topic(backend, entity.name)
        try:
            config = backend.alter_config(entity, additions, deletions)
        except configs.ConcurrentChange as error:
            raise CliError(str(error)) from None
    result = {"entity": entity.entity_path, "config": config}
    not_applied = []
    if entity.entity_type == configs.BROKERS:
        from kafkactl.cluster.admin.broker_configs import lookup

        not_applied = sorted(k for k in additions if not lookup(k).applied)
        result["not_applied"] = not_applied

    def table() -> str:
        text = f"updated {entity.label()}: " + (", ".join(f"{k}={v}" for k, v in sorted(config.items()))
                                                 or "no overrides left")
        if not_applied:
            text += (f"\nnote: stored for Kafka brokers, not applied by kafkactl's broker: "
                     f"{', '.join(not_applied)}")
        return text

    _emit(ctx, result, table)


def _entity(topic: str | None, broker: int | None, broker_default: bool):
    from kafkactl.cluster.admin import configs

    chosen = [name for name, given in (("--topic", topic is not None), ("--broker", broker is not None),
                                       ("--broker-default", broker_default)) if given]
    if len(chosen) != 1:
        raise CliUsageError("choose exactly one of --topic TOPIC, --broker ID or --broker-default"
                            + (f" (got {' and '.join(chosen)})" if chosen else ""))
    if topic is not None:
        if not topic.strip():
            raise CliUsageError("--topic: give a topic name")
        return configs.topic_entity(topic)
    return configs.broker_entity(None if broker_default else broker)


def _require_topic(backend, topic: str) -> None:
    if backend.describe_topics([topic])[topic] is None:
        raise CliUsageError(f"--topic: topic {topic!r} does not exist (see `kafkactl topics list`)")


def _parse_pairs(items: list[str]) -> dict[str, str]:
    parsed = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise CliUsageError(f"--add {item!r}: expected KEY=VALUE")
        parsed[key.strip()] = value.strip()
    return parsed


def _topic_rows(overrides: dict[str, str]) -> list[dict]:
    from kafkactl.cluster.admin.configs import topic_defaults

    defaults = topic_defaults()
    rows = [{"key": k, "value": overrides[k] if k in overrides else defaults[k],
             "source": "override" if k in overrides else "default"} for k in sorted(defaults)]
    # Keys this version does not know, written by someone else: still shown.
    rows += [{"key": k, "value": v, "source": "override"} for k, v in sorted(overrides.items()) if k not in defaults]
    return rows


def _broker_rows(stored: dict, entity) -> list[dict]:
    """The broker's own keys over the cluster-wide ones, each checked as a
    broker reading it would: `applied` by kafkactl's broker, or a note why not."""
    from kafkactl.cluster.admin import broker_configs, configs

    default = stored[configs.broker_entity(None)]
    own = stored[entity] if entity.name != configs.BROKER_DEFAULT else {}
    rows = {}
    for level, source, per_broker in ((default, "cluster default", False), (own, f"broker {entity.name}", True)):
        for key, value in level.items():
            applied, note = broker_configs.describe_key(key, value, per_broker)
            rows[key] = {"key": key, "value": value, "source": source, "applied": applied, "note": note}
    return [rows[k] for k in sorted(rows)]


def _table(rows: list[dict]) -> str:
    from kafkactl.cli.output import render_table

    if any("note" in r for r in rows):
        return render_table([[r["key"], r["value"], r["source"], r["note"]] for r in rows],
                            ["KEY", "VALUE", "SOURCE", "NOTE"])
    return render_table([[r["key"], r["value"], r["source"]] for r in rows], ["KEY", "VALUE", "SOURCE"])


def _emit(ctx, data, table) -> None:
    from kafkactl.cli.output import emit

    emit(data, shared(ctx).output, table)
