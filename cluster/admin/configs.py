"""Dynamic configs in ZooKeeper, written the way Kafka's AdminZkClient writes them.

An entity's overrides live in `/config/<type>/<name>` (`{"version":1,
"config":{...}}`, values are strings); after changing one, a writer creates a
sequential `/config/changes/config_change_` znode naming it
(`{"version":2,"entity_path":"topics/t"}`), which is what brokers and the
controller watch. Here the config write and its notification always go into
the same ZooKeeper multi, each write conditional on the version that was
read, so a concurrent change makes the multi fail instead of being lost.

`ConfigWrites` collects such writes so that callers (configs alter, reassign
execute's throttles, unclean election) can put several entities, and other
znodes of their own, into one multi.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError, RolledBackError

from kafkactl.cluster.zk import codecs, layout
from kafkactl.cluster.zk.client import wait

TOPICS = "topics"
BROKERS = "brokers"
BROKER_DEFAULT = "<default>"

LEADER_THROTTLED_RATE = "leader.replication.throttled.rate"
FOLLOWER_THROTTLED_RATE = "follower.replication.throttled.rate"
LOG_DIRS_THROTTLED_RATE = "replica.alter.log.dirs.io.max.bytes.per.second"
LEADER_THROTTLED_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_THROTTLED_REPLICAS = "follower.replication.throttled.replicas"
UNCLEAN_LEADER_ELECTION = "unclean.leader.election.enable"

THROTTLE_RATE_KEYS = (LEADER_THROTTLED_RATE, FOLLOWER_THROTTLED_RATE, LOG_DIRS_THROTTLED_RATE)
THROTTLED_REPLICAS_KEYS = (LEADER_THROTTLED_REPLICAS, FOLLOWER_THROTTLED_REPLICAS)


class ConfigError(ValueError):
    """An unknown key or an invalid value; the message starts with the key."""


class ConcurrentChange(RuntimeError):
    """A znode changed between our read and our multi; nothing was written.
    `results` are the multi's per-operation results (exceptions)."""

    def __init__(self, message: str, results: list | None = None) -> None:
        super().__init__(message)
        self.results = results or []


@dataclass(frozen=True, slots=True)
class Entity:
    entity_type: str        # "topics" or "brokers"
    name: str               # topic name, broker id, or "<default>"

    @property
    def path(self) -> str:
        return layout.entity_config(self.entity_type, self.name)

    @property
    def entity_path(self) -> str:
        """What a config change notification names (Kafka's `entity_path`)."""
        return f"{self.entity_type}/{self.name}"

    def label(self) -> str:
        if self.entity_type == TOPICS:
            return f"topic {self.name!r}"
        if self.name == BROKER_DEFAULT:
            return "the cluster-wide broker default"
        return f"broker {self.name}"


def topic_entity(topic: str) -> Entity:
    return Entity(TOPICS, topic)


def broker_entity(broker_id: int | None) -> Entity:
    """A broker's own overrides, or (None) the cluster-wide default."""
    return Entity(BROKERS, BROKER_DEFAULT if broker_id is None else str(broker_id))


@dataclass(frozen=True, slots=True)
class StoredConfig:
    entity: Entity
    config: dict[str, str]
    zk_version: int | None      # None: the znode does not exist


def read_configs(client, entities: Iterable[Entity], timeout_s: float) -> dict[Entity, StoredConfig]:
    """Every entity's overrides, read with pipelined asynchronous gets."""
    pending = {e: client.get_async(e.path) for e in dict.fromkeys(entities)}
    stored = {}
    for entity, result in pending.items():
        try:
            data, stat = wait(result, timeout_s)
        except NoNodeError:
            stored[entity] = StoredConfig(entity, {}, None)
            continue
        stored[entity] = StoredConfig(entity, codecs.decode_entity_config(entity.path, data), stat.version)
    return stored


# --- validation

def validate(entity: Entity, overrides: Mapping[str, str]) -> None:
    """ConfigError naming the first unknown key or invalid value: a topic's
    keys as topic_config.py knows them, a broker's as Kafka 2.8 accepts them
    per broker or cluster-wide (broker_configs.py)."""
    if entity.entity_type == TOPICS:
        from kafkactl.cluster.broker.topic_config import TopicConfigError, validate_topic_config

        try:
            validate_topic_config(dict(overrides))
        except TopicConfigError as error:
            raise ConfigError(str(error)) from None
        return
    from kafkactl.cluster.admin import broker_configs

    try:
        broker_configs.validate(overrides, per_broker=entity.name != BROKER_DEFAULT)
    except broker_configs.BrokerConfigError as error:
        raise ConfigError(str(error)) from None


def altered(stored: StoredConfig, add: Mapping[str, str], delete: Iterable[str]) -> dict[str, str]:
    """The entity's config after adding `add` and deleting `delete` (validated)."""
    delete = list(dict.fromkeys(delete))
    both = [k for k in delete if k in add]
    if both:
        raise ConfigError(f"{both[0]}: both added and deleted; choose one")
    missing = [k for k in delete if k not in stored.config]
    if missing:
        raise ConfigError(f"{missing[0]}: not set on {stored.entity.label()}, so it cannot be deleted")
    validate(stored.entity, add)
    config = {k: v for k, v in stored.config.items() if k not in delete}
    config.update(add)
    return config


# --- writing

@dataclass
class ConfigWrites:
    """Config changes for several entities, destined for one multi."""

    changes: dict[Entity, tuple[StoredConfig, dict[str, str]]] = field(default_factory=dict)

    def set(self, stored: StoredConfig, config: Mapping[str, str]) -> None:
        if dict(config) != stored.config:
            self.changes[stored.entity] = (stored, dict(config))

    def __bool__(self) -> bool:
        return bool(self.changes)

    def add_to(self, transaction) -> None:
        """The conditional writes, then one change notification per entity."""
        for entity, (stored, config) in self.changes.items():
            data = codecs.encode_entity_config(config)
            if stored.zk_version is None:
                transaction.create(entity.path, data)
            else:
                transaction.set_data(entity.path, data, version=stored.zk_version)
        for entity in self.changes:
            transaction.create(layout.CONFIG_CHANGE_PREFIX, codecs.encode_config_change(entity.entity_path),
                               sequence=True)


def ensure_config_parents(client, timeout_s: float) -> None:
    """The parents a multi creates under; brokers make them at start-up, but
    a ZooKeeper no broker has used yet lacks them (creating them is idempotent)."""
    for parent in (layout.CONFIG_CHANGES, "/config/topics", "/config/brokers"):
        wait(client.ensure_path_async(parent), timeout_s)


def commit(client, transaction, timeout_s: float) -> list:
    """Run a multi; ConcurrentChange if a conditional part lost a race."""
    results = wait(transaction.commit_async(), timeout_s)
    failures = [r for r in results if isinstance(r, Exception) and not isinstance(r, RolledBackError)]
    if any(isinstance(f, (BadVersionError, NodeExistsError, NoNodeError)) for f in failures):
        raise ConcurrentChange(f"ZooKeeper changed while kafkactl was writing ({type(failures[0]).__name__}); "
                               f"nothing was written, run the command again", results)
    if failures:
        raise failures[0]
    return results


def alter(client, entity: Entity, add: Mapping[str, str], delete: Iterable[str],
          timeout_s: float) -> dict[str, str]:
    """Change one entity's overrides and announce it, in one multi; the new config."""
    stored = read_configs(client, [entity], timeout_s)[entity]
    config = altered(stored, add, delete)
    write(client, stored, config, timeout_s)
    return config


def write(client, stored: StoredConfig, config: Mapping[str, str], timeout_s: float) -> bool:
    """Replace the entity's overrides with `config` and announce it, in one
    multi conditional on the version `stored` was read at (ConcurrentChange
    if it moved). Nothing is written when nothing changes; whether it was."""
    writes = ConfigWrites()
    writes.set(stored, config)
    if not writes:
        return False
    ensure_config_parents(client, timeout_s)
    transaction = client.transaction()
    writes.add_to(transaction)
    commit(client, transaction, timeout_s)
    return True


# --- what describe shows for keys a topic does not override

_KAFKA_TOPIC_DEFAULTS = {
    "cleanup.policy": "delete",
    "compression.type": "producer",
    "delete.retention.ms": "86400000",
    "min.compaction.lag.ms": "0",
    "max.compaction.lag.ms": str(2**63 - 1),
    "min.cleanable.dirty.ratio": "0.5",
    "preallocate": "false",
    "message.downconversion.enable": "true",
    FOLLOWER_THROTTLED_REPLICAS: "",
    LEADER_THROTTLED_REPLICAS: "",
    "segment.jitter.ms": "0",
    "message.timestamp.difference.max.ms": str(2**63 - 1),
}


def topic_defaults() -> dict[str, str]:
    """Kafka's default for every topic key (brokers' server.properties may
    change some; that file is not in ZooKeeper)."""
    from kafkactl.cluster.broker.topic_config import TOPIC_KEYS
    from kafkactl.cluster.log.config import LogConfig

    base = LogConfig()
    defaults = {}
    for key, (field_name, _) in sorted(TOPIC_KEYS.items()):
        if field_name is None:
            defaults[key] = _KAFKA_TOPIC_DEFAULTS.get(key, "")
        else:
            value = getattr(base, field_name)
            defaults[key] = str(value).lower() if isinstance(value, bool) else str(value)
    return defaults
