"""Broker configuration: a Kafka-style properties file with Kafka's names.

Every key the broker understands is declared once in `_KEYS` with its type,
Kafka's default and a validity check; loading turns the file into a frozen
`BrokerConfig`. Unknown keys are warned about (Kafka ignores them too, and a
typo should be visible); an invalid value refuses the start with a message
that names the key.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from kafkactl.cluster.log.config import NO_LIMIT, LogConfig

MEDIA_CLASSES = ("ssd", "hdd")


class ConfigError(ValueError):
    """A config value is missing or invalid; the message names the key."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    listener_name: str
    host: str
    port: int

    def uri(self) -> str:
        return f"{self.listener_name}://{self.host}:{self.port}"


@dataclass(frozen=True, slots=True)
class BrokerConfig:
    broker_id: int
    zookeeper_connect: str
    listeners: tuple[Endpoint, ...]
    advertised_listeners: tuple[Endpoint, ...]
    log_dirs: tuple[str, ...]
    log_dir_media: dict[str, str] = field(default_factory=dict)
    broker_rack: str | None = None
    zookeeper_session_timeout_ms: int = 18000
    zookeeper_connection_timeout_ms: int = 18000
    num_partitions: int = 1
    default_replication_factor: int = 1
    auto_create_topics_enable: bool = True
    log_segment_bytes: int = 1024**3
    log_roll_ms: int = 168 * 3600 * 1000
    log_retention_ms: int = 168 * 3600 * 1000
    log_retention_bytes: int = -1
    log_retention_check_interval_ms: int = 300000
    log_flush_interval_messages: int = NO_LIMIT
    log_flush_interval_ms: int = NO_LIMIT
    log_index_interval_bytes: int = 4096
    log_index_size_max_bytes: int = 10 * 1024 * 1024
    log_segment_delete_delay_ms: int = 60000
    log_message_timestamp_type: str = "CreateTime"
    log_dirs_preferred_media: str = "ssd"
    min_insync_replicas: int = 1
    replica_lag_time_max_ms: int = 30000
    unclean_leader_election_enable: bool = False
    follower_fetch_pending_reads_insync_enable: bool = False
    socket_request_max_bytes: int = 104857600
    message_max_bytes: int = 1048588
    max_connections: int = 2**31 - 1               # Kafka's default: Integer.MAX_VALUE (no limit)
    max_connections_per_ip: int = 2**31 - 1
    max_connections_per_ip_overrides: dict[str, int] = field(default_factory=dict)
    connections_max_idle_ms: int = 600000
    queued_max_request_bytes: int = -1             # KIP-72: -1 = no bound on bytes of requests being read
    metrics_port: int = -1
    replica_fetch_max_bytes: int = 1048576
    replica_alter_log_dirs_io_max_bytes_per_second: int = 2**63 - 1   # Kafka's default: Long.MAX_VALUE
    replica_fetch_response_max_bytes: int = 10485760
    max_incremental_fetch_session_cache_slots: int = 1000
    min_incremental_fetch_session_eviction_ms: int = 120000
    replica_fetch_wait_max_ms: int = 500
    replica_fetch_min_bytes: int = 1
    replica_fetch_backoff_ms: int = 1000
    replica_socket_timeout_ms: int = 30000
    controlled_shutdown_enable: bool = True
    controlled_shutdown_max_retries: int = 3
    controlled_shutdown_retry_backoff_ms: int = 5000
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_per_broker_percentage: int = 10
    leader_imbalance_check_interval_seconds: int = 300
    delete_topic_enable: bool = True
    # The group coordinator (cluster/coordinator/), Kafka's names and defaults.
    offsets_topic_num_partitions: int = 50
    offsets_topic_replication_factor: int = 3
    offsets_topic_segment_bytes: int = 100 * 1024 * 1024
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000      # offsets.retention.minutes
    offsets_retention_check_interval_ms: int = 600000
    offsets_commit_timeout_ms: int = 5000
    offset_metadata_max_bytes: int = 4096
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1800000
    group_initial_rebalance_delay_ms: int = 3000
    group_max_size: int = 2**31 - 1

    def default_log_config(self) -> LogConfig:
        return LogConfig(
            segment_bytes=self.log_segment_bytes,
            segment_ms=self.log_roll_ms,
            retention_ms=self.log_retention_ms,
            retention_bytes=self.log_retention_bytes,
            flush_messages=self.log_flush_interval_messages,
            flush_ms=self.log_flush_interval_ms,
            index_interval_bytes=self.log_index_interval_bytes,
            segment_index_bytes=self.log_index_size_max_bytes,
            max_message_bytes=self.message_max_bytes,
            file_delete_delay_ms=self.log_segment_delete_delay_ms,
            min_insync_replicas=self.min_insync_replicas,
            unclean_leader_election_enable=self.unclean_leader_election_enable,
            message_timestamp_type=self.log_message_timestamp_type,
        )

    def media_of(self, log_dir: str) -> str | None:
        return self.log_dir_media.get(log_dir)


# --- value parsers: each takes the raw string and returns the value or raises
# ValueError with a short reason; the loader adds the key name.

def parse_int(raw: str) -> int:
    """An integer, or ValueError saying so (not Python's own wording)."""
    try:
        return int(raw.strip())
    except ValueError:
        raise ValueError("not an integer") from None


def _bool(raw: str) -> bool:
    value = raw.strip().lower()
    if value not in ("true", "false"):
        raise ValueError("expected true or false")
    return value == "true"


def _string(raw: str) -> str:
    return raw.strip()


def _csv(raw: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in raw.split(",") if item.strip())


_LISTENER = re.compile(r"^([A-Za-z0-9_]+)://(\[[^\]]*\]|[^:/]*):(\d+)$")


def parse_listeners(raw: str) -> tuple[Endpoint, ...]:
    """`NAME://host:port,...` (listeners, advertised.listeners)."""
    endpoints = []
    for item in _csv(raw):
        match = _LISTENER.match(item)
        if not match:
            raise ValueError(f"{item!r} is not NAME://host:port")
        name, host, port = match.group(1), match.group(2).strip("[]"), int(match.group(3))
        if not 0 <= port <= 65535:
            raise ValueError(f"port {port} out of range")
        endpoints.append(Endpoint(name.upper(), host, port))
    if not endpoints:
        raise ValueError("no listener given")
    if len({e.listener_name for e in endpoints}) != len(endpoints):
        raise ValueError("listener names must be unique")
    return tuple(endpoints)


def _media_map(raw: str) -> dict[str, str]:
    media = {}
    for item in _csv(raw):
        path, sep, media_class = item.rpartition(":")
        media_class = media_class.strip().lower()
        if not sep or not path or media_class not in MEDIA_CLASSES:
            raise ValueError(f"{item!r} is not DIR:ssd or DIR:hdd")
        media[path.strip()] = media_class
    return media


_HOST = re.compile(r"^[A-Za-z0-9._:-]+$")   # a host name, an IPv4 or an IPv6 address


def parse_per_ip_overrides(raw: str) -> dict[str, int]:
    """Kafka's `host:count,host:count`; the count follows the last colon, so an
    IPv6 address (`::1:5`) keeps its own colons."""
    overrides = {}
    for item in _csv(raw):
        host, sep, count = item.rpartition(":")
        host = host.strip().strip("[]")
        if not sep or not host or not _HOST.match(host):
            raise ValueError(f"{item!r} is not host:count")
        try:
            value = int(count.strip())
        except ValueError:
            raise ValueError(f"{item!r}: the count is not an integer") from None
        if value < 0:
            raise ValueError(f"{item!r}: the count must be >= 0")
        overrides[host] = value
    return overrides


def _timestamp_type(raw: str) -> str:
    value = raw.strip()
    if value not in ("CreateTime", "LogAppendTime"):
        raise ValueError("expected CreateTime or LogAppendTime")
    return value


def _media_class(raw: str) -> str:
    value = raw.strip().lower()
    if value not in MEDIA_CLASSES:
        raise ValueError("expected ssd or hdd")
    return value


# --- checks on parsed values

def _at_least(minimum: int) -> Callable[[Any], str | None]:
    return lambda value: None if value >= minimum else f"must be >= {minimum}"


def _metrics_port(value: int) -> str | None:
    return None if -1 <= value <= 65535 else "must be a port (0: any free port), or -1 for no metrics endpoint"


def _positive_or_unlimited(value: int) -> str | None:
    return None if value == -1 or value > 0 else "must be > 0, or -1 for no limit"


@dataclass(frozen=True, slots=True)
class _Key:
    attribute: str
    parse: Callable[[str], Any]
    check: Callable[[Any], str | None] | None = None
    scale: int = 1  # hours/minutes keys feed the *_ms attribute


_KEYS: dict[str, _Key] = {
    "broker.id": _Key("broker_id", parse_int, _at_least(0)),
    "zookeeper.connect": _Key("zookeeper_connect", _string),
    "listeners": _Key("listeners", parse_listeners),
    "advertised.listeners": _Key("advertised_listeners", parse_listeners),
    "log.dirs": _Key("log_dirs", _csv),
    "log.dir": _Key("log_dirs", _csv),
    "log.dir.media": _Key("log_dir_media", _media_map),
    "log.dirs.preferred.media": _Key("log_dirs_preferred_media", _media_class),
    "broker.rack": _Key("broker_rack", _string),
    "zookeeper.session.timeout.ms": _Key("zookeeper_session_timeout_ms", parse_int, _at_least(1000)),
    "zookeeper.connection.timeout.ms": _Key("zookeeper_connection_timeout_ms", parse_int, _at_least(100)),
    "num.partitions": _Key("num_partitions", parse_int, _at_least(1)),
    "default.replication.factor": _Key("default_replication_factor", parse_int, _at_least(1)),
    "auto.create.topics.enable": _Key("auto_create_topics_enable", _bool),
    "log.segment.bytes": _Key("log_segment_bytes", parse_int, _at_least(14)),
    "log.roll.ms": _Key("log_roll_ms", parse_int, _at_least(1)),
    "log.roll.hours": _Key("log_roll_ms", parse_int, _at_least(1), 3600 * 1000),
    "log.retention.ms": _Key("log_retention_ms", parse_int, _positive_or_unlimited),
    "log.retention.minutes": _Key("log_retention_ms", parse_int, _positive_or_unlimited, 60 * 1000),
    "log.retention.hours": _Key("log_retention_ms", parse_int, _positive_or_unlimited, 3600 * 1000),
    "log.retention.bytes": _Key("log_retention_bytes", parse_int, _positive_or_unlimited),
    "log.retention.check.interval.ms": _Key("log_retention_check_interval_ms", parse_int, _at_least(1)),
    "log.flush.interval.messages": _Key("log_flush_interval_messages", parse_int, _at_least(1)),
    "log.flush.interval.ms": _Key("log_flush_interval_ms", parse_int, _at_least(0)),
    "log.index.interval.bytes": _Key("log_index_interval_bytes", parse_int, _at_least(0)),
    "log.index.size.max.bytes": _Key("log_index_size_max_bytes", parse_int, _at_least(4)),
    "log.segment.delete.delay.ms": _Key("log_segment_delete_delay_ms", parse_int, _at_least(0)),
    "log.message.timestamp.type": _Key("log_message_timestamp_type", _timestamp_type),
    "min.insync.replicas": _Key("min_insync_replicas", parse_int, _at_least(1)),
    "replica.lag.time.max.ms": _Key("replica_lag_time_max_ms", parse_int, _at_least(1)),
    "unclean.leader.election.enable": _Key("unclean_leader_election_enable", _bool),
    "follower.fetch.pending.reads.insync.enable": _Key(
        "follower_fetch_pending_reads_insync_enable", _bool
    ),
    "socket.request.max.bytes": _Key("socket_request_max_bytes", parse_int, _at_least(1)),
    "message.max.bytes": _Key("message_max_bytes", parse_int, _at_least(0)),
    "max.connections": _Key("max_connections", parse_int, _at_least(0)),
    "max.connections.per.ip": _Key("max_connections_per_ip", parse_int, _at_least(0)),
    "max.connections.per.ip.overrides": _Key("max_connections_per_ip_overrides", parse_per_ip_overrides),
    "connections.max.idle.ms": _Key("connections_max_idle_ms", parse_int, _at_least(1)),
    "queued.max.request.bytes": _Key("queued_max_request_bytes", parse_int, _positive_or_unlimited),
    "replica.fetch.max.bytes": _Key("replica_fetch_max_bytes", parse_int, _at_least(0)),
    "replica.alter.log.dirs.io.max.bytes.per.second": _Key(
        "replica_alter_log_dirs_io_max_bytes_per_second", parse_int, _at_least(1)),
    "replica.fetch.response.max.bytes": _Key("replica_fetch_response_max_bytes", parse_int, _at_least(0)),
    "max.incremental.fetch.session.cache.slots": _Key("max_incremental_fetch_session_cache_slots", parse_int,
                                                      _at_least(0)),
    "min.incremental.fetch.session.eviction.ms": _Key("min_incremental_fetch_session_eviction_ms", parse_int,
                                                      _at_least(0)),
    "replica.fetch.wait.max.ms": _Key("replica_fetch_wait_max_ms", parse_int, _at_least(0)),
    "replica.fetch.min.bytes": _Key("replica_fetch_min_bytes", parse_int, _at_least(1)),
    "replica.fetch.backoff.ms": _Key("replica_fetch_backoff_ms", parse_int, _at_least(0)),
    "replica.socket.timeout.ms": _Key("replica_socket_timeout_ms", parse_int, _at_least(1)),
    "controlled.shutdown.enable": _Key("controlled_shutdown_enable", _bool),
    "controlled.shutdown.max.retries": _Key("controlled_shutdown_max_retries", parse_int, _at_least(0)),
    "controlled.shutdown.retry.backoff.ms": _Key("controlled_shutdown_retry_backoff_ms", parse_int, _at_least(0)),
    "auto.leader.rebalance.enable": _Key("auto_leader_rebalance_enable", _bool),
    "leader.imbalance.per.broker.percentage": _Key("leader_imbalance_per_broker_percentage", parse_int, _at_least(0)),
    "leader.imbalance.check.interval.seconds": _Key("leader_imbalance_check_interval_seconds", parse_int, _at_least(1)),
    "delete.topic.enable": _Key("delete_topic_enable", _bool),
    "metrics.port": _Key("metrics_port", parse_int, _metrics_port),
    "offsets.topic.num.partitions": _Key("offsets_topic_num_partitions", parse_int, _at_least(1)),
    "offsets.topic.replication.factor": _Key("offsets_topic_replication_factor", parse_int, _at_least(1)),
    "offsets.topic.segment.bytes": _Key("offsets_topic_segment_bytes", parse_int, _at_least(14)),
    "offsets.retention.minutes": _Key("offsets_retention_ms", parse_int, _at_least(1), 60 * 1000),
    "offsets.retention.check.interval.ms": _Key("offsets_retention_check_interval_ms", parse_int, _at_least(1)),
    "offsets.commit.timeout.ms": _Key("offsets_commit_timeout_ms", parse_int, _at_least(1)),
    "offset.metadata.max.bytes": _Key("offset_metadata_max_bytes", parse_int, _at_least(0)),
    "group.min.session.timeout.ms": _Key("group_min_session_timeout_ms", parse_int, _at_least(0)),
    "group.max.session.timeout.ms": _Key("group_max_session_timeout_ms", parse_int, _at_least(0)),
    "group.initial.rebalance.delay.ms": _Key("group_initial_rebalance_delay_ms", parse_int, _at_least(0)),
    "group.max.size": _Key("group_max_size", parse_int, _at_least(1)),
}

# Kafka keys this broker accepts without acting on them (they tune Kafka's
# JVM internals). Listing them keeps a real server.properties warning-free.
_ACCEPTED_UNUSED = frozenset({
    "num.network.threads", "num.io.threads", "num.recovery.threads.per.data.dir",
    "socket.send.buffer.bytes", "socket.receive.buffer.bytes",
    "transaction.state.log.replication.factor", "transaction.state.log.min.isr",
    "num.replica.fetchers", "controller.socket.timeout.ms",
    "zookeeper.max.in.flight.requests", "compression.type", "log.cleanup.policy",
    "log.cleaner.enable", "inter.broker.listener.name", "listener.security.protocol.map",
    "broker.id.generation.enable", "reserved.broker.max.id",
})

_REQUIRED = ("broker.id", "zookeeper.connect")


def properties_keys() -> frozenset[str]:
    """Every key a server.properties may hold for this broker (acted on or accepted)."""
    return frozenset(_KEYS) | _ACCEPTED_UNUSED


def parse_properties(text: str) -> dict[str, str]:
    """Java .properties: `#`/`!` comments, `=`/`:`/space separators, `\\` continuations."""
    properties: dict[str, str] = {}
    pending = ""
    for raw_line in text.splitlines():
        line = pending + raw_line.lstrip()
        pending = ""
        if not line or line[0] in "#!":
            continue
        if _continues(line):
            pending = line[:-1]
            continue
        key, value = _split_property(line)
        properties[key] = value
    if pending:
        key, value = _split_property(pending)
        properties[key] = value
    return properties


def _continues(line: str) -> bool:
    trailing = len(line) - len(line.rstrip("\\"))
    return trailing % 2 == 1


def _split_property(line: str) -> tuple[str, str]:
    match = re.match(r"^((?:\\.|[^=:\s\\])*)\s*[=:]?\s*(.*)$", line)
    key, value = match.group(1), match.group(2)
    unescape = lambda s: re.sub(r"\\(.)", lambda m: m.group(1), s)
    return unescape(key), unescape(value).rstrip()


def from_properties(properties: dict[str, str]) -> tuple[BrokerConfig, list[str]]:
    """Build a validated config; returns it with the warnings to log."""
    for key in _REQUIRED:
        if key not in properties:
            raise ConfigError(f"{key}: required but not set")
    warnings = []
    values: dict[str, Any] = {}
    # Kafka precedence: *.ms beats *.minutes beats *.hours; apply coarse first.
    for key in sorted(properties, key=_precedence):
        raw = properties[key]
        spec = _KEYS.get(key)
        if spec is None:
            if key not in _ACCEPTED_UNUSED:
                warnings.append(f"unknown config key {key!r} ignored")
            continue
        values[spec.attribute] = _parse_value(key, raw, spec)
    values.setdefault("listeners", parse_listeners("PLAINTEXT://:9092"))
    values.setdefault("advertised_listeners", values["listeners"])
    values.setdefault("log_dirs", ("/tmp/kafka-logs",))
    values.setdefault("zookeeper_connection_timeout_ms",
                      values.get("zookeeper_session_timeout_ms", 18000))
    config = BrokerConfig(**values)
    _check_cross_fields(config)
    return config, warnings


def _precedence(key: str) -> int:
    if key.endswith(".hours") or key == "log.dir":
        return 0
    if key.endswith(".minutes"):
        return 1
    return 2


def _parse_value(key: str, raw: str, spec: _Key) -> Any:
    try:
        value = spec.parse(raw)
    except ValueError as error:
        raise ConfigError(f"{key}: invalid value {raw!r} ({error})") from None
    problem = spec.check(value) if spec.check else None
    if problem:
        raise ConfigError(f"{key}: invalid value {raw!r} ({problem})")
    if spec.scale != 1 and value != -1:
        value *= spec.scale
    return value


def _check_cross_fields(config: BrokerConfig) -> None:
    if not config.log_dirs:
        raise ConfigError("log.dirs: at least one directory is required")
    unknown = set(config.log_dir_media) - set(config.log_dirs)
    if unknown:
        raise ConfigError(f"log.dir.media: {sorted(unknown)[0]} is not one of log.dirs")
    listener_names = {e.listener_name for e in config.listeners}
    for endpoint in config.advertised_listeners:
        if endpoint.listener_name not in listener_names:
            raise ConfigError(
                f"advertised.listeners: {endpoint.listener_name} is not a listener name"
            )
    if config.message_max_bytes > config.socket_request_max_bytes:
        raise ConfigError("message.max.bytes: larger than socket.request.max.bytes")
    # As Kafka: a bound below one whole request could never admit that request.
    if 0 < config.queued_max_request_bytes < config.socket_request_max_bytes:
        raise ConfigError("queued.max.request.bytes: smaller than socket.request.max.bytes")
    if config.max_connections_per_ip == 0 and not config.max_connections_per_ip_overrides:
        raise ConfigError("max.connections.per.ip: can be 0 only when max.connections.per.ip.overrides is set")


def load_config(path: str, overrides: dict[str, str] | None = None) -> tuple[BrokerConfig, list[str]]:
    try:
        with open(path, encoding="utf-8") as file:
            properties = parse_properties(file.read())
    except OSError as error:
        raise ConfigError(f"cannot read config file {path}: {error.strerror}") from None
    properties.update(overrides or {})
    return from_properties(properties)


def advertised_endpoint(config: BrokerConfig, listener_name: str = "PLAINTEXT") -> Endpoint:
    """The address clients are told; an empty advertised host means this host."""
    for endpoint in config.advertised_listeners:
        if endpoint.listener_name == listener_name:
            if endpoint.host:
                return endpoint
            import socket
            return dataclasses.replace(endpoint, host=socket.getfqdn())
    return config.advertised_listeners[0]
