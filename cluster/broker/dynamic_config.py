"""Dynamic broker configs as a broker applies them.

Kafka's precedence: /config/brokers/<id> over /config/brokers/<default> over
server.properties over Kafka's defaults. The zk-agent thread reads both
znodes whenever a config change is announced (and on its periodic refresh);
`resolve` turns them and the static config into the config in effect, and
Broker hands what changed to the thread that owns each part (broker.py).

As Kafka's broker does with what it reads from ZooKeeper, a stored key
Kafka would not accept there (read-only, a per-broker key at the default,
a bad value) is ignored with a warning, and the other keys still apply; a
combination Kafka's broker refuses (max.connections.per.ip 0 with no
overrides) leaves the whole update unapplied. Keys Kafka accepts but this
broker does not implement are accepted and ignored (broker_configs.py marks
them `applied=False`; `configs describe` shows them so).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field

from kafkactl.cluster.admin import broker_configs
from kafkactl.cluster.broker.config import BrokerConfig
from kafkactl.cluster.broker.quota import UNLIMITED
from kafkactl.cluster.log.cleaner import reconfiguration_problem
from kafkactl.cluster.log.config import normalise_cleanup_policy

# Key -> the BrokerConfig attribute it overrides, for every applied key that
# has a server.properties counterpart.
APPLIED_ATTRIBUTES = {
    "log.segment.bytes": "log_segment_bytes",
    "log.roll.ms": "log_roll_ms",
    "log.index.size.max.bytes": "log_index_size_max_bytes",
    "log.flush.interval.messages": "log_flush_interval_messages",
    "log.flush.interval.ms": "log_flush_interval_ms",
    "log.retention.bytes": "log_retention_bytes",
    "log.retention.ms": "log_retention_ms",
    "message.max.bytes": "message_max_bytes",
    "log.index.interval.bytes": "log_index_interval_bytes",
    "log.segment.delete.delay.ms": "log_segment_delete_delay_ms",
    "min.insync.replicas": "min_insync_replicas",
    "log.message.timestamp.type": "log_message_timestamp_type",
    "max.connections": "max_connections",
    "max.connections.per.ip": "max_connections_per_ip",
    "max.connections.per.ip.overrides": "max_connections_per_ip_overrides",
    "replica.alter.log.dirs.io.max.bytes.per.second": "replica_alter_log_dirs_io_max_bytes_per_second",
    # the log defaults of compaction (topic configs' broker-wide defaults)
    "log.cleanup.policy": "log_cleanup_policy",
    "log.cleaner.delete.retention.ms": "log_cleaner_delete_retention_ms",
    "log.cleaner.min.compaction.lag.ms": "log_cleaner_min_compaction_lag_ms",
    "log.cleaner.max.compaction.lag.ms": "log_cleaner_max_compaction_lag_ms",
    "log.cleaner.min.cleanable.ratio": "log_cleaner_min_cleanable_ratio",
    # the log cleaner itself (cluster/log/cleaner.py reconfigure)
    "log.cleaner.threads": "log_cleaner_threads",
    "log.cleaner.backoff.ms": "log_cleaner_backoff_ms",
    "log.cleaner.dedupe.buffer.size": "log_cleaner_dedupe_buffer_size",
    "log.cleaner.io.max.bytes.per.second": "log_cleaner_io_max_bytes_per_second",
}
# A stored value in the form the broker's config holds it (else as parsed).
_AS_CONFIG = {"log.cleanup.policy": lambda items: normalise_cleanup_policy(",".join(items))}
# Kafka has these only as dynamic configs (no server.properties key).
LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
APPLIED_KEYS = frozenset(APPLIED_ATTRIBUTES) | {LEADER_RATE, FOLLOWER_RATE}

# Which owner each changed attribute goes to (broker.py).
LOG_ATTRIBUTES = frozenset(APPLIED_ATTRIBUTES[k] for k, spec in broker_configs.KEYS.items()
                           if spec.group == broker_configs.LOG and k in APPLIED_ATTRIBUTES)
CONNECTION_ATTRIBUTES = frozenset({"max_connections", "max_connections_per_ip", "max_connections_per_ip_overrides"})
CLEANER_ATTRIBUTES = frozenset(APPLIED_ATTRIBUTES[k] for k, spec in broker_configs.KEYS.items()
                               if spec.group == broker_configs.CLEANER and k in APPLIED_ATTRIBUTES)
# What server.properties requires of the cleaner's buffer (config.py), per thread.
MIN_DEDUPE_BUFFER_PER_THREAD = 1024 * 1024

DEFAULT_SOURCE = "cluster default"


@dataclass(frozen=True, slots=True)
class Resolved:
    """What is in effect: the static config with the dynamic values applied,
    the throttle rates, and where each applied dynamic value came from."""

    config: BrokerConfig
    leader_rate: int = UNLIMITED
    follower_rate: int = UNLIMITED
    sources: Mapping[str, tuple[str, str]] = field(default_factory=dict)   # key -> (value, source)
    # key -> every applied dynamic (value, source), the one in effect first: DescribeConfigs' synonyms
    layers: Mapping[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)

    def changed_attributes(self, before: Resolved) -> set[str]:
        return {f.name for f in dataclasses.fields(BrokerConfig)
                if getattr(self.config, f.name) != getattr(before.config, f.name)}


class UpdateRefused(ValueError):
    """The dynamic values together are invalid; Kafka's broker keeps its current config then."""


def static(config: BrokerConfig) -> Resolved:
    """Before any dynamic config is read: server.properties alone."""
    return Resolved(config)


def resolve(config: BrokerConfig, default: Mapping[str, str], own: Mapping[str, str],
            cleaner_threads: int | None = None) -> tuple[Resolved, list[str]]:
    """The config in effect and the warnings about ignored stored keys;
    UpdateRefused when the applied values cannot go together, or the log
    cleaner cannot go from `cleaner_threads` (in effect now) to the new
    count without a restart (Kafka's LogCleaner.validateReconfiguration)."""
    warnings: list[str] = []
    values: dict[str, tuple[object, str, str]] = {}
    layers: dict[str, tuple[tuple[str, str], ...]] = {}
    for stored, per_broker, source in ((default, False, DEFAULT_SOURCE),
                                       (own, True, f"broker {config.broker_id}")):
        for key, raw in stored.items():
            try:
                value = broker_configs.check(key, raw, per_broker, writing=False)
                value = _AS_CONFIG[key](value) if key in _AS_CONFIG else value
            except broker_configs.BrokerConfigError as error:
                warnings.append(f"{source}: ignored: {error}")
                continue
            except ValueError as error:
                warnings.append(f"{source}: ignored: {key}: invalid value {raw!r} ({error})")
                continue
            if key in APPLIED_KEYS:
                values[key] = (value, raw, source)    # the broker's own comes second: it wins
                layers[key] = ((raw, source),) + layers.get(key, ())
    changes = {APPLIED_ATTRIBUTES[k]: v for k, (v, _, _) in values.items() if k in APPLIED_ATTRIBUTES}
    effective = dataclasses.replace(config, **changes) if changes else config
    if effective.max_connections_per_ip == 0 and not effective.max_connections_per_ip_overrides:
        raise UpdateRefused("max.connections.per.ip can be 0 only when max.connections.per.ip.overrides is set")
    _check_cleaner(config, effective, cleaner_threads)
    resolved = Resolved(
        effective,
        leader_rate=values.get(LEADER_RATE, (UNLIMITED,))[0],
        follower_rate=values.get(FOLLOWER_RATE, (UNLIMITED,))[0],
        sources={k: (raw, source) for k, (_, raw, source) in sorted(values.items())},
        layers=dict(sorted(layers.items())),
    )
    return resolved, warnings


def _check_cleaner(static_config: BrokerConfig, effective: BrokerConfig, cleaner_threads: int | None) -> None:
    """The cleaner's dynamic values (server.properties' own were checked at start)."""
    threads = effective.log_cleaner_threads
    if cleaner_threads is not None:
        problem = reconfiguration_problem(cleaner_threads, threads)
        if problem:
            raise UpdateRefused(f"log.cleaner.threads {threads}: {problem}")
    dynamic = (threads, effective.log_cleaner_dedupe_buffer_size) != (
        static_config.log_cleaner_threads, static_config.log_cleaner_dedupe_buffer_size)
    if dynamic and effective.log_cleaner_dedupe_buffer_size < MIN_DEDUPE_BUFFER_PER_THREAD * max(threads, 1):
        raise UpdateRefused(f"log.cleaner.dedupe.buffer.size {effective.log_cleaner_dedupe_buffer_size}: must "
                            f"leave at least {MIN_DEDUPE_BUFFER_PER_THREAD} bytes to each of the {threads} "
                            f"cleaner threads")
    if effective.log_cleaner_io_max_bytes_per_second < 1:
        raise UpdateRefused(f"log.cleaner.io.max.bytes.per.second {effective.log_cleaner_io_max_bytes_per_second:g}: "
                            f"must be at least 1 (as in server.properties): the cleaner would never read")
