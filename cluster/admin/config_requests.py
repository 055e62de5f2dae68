"""The Admin API's config changes (AlterConfigs, IncrementalAlterConfigs),
decided as Kafka 2.8's ZkAdminManager decides them in ZooKeeper mode. Pure:
the broker's handlers read ZooKeeper and write what is decided here, with
configs.py (the same validation and writes as `kafkactl configs alter`).

Rules, per resource:
- Resource types: TOPIC (2) and BROKER (4); any other is INVALID_REQUEST.
- BROKER: "" names the cluster-wide default (/config/brokers/<default>);
  any other name must be the id of the broker answering (INVALID_REQUEST
  "Unexpected broker id": a client sends a broker's own configs to it).
- TOPIC: a topic that does not exist is UNKNOWN_TOPIC_OR_PARTITION (the
  shell checks ZooKeeper); an invalid name too (it cannot exist).
- AlterConfigs replaces the entity's whole config with the request's
  entries (a key not given is removed); a null value is INVALID_REQUEST.
- IncrementalAlterConfigs applies its operations to the stored config in
  order: SET, DELETE (a key not set: nothing to do), APPEND and SUBTRACT
  (list-typed keys only, else INVALID_REQUEST; an unknown topic key is
  INVALID_CONFIG). APPEND adds the items not yet in the list, SUBTRACT
  removes them.
- The resulting config is validated whole, as Kafka does: an unknown topic
  key is INVALID_CONFIG (Kafka's InvalidConfigurationException); a bad topic
  value is INVALID_REQUEST (a ConfigException, which Kafka turns into
  INVALID_REQUEST); every broker refusal (read-only key, per-broker key at the
  default, bad value) is INVALID_REQUEST, the same ConfigException path.
  kafkactl also refuses unknown broker keys and password configs (see
  broker_configs.py).
- Nothing is written for a refused resource, nor for any with validate_only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from kafkactl.cluster.admin import broker_configs, configs

TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4
_TYPE_NAMES = {TOPIC_RESOURCE: "TOPIC", BROKER_RESOURCE: "BROKER"}

# IncrementalAlterConfigs' operations (Kafka's AlterConfigOp.OpType ids).
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
OPERATIONS = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}

# Kafka's topic configs of type LIST (LogConfig).
_TOPIC_LISTS = frozenset({"cleanup.policy", configs.LEADER_THROTTLED_REPLICAS, configs.FOLLOWER_THROTTLED_REPLICAS})


class Refused(Exception):
    """The resource's change is refused with Kafka's `error` and `message`."""

    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


@dataclass(frozen=True, slots=True)
class Operation:
    name: str
    op: int              # SET, DELETE, APPEND or SUBTRACT (AlterConfigs: SET)
    value: str | None


def label(resource_type: int, name: str) -> str:
    """How Kafka names a resource in its messages."""
    return f"ConfigResource(type={_TYPE_NAMES.get(resource_type, 'UNKNOWN')}, name='{name}')"


def entity_of(resource_type: int, name: str, broker_id: int) -> configs.Entity:
    """The ZooKeeper entity a resource names on broker `broker_id`, or Refused."""
    if resource_type == TOPIC_RESOURCE:
        from kafkactl.cluster.admin.topic_names import InvalidTopicName, validate_topic_name

        try:
            validate_topic_name(name)
        except InvalidTopicName:
            raise Refused(ErrorCode.unknown_topic_or_partition, f"Topic '{name}' does not exist.") from None
        return configs.topic_entity(name)
    if resource_type == BROKER_RESOURCE:
        if not name:
            return configs.broker_entity(None)
        if not name.strip().lstrip("-").isdigit():
            raise Refused(ErrorCode.invalid_request, f"Broker id must be an integer, but it is: {name}")
        if int(name) != broker_id:
            raise Refused(ErrorCode.invalid_request,
                          f"Unexpected broker id, expected {broker_id}, but received {name}")
        return configs.broker_entity(broker_id)
    raise Refused(ErrorCode.invalid_request,
                  f"AlterConfigs is only supported for topics and brokers, but resource type is {resource_type}")


def replaced(operations: Iterable[Operation]) -> dict[str, str]:
    """AlterConfigs: the whole new config (each operation a SET)."""
    config = {}
    for operation in operations:
        if operation.value is None:
            raise Refused(ErrorCode.invalid_request, f"Null value not supported for : {operation.name}")
        config[operation.name] = operation.value
    return config


def incremented(entity: configs.Entity, stored: Mapping[str, str], operations: Iterable[Operation]) -> dict[str, str]:
    """IncrementalAlterConfigs: the stored config with `operations` applied."""
    config = dict(stored)
    for operation in operations:
        name = operation.name
        if operation.op == SET:
            if operation.value is None:
                raise Refused(ErrorCode.invalid_request, f"Null value not supported for : {name}")
            config[name] = operation.value
        elif operation.op == DELETE:
            config.pop(name, None)
        elif operation.op in (APPEND, SUBTRACT):
            if not _is_list(entity, name):
                raise Refused(ErrorCode.invalid_request,
                              f"Config value {'append' if operation.op == APPEND else 'subtract'} "
                              f"is not allowed for config key: {name}")
            current = _items(config.get(name, ""))
            given = _items(operation.value or "")
            if operation.op == APPEND:
                items = current + [i for i in given if i not in current]
            else:
                items = [i for i in current if i not in given]
            config[name] = ",".join(items)
        else:
            raise Refused(ErrorCode.invalid_request, f"Unknown alter config operation {operation.op} for {name}")
    return config


def _is_list(entity: configs.Entity, name: str) -> bool:
    if entity.entity_type == configs.TOPICS:
        from kafkactl.cluster.broker.topic_config import TOPIC_KEYS

        if name not in TOPIC_KEYS:
            raise Refused(ErrorCode.invalid_config, f"Unknown topic config name: {name}")
        return name in _TOPIC_LISTS
    spec = broker_configs.lookup(name)
    return spec is not None and spec.kind == broker_configs.LIST


def _items(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


def check(entity: configs.Entity, resource: str, config: Mapping[str, str]) -> None:
    """Refused, with Kafka's error, when `config` may not be the entity's config."""
    if entity.entity_type == configs.TOPICS:
        from kafkactl.cluster.broker.topic_config import TOPIC_KEYS

        unknown = [k for k in config if k not in TOPIC_KEYS]
        if unknown:
            raise Refused(ErrorCode.invalid_config, f"Unknown topic config name: {unknown[0]}")
    try:
        configs.validate(entity, config)
    except configs.ConfigError as error:
        raise Refused(ErrorCode.invalid_request, f"Invalid config value for resource {resource}: {error}") from None
