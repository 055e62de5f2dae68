"""Kafka 2.8's dynamic broker configs: what `/config/brokers/<id>` and
`/config/brokers/<default>` may hold, and which of them this project's
brokers apply.

The facts are Kafka 2.8's (kafka.server.DynamicBrokerConfig, KafkaConfig,
kafka.log.LogConfig, DynamicConfig.Broker):

- A broker config is dynamic when one of the broker's reconfigurable parts
  declares it: the log defaults (the broker-wide names of the topic configs,
  except log.message.format.version), the log cleaner, the five thread
  pools, metric.reporters, the listeners and their SSL/SASL configs, the
  connection limits, and the three replication throttles. Every other broker
  config is read-only: Kafka answers "Cannot update these configs dynamically".
- Listener and SSL/SASL configs are per-broker only (Kafka refuses them at the
  cluster-wide default), except max.connections and max.connection.creation.rate.
- The keystore and truststore configs are accepted only under a listener
  prefix, `listener.name.<listener>.<key>`, with the listener name in lower case
  (Kafka looks them up that way).
- A value must parse as the key's ConfigDef type and pass its validator, and
  also the checks Kafka's broker makes when it builds the new config
  (log.retention.ms is -1 or >= 1, log.roll.ms >= 1, thread counts >= 1, a
  listener's max.connections >= 1, ...): a value those refuse is stored by
  Kafka's own ZooKeeper path but ignored by the broker, with an error in its log.

Where kafkactl is stricter than Kafka (docs/broker-configs.md says why):
unknown keys are refused (Kafka keeps them for plugins), and password
configs are refused (Kafka stores them encrypted with password.encoder.secret,
which kafkactl does not implement).

`applied` marks the keys this project's brokers act on, without a restart
(cluster/broker/dynamic_config.py); the others are stored for Kafka brokers
and shown by `configs describe` as not applied here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from kafkactl.cluster.broker.config import parse_listeners, parse_per_ip_overrides, properties_keys
from kafkactl.cluster.broker.topic_config import did_you_mean

INT, LONG, SHORT, DOUBLE, BOOLEAN, STRING, LIST, CLASS, PASSWORD = (
    "int", "long", "short", "double", "boolean", "string", "list", "class", "password")

# Groups, for docs/broker-configs.md and `configs describe`.
LOG, CLEANER, THREADS, CONNECTIONS, REPLICATION, LISTENERS, SECURITY, METRICS = (
    "log defaults", "log cleaner", "thread pools", "connection limits", "replication throttles",
    "listeners", "SSL and SASL", "metrics")


class BrokerConfigError(ValueError):
    """A key Kafka would not accept here, or a bad value; the message starts with the key."""


@dataclass(frozen=True, slots=True)
class BrokerKey:
    name: str
    kind: str                             # Kafka's ConfigDef type
    group: str
    rule: str = ""                        # the range or values allowed, as errors and docs say it
    check: Callable[[Any], bool] | None = None
    parse: Callable[[str], Any] | None = None   # a format of its own (listeners, host:count maps)
    per_broker: bool = False              # Kafka refuses it at the cluster-wide default
    listener_only: bool = False           # Kafka takes it only as listener.name.<l>.<key>
    applied: bool = False                 # this project's brokers apply it (dynamic_config.py)
    topic_key: str | None = None          # the topic config it is the broker-wide default of


# --- value parsing: ValueError with a short reason; check() adds the key

_INTEGER = re.compile(r"^[+-]?\d+$")
_DECIMAL = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
_JAVA_CLASS = re.compile(r"^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*$")


def _integer(bits: int) -> Callable[[str], int]:
    low, high = -2 ** (bits - 1), 2 ** (bits - 1) - 1

    def parse(raw: str) -> int:
        text = raw.strip()
        if not _INTEGER.match(text):
            raise ValueError("not an integer")
        value = int(text)
        if not low <= value <= high:
            raise ValueError(f"not a {bits}-bit integer")
        return value
    return parse


def _double(raw: str) -> float:
    if not _DECIMAL.match(raw.strip()):
        raise ValueError("not a number")
    return float(raw)


def _boolean(raw: str) -> bool:
    value = raw.strip().lower()
    if value not in ("true", "false"):
        raise ValueError("expected true or false")
    return value == "true"


def _list(raw: str) -> list[str]:
    # Kafka's LIST: comma-separated, spaces around items dropped, "" is empty.
    return [item.strip() for item in raw.split(",")] if raw.strip() else []


def _class_name(raw: str) -> str:
    if not _JAVA_CLASS.match(raw.strip()):
        raise ValueError("not a Java class name")
    return raw.strip()


def _class_list(raw: str) -> list[str]:
    return [_class_name(item) for item in _list(raw)]


_PARSERS: dict[str, Callable[[str], Any]] = {
    INT: _integer(32), LONG: _integer(64), SHORT: _integer(16), DOUBLE: _double, BOOLEAN: _boolean,
    STRING: str.strip, LIST: _list, CLASS: _class_name, PASSWORD: lambda raw: raw,
}

_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


def _protocol_map(raw: str) -> dict[str, str]:
    """listener.security.protocol.map: `NAME:PROTOCOL,...`."""
    mapping = {}
    for item in _list(raw):
        name, sep, protocol = item.rpartition(":")
        if not sep or not re.match(r"^[A-Za-z0-9_]+$", name) or protocol.strip().upper() not in _PROTOCOLS:
            raise ValueError(f"{item!r} is not LISTENER:PROTOCOL with a protocol of {', '.join(_PROTOCOLS)}")
        mapping[name] = protocol.strip().upper()
    return mapping


# --- rules: (what the operator is told, the test)

def _at_least(minimum: int) -> tuple[str, Callable[[Any], bool]]:
    return f"must be >= {minimum}", lambda value: value >= minimum


def _between(low: float, high: float) -> tuple[str, Callable[[Any], bool]]:
    return f"must be between {low:g} and {high:g}", lambda value: low <= value <= high


def _one_of(*choices: str) -> tuple[str, Callable[[Any], bool]]:
    return f"expected one of {', '.join(choices)}", lambda value: value in choices


def _subset_of(*choices: str) -> tuple[str, Callable[[Any], bool]]:
    return f"expected a list of {', '.join(choices)}", lambda values: all(v in choices for v in values)


_UNLIMITED_OR_POSITIVE = ("must be -1 for no limit, or >= 1", lambda value: value == -1 or value >= 1)


def _key(name: str, kind: str, group: str, rule: tuple | None = None, **fields) -> BrokerKey:
    text, check = rule or ("", None)
    return BrokerKey(name, kind, group, text, check, **fields)


def _log(name: str, kind: str, topic_key: str, rule: tuple | None = None, applied: bool = False) -> BrokerKey:
    return _key(name, kind, LOG, rule, applied=applied, topic_key=topic_key)


def _security(name: str, kind: str, rule: tuple | None = None, listener_only: bool = False) -> BrokerKey:
    return _key(name, kind, SECURITY, rule, per_broker=True, listener_only=listener_only)


_TABLE = [
    # Log defaults (DynamicLogConfig): what topics without their own override
    # use. Ranges: KafkaConfig's validator, or LogConfig's where stricter (the
    # broker rebuilds every log's LogConfig from them).
    _log("log.segment.bytes", INT, "segment.bytes", _at_least(14), applied=True),
    _log("log.roll.ms", LONG, "segment.ms", _at_least(1), applied=True),
    _log("log.roll.jitter.ms", LONG, "segment.jitter.ms", _at_least(0)),
    _log("log.index.size.max.bytes", INT, "segment.index.bytes", _at_least(4), applied=True),
    _log("log.flush.interval.messages", LONG, "flush.messages", _at_least(1), applied=True),
    _log("log.flush.interval.ms", LONG, "flush.ms", _at_least(0), applied=True),
    _log("log.retention.bytes", LONG, "retention.bytes", applied=True),
    _log("log.retention.ms", LONG, "retention.ms", _UNLIMITED_OR_POSITIVE, applied=True),
    _log("message.max.bytes", INT, "max.message.bytes", _at_least(0), applied=True),
    _log("log.index.interval.bytes", INT, "index.interval.bytes", _at_least(0), applied=True),
    _log("log.cleaner.delete.retention.ms", LONG, "delete.retention.ms", _at_least(0), applied=True),
    _log("log.cleaner.min.compaction.lag.ms", LONG, "min.compaction.lag.ms", _at_least(0), applied=True),
    _log("log.cleaner.max.compaction.lag.ms", LONG, "max.compaction.lag.ms", _at_least(1), applied=True),
    _log("log.segment.delete.delay.ms", LONG, "file.delete.delay.ms", _at_least(0), applied=True),
    _log("log.cleaner.min.cleanable.ratio", DOUBLE, "min.cleanable.dirty.ratio", _between(0, 1), applied=True),
    _log("log.cleanup.policy", LIST, "cleanup.policy", _subset_of("compact", "delete"), applied=True),
    # Applied by Kafka's controller; this project's controller reads it at start only.
    _log("unclean.leader.election.enable", BOOLEAN, "unclean.leader.election.enable"),
    _log("min.insync.replicas", INT, "min.insync.replicas", _at_least(1), applied=True),
    _log("compression.type", STRING, "compression.type",
         _one_of("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
    _log("log.preallocate", BOOLEAN, "preallocate"),
    _log("log.message.timestamp.type", STRING, "message.timestamp.type", _one_of("CreateTime", "LogAppendTime"),
         applied=True),
    _log("log.message.timestamp.difference.max.ms", LONG, "message.timestamp.difference.max.ms", _at_least(0)),
    _log("log.message.downconversion.enable", BOOLEAN, "message.downconversion.enable"),
    # The log cleaner (LogCleaner.ReconfigurableConfigs, with message.max.bytes above).
    _key("log.cleaner.threads", INT, CLEANER, _at_least(0), applied=True),
    _key("log.cleaner.dedupe.buffer.size", LONG, CLEANER, applied=True),
    _key("log.cleaner.io.buffer.load.factor", DOUBLE, CLEANER),
    _key("log.cleaner.io.buffer.size", INT, CLEANER, _at_least(0)),
    _key("log.cleaner.io.max.bytes.per.second", DOUBLE, CLEANER, applied=True),
    _key("log.cleaner.backoff.ms", LONG, CLEANER, _at_least(0), applied=True),
    # Thread pools (DynamicThreadPool): at least 1; Kafka's broker also
    # refuses less than half or more than twice its current count.
    *(_key(name, INT, THREADS, _at_least(1)) for name in (
        "num.io.threads", "num.network.threads", "num.replica.fetchers",
        "num.recovery.threads.per.data.dir", "background.threads")),
    _key("metric.reporters", LIST, METRICS, parse=_class_list),
    # Connection limits (SocketServer): cluster-wide, or per listener below.
    _key("max.connections", INT, CONNECTIONS, _at_least(0), applied=True),
    _key("max.connections.per.ip", INT, CONNECTIONS, _at_least(0), applied=True),
    _key("max.connections.per.ip.overrides", STRING, CONNECTIONS, parse=parse_per_ip_overrides, applied=True),
    _key("max.connection.creation.rate", INT, CONNECTIONS, _at_least(0)),
    # Replication throttles (DynamicConfig.Broker, KIP-73 and KIP-113): bytes per second.
    *(_key(name, LONG, REPLICATION, _at_least(0), applied=True) for name in (
        "leader.replication.throttled.rate", "follower.replication.throttled.rate",
        "replica.alter.log.dirs.io.max.bytes.per.second")),
    # Listeners (DynamicListenerConfig): per broker.
    _key("listeners", STRING, LISTENERS, parse=parse_listeners, per_broker=True),
    _key("advertised.listeners", STRING, LISTENERS, parse=parse_listeners, per_broker=True),
    _key("listener.security.protocol.map", STRING, LISTENERS, parse=_protocol_map, per_broker=True),
    # SSL and SASL: per broker; the stores only per listener.
    _security("principal.builder.class", CLASS),
    *(_security(name, STRING) for name in (
        "ssl.protocol", "ssl.provider", "ssl.keymanager.algorithm", "ssl.trustmanager.algorithm",
        "ssl.endpoint.identification.algorithm", "ssl.secure.random.implementation",
        "sasl.mechanism.inter.broker.protocol", "sasl.kerberos.service.name", "sasl.kerberos.kinit.cmd")),
    *(_security(name, LIST) for name in (
        "ssl.cipher.suites", "ssl.enabled.protocols", "sasl.enabled.mechanisms",
        "sasl.kerberos.principal.to.local.rules")),
    _security("ssl.client.auth", STRING, _one_of("required", "requested", "none")),
    _security("ssl.engine.factory.class", CLASS),
    *(_security(name, STRING, listener_only=True) for name in (
        "ssl.keystore.type", "ssl.keystore.location", "ssl.truststore.type", "ssl.truststore.location")),
    *(_security(name, PASSWORD, listener_only=True) for name in (
        "ssl.keystore.password", "ssl.key.password", "ssl.truststore.password",
        "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.truststore.certificates")),
    _security("sasl.jaas.config", PASSWORD),
    *(_security(name, DOUBLE) for name in (
        "sasl.kerberos.ticket.renew.window.factor", "sasl.kerberos.ticket.renew.jitter",
        "sasl.login.refresh.window.factor", "sasl.login.refresh.window.jitter")),
    _security("sasl.kerberos.min.time.before.relogin", LONG),
    _security("sasl.login.refresh.min.period.seconds", SHORT),
    _security("sasl.login.refresh.buffer.seconds", SHORT),
]

KEYS: dict[str, BrokerKey] = {spec.name: spec for spec in _TABLE}
TOPIC_SYNONYMS = {spec.topic_key: spec.name for spec in _TABLE if spec.topic_key}

# Kafka 2.8's broker configs that are not dynamic (read-only): every
# KafkaConfig name not in the table above.
_KAFKA_STATIC = """
advertised.host.name advertised.port alter.config.policy.class.name
alter.log.dirs.replication.quota.window.num alter.log.dirs.replication.quota.window.size.seconds
authorizer.class.name auto.create.topics.enable auto.leader.rebalance.enable broker.heartbeat.interval.ms
broker.id broker.id.generation.enable broker.rack broker.session.timeout.ms client.quota.callback.class
connection.failed.authentication.delay.ms connections.max.idle.ms connections.max.reauth.ms
control.plane.listener.name controlled.shutdown.enable controlled.shutdown.max.retries
controlled.shutdown.retry.backoff.ms controller.listener.names controller.quorum.append.linger.ms
controller.quorum.election.backoff.max.ms controller.quorum.election.timeout.ms
controller.quorum.fetch.timeout.ms controller.quorum.request.timeout.ms controller.quorum.retry.backoff.ms
controller.quorum.voters controller.quota.window.num controller.quota.window.size.seconds
controller.socket.timeout.ms create.topic.policy.class.name default.replication.factor
delegation.token.expiry.check.interval.ms delegation.token.expiry.time.ms delegation.token.master.key
delegation.token.max.lifetime.ms delegation.token.secret.key delete.records.purgatory.purge.interval.requests
delete.topic.enable fetch.max.bytes fetch.purgatory.purge.interval.requests group.initial.rebalance.delay.ms
group.max.session.timeout.ms group.max.size group.min.session.timeout.ms host.name
initial.broker.registration.timeout.ms inter.broker.listener.name inter.broker.protocol.version
kafka.metrics.polling.interval.secs kafka.metrics.reporters leader.imbalance.check.interval.seconds
leader.imbalance.per.broker.percentage log.cleaner.enable log.dir log.dirs
log.flush.offset.checkpoint.interval.ms log.flush.scheduler.interval.ms
log.flush.start.offset.checkpoint.interval.ms log.message.format.version log.retention.check.interval.ms
log.retention.hours log.retention.minutes log.roll.hours log.roll.jitter.hours
max.incremental.fetch.session.cache.slots metadata.log.dir metric.num.samples metrics.recording.level
metrics.sample.window.ms node.id num.partitions num.replica.alter.log.dirs.threads offset.metadata.max.bytes
offsets.commit.required.acks offsets.commit.timeout.ms offsets.load.buffer.size
offsets.retention.check.interval.ms offsets.retention.minutes offsets.topic.compression.codec
offsets.topic.num.partitions offsets.topic.replication.factor offsets.topic.segment.bytes
password.encoder.cipher.algorithm password.encoder.iterations password.encoder.key.length
password.encoder.keyfactory.algorithm password.encoder.old.secret password.encoder.secret port process.roles
producer.purgatory.purge.interval.requests queued.max.request.bytes queued.max.requests
quota.consumer.default quota.producer.default quota.window.num quota.window.size.seconds
replica.fetch.backoff.ms replica.fetch.max.bytes replica.fetch.min.bytes replica.fetch.response.max.bytes
replica.fetch.wait.max.ms replica.high.watermark.checkpoint.interval.ms replica.lag.time.max.ms
replica.selector.class replica.socket.receive.buffer.bytes replica.socket.timeout.ms
replication.quota.window.num replication.quota.window.size.seconds request.timeout.ms reserved.broker.max.id
sasl.client.callback.handler.class sasl.login.callback.handler.class sasl.login.class
sasl.mechanism.controller.protocol sasl.server.callback.handler.class sasl.server.max.receive.size
security.inter.broker.protocol security.providers socket.connection.setup.timeout.max.ms
socket.connection.setup.timeout.ms socket.receive.buffer.bytes socket.request.max.bytes
socket.send.buffer.bytes ssl.principal.mapping.rules transaction.abort.timed.out.transaction.cleanup.interval.ms
transaction.max.timeout.ms transaction.remove.expired.transaction.cleanup.interval.ms
transaction.state.log.load.buffer.size transaction.state.log.min.isr transaction.state.log.num.partitions
transaction.state.log.replication.factor transaction.state.log.segment.bytes transactional.id.expiration.ms
zookeeper.clientCnxnSocket zookeeper.connect zookeeper.connection.timeout.ms zookeeper.max.in.flight.requests
zookeeper.session.timeout.ms zookeeper.set.acl zookeeper.ssl.cipher.suites zookeeper.ssl.client.enable
zookeeper.ssl.crl.enable zookeeper.ssl.enabled.protocols zookeeper.ssl.endpoint.identification.algorithm
zookeeper.ssl.keystore.location zookeeper.ssl.keystore.password zookeeper.ssl.keystore.type
zookeeper.ssl.ocsp.enable zookeeper.ssl.protocol zookeeper.ssl.truststore.location
zookeeper.ssl.truststore.password zookeeper.ssl.truststore.type zookeeper.sync.time.ms
"""
# With this project's own server.properties keys (log.dir.media, metrics.port, ...).
STATIC_KEYS = (frozenset(_KAFKA_STATIC.split()) | properties_keys()) - KEYS.keys()

# --- listener-prefixed keys: listener.name.<listener>.<key>

_LISTENER_KEY = re.compile(r"^listener\.name\.([^.]*)\.(.+)$")
# Listener-level keys that may also be set cluster-wide (DynamicBrokerConfig's ClusterLevelListenerConfigs).
_CLUSTER_LISTENER_KEYS = ("max.connections", "max.connection.creation.rate")
# Set per SASL mechanism: listener.name.<listener>.<mechanism>.<key>.
_MECHANISM_KEYS = {"sasl.jaas.config": PASSWORD, "sasl.login.callback.handler.class": CLASS,
                   "sasl.login.class": CLASS, "sasl.server.callback.handler.class": CLASS,
                   "connections.max.reauth.ms": LONG}


def _listener_key(key: str) -> BrokerKey | None:
    match = _LISTENER_KEY.match(key)
    if not match or not re.match(r"^[a-z0-9_-]+$", match.group(1)):
        return None
    base = match.group(2)
    spec = KEYS.get(base)
    if spec is not None and (spec.group == SECURITY or base in _CLUSTER_LISTENER_KEYS):
        if base in _CLUSTER_LISTENER_KEYS:
            # Kafka's per-listener quota refuses 0 (no connection could ever be made).
            return replace(spec, name=key, rule=_at_least(1)[0], check=_at_least(1)[1], applied=False)
        return replace(spec, name=key, listener_only=False, per_broker=True)
    mechanism, _, rest = base.partition(".")
    if re.match(r"^[a-z0-9_-]+$", mechanism) and rest in _MECHANISM_KEYS:
        return BrokerKey(key, _MECHANISM_KEYS[rest], SECURITY, per_broker=True)
    return None


def lookup(key: str) -> BrokerKey | None:
    """The key's entry, a listener-prefixed one included; None if not dynamic."""
    return KEYS.get(key) or _listener_key(key)


# --- checking

def check(key: str, raw: str, per_broker: bool, writing: bool = True) -> Any:
    """The parsed value, or BrokerConfigError naming the key. `per_broker`:
    for /config/brokers/<id> (else the cluster-wide default). `writing`: for
    kafkactl to write (password configs refused); else a stored value a
    broker reads."""
    spec = lookup(key)
    if spec is None:
        raise BrokerConfigError(_not_dynamic(key))
    if spec.listener_only:
        raise BrokerConfigError(f"{key}: Kafka updates it only per listener: use "
                                f"listener.name.<listener>.{key} with --broker ID")
    if writing and spec.kind == PASSWORD:
        raise BrokerConfigError(f"{key}: a password config: Kafka stores these encrypted with "
                                f"password.encoder.secret, which kafkactl does not do (use kafka-configs.sh)")
    try:
        value = (spec.parse or _PARSERS[spec.kind])(raw)
    except ValueError as error:
        raise BrokerConfigError(f"{key}: invalid value {raw!r} ({error})") from None
    if spec.check is not None and not spec.check(value):
        raise BrokerConfigError(f"{key}: invalid value {raw!r} ({spec.rule})")
    if spec.per_broker and not per_broker:
        raise BrokerConfigError(f"{key}: a per-broker config: Kafka refuses it cluster-wide, give --broker ID")
    return value


def _not_dynamic(key: str) -> str:
    if key in STATIC_KEYS:
        return (f"{key} is not dynamically updatable: set it in the broker's server.properties "
                f"and restart the broker")
    match = _LISTENER_KEY.match(key)
    if match and _listener_key(key.lower()) is not None:
        return (f"{key}: Kafka reads listener configs under the listener name in lower case "
                f"(listener.name.{match.group(1).lower()}.{match.group(2)})")
    if match:
        return (f"{key}: not a listener config Kafka updates dynamically (per listener: the SSL and "
                f"SASL configs, max.connections, max.connection.creation.rate)")
    if key in TOPIC_SYNONYMS:
        return f"{key}: a topic config (the broker-level default is {TOPIC_SYNONYMS[key]})"
    return f"{key}: unknown broker config{did_you_mean(key, KEYS)}"


def validate(overrides: Mapping[str, str], per_broker: bool) -> dict[str, Any]:
    """Every value parsed, or BrokerConfigError for the first key Kafka would refuse."""
    return {key: check(key, raw, per_broker) for key, raw in overrides.items()}


def describe_key(key: str, raw: str, per_broker: bool) -> tuple[bool, str]:
    """(applied by this project's brokers, a note for `configs describe`) of a stored key."""
    try:
        check(key, raw, per_broker, writing=False)
    except BrokerConfigError as error:
        return False, f"ignored by brokers: {error}"
    if lookup(key).applied:
        return True, ""
    return False, "stored for Kafka brokers; not applied by kafkactl's broker"
