"""Broker processes of a local cluster: their config files and start command.

The broker (kafkactl.cluster.broker) reads a Kafka-style server.properties;
each broker gets its own, with two log dirs whose media are declared in this
project's `log.dir.media` key.
"""

import re
import sys
from collections.abc import Iterable, Mapping

from kafkactl.cluster.local.errors import LocalClusterUsageError
from kafkactl.cluster.local.state import BrokerSpec

BROKER_MODULE = "kafkactl.cluster.broker"
# Keys the local cluster derives from its own bookkeeping; overriding them
# would make cluster.json lie about ports, ids or directories.
MANAGED_KEYS = frozenset({
    "broker.id", "listeners", "advertised.listeners", "log.dirs", "log.dir",
    "log.dir.media", "zookeeper.connect", "metrics.port",
})
_KEY_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def parse_overrides(items: Iterable[str]) -> dict[str, str]:
    """`key=value` strings to a dict; a bad one is named in the error."""
    overrides: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not _KEY_RE.match(key):
            raise LocalClusterUsageError(
                f"bad --config {item!r}: expected key=value, e.g. log.retention.ms=60000")
        overrides[key] = value.strip()
    validate_overrides(overrides)
    return overrides


def validate_overrides(overrides: Mapping[str, str]) -> None:
    for key, value in overrides.items():
        if not isinstance(key, str) or not _KEY_RE.match(key):
            raise LocalClusterUsageError(f"bad config key {key!r}")
        if key in MANAGED_KEYS:
            raise LocalClusterUsageError(
                f"config key {key!r} is managed by the local cluster and cannot be overridden")
        if "\n" in str(value):
            raise LocalClusterUsageError(f"config value for {key!r} contains a newline")


LOCAL_DEFAULTS = {
    "controlled.shutdown.max.retries": "1",
    "controlled.shutdown.retry.backoff.ms": "500",
}


def server_properties(broker: BrokerSpec, host: str, zookeeper_port: int,
                      overrides: Mapping[str, str], cluster_size: int = 1) -> str:
    listener = f"PLAINTEXT://{host}:{broker.port}"
    managed = {
        "broker.id": str(broker.id),
        "listeners": listener,
        "advertised.listeners": listener,
        "log.dirs": ",".join(d.path for d in broker.log_dirs),
        "log.dir.media": ",".join(f"{d.path}:{d.media}" for d in broker.log_dirs),
        "zookeeper.connect": f"{host}:{zookeeper_port}",
    }
    if broker.metrics_port is not None:
        managed["metrics.port"] = str(broker.metrics_port)
    lines = ["# Written by kafkactl for a local cluster; rewritten on every `cluster up`.",
             "# Change settings with `kafkactl cluster up --config key=value` on a new cluster."]
    lines += [f"{k}={_escape(v)}" for k, v in managed.items()]
    # A local cluster is often stopped whole: controlled shutdown cannot move
    # leaders to brokers that are stopping too, so retry briefly instead of
    # Kafka's 3 x 5 s (which would outlast `cluster down`'s grace period).
    # As Kafka's own development server.properties: __consumer_offsets fits the
    # cluster (Kafka's 3 replicas need 3 brokers), and a new group's first
    # rebalance does not wait 3 s for more members.
    local_defaults = {**LOCAL_DEFAULTS, "offsets.topic.replication.factor": str(min(3, max(cluster_size, 1))),
                      "group.initial.rebalance.delay.ms": "0"}
    defaults = {k: v for k, v in local_defaults.items() if k not in overrides}
    lines += [f"{k}={_escape(v)}" for k, v in defaults.items()]
    lines += [f"{k}={_escape(v)}" for k, v in sorted(overrides.items())]
    return "\n".join(lines) + "\n"


def _escape(value: str) -> str:
    # Properties files treat a backslash as an escape character.
    return value.replace("\\", "\\\\")


def broker_argv(config_file: str, python: str = sys.executable,
                module: str = BROKER_MODULE) -> list[str]:
    return [python, "-m", module, config_file]
