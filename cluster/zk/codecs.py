"""Encode and decode the znode values Apache Kafka writes (ZooKeeper mode).

Pure functions over bytes. Decoders accept any key order (Kafka writes JSON
from hash maps) and raise `ZnodeFormatError` naming the path's kind and the
field when a value is not what Kafka would write.
"""

from __future__ import annotations

import base64
import json
import uuid
from dataclasses import dataclass, field


class ZnodeFormatError(ValueError):
    """A znode's value does not have Kafka's format."""


def _load(kind: str, data: bytes) -> dict:
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ZnodeFormatError(f"{kind}: not JSON ({error})") from None
    if not isinstance(value, dict):
        raise ZnodeFormatError(f"{kind}: expected a JSON object")
    return value


def _dump(value: dict) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode("utf-8")


def _field(kind: str, value: dict, name: str, expected: type | tuple[type, ...]):
    if name not in value:
        raise ZnodeFormatError(f"{kind}: missing field {name!r}")
    item = value[name]
    if not isinstance(item, expected) or isinstance(item, bool) and expected is int:
        raise ZnodeFormatError(f"{kind}: field {name!r} has the wrong type")
    return item


def _int_list(kind: str, name: str, items) -> list[int]:
    if not isinstance(items, list) or not all(
        isinstance(i, int) and not isinstance(i, bool) for i in items
    ):
        raise ZnodeFormatError(f"{kind}: field {name!r} must be a list of broker ids")
    return list(items)


# --- topic ids: Kafka prints a 16-byte UUID as 22 characters of base64url.

def new_topic_id() -> str:
    return topic_id_to_string(uuid.uuid4())


def topic_id_to_string(topic_id: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(topic_id.bytes).decode("ascii").rstrip("=")


def topic_id_from_string(text: str) -> uuid.UUID:
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except (ValueError, TypeError):
        raise ZnodeFormatError(f"topic_id: {text!r} is not base64url") from None
    if len(raw) != 16:
        raise ZnodeFormatError(f"topic_id: {text!r} is not 16 bytes")
    return uuid.UUID(bytes=raw)


# --- /brokers/ids/<id>

@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    broker_id: int
    host: str
    port: int
    endpoints: tuple[str, ...]          # "PLAINTEXT://h:p"
    rack: str | None = None
    timestamp_ms: int = 0
    broker_epoch: int = -1              # the znode's czxid, not part of the JSON


def encode_broker(registration: BrokerRegistration) -> bytes:
    listener_names = [uri.split("://", 1)[0] for uri in registration.endpoints]
    value = {
        "listener_security_protocol_map": {name: "PLAINTEXT" for name in listener_names},
        "endpoints": list(registration.endpoints),
        "jmx_port": -1,
        "features": {},
        "host": registration.host,
        "timestamp": str(registration.timestamp_ms),
        "port": registration.port,
        "version": 5,
    }
    if registration.rack is not None:
        value["rack"] = registration.rack
    return _dump(value)


def decode_broker(broker_id: int, data: bytes, czxid: int = -1) -> BrokerRegistration:
    kind = f"/brokers/ids/{broker_id}"
    value = _load(kind, data)
    endpoints = tuple(value.get("endpoints") or ())
    host, port = value.get("host"), value.get("port", -1)
    if endpoints and (not host or port in (None, -1)):
        # Version 4+ registrations may leave host null when the PLAINTEXT
        # listener is absent; take the first endpoint then.
        host, port = _split_endpoint(kind, endpoints[0])
    if not isinstance(host, str) or not isinstance(port, int):
        raise ZnodeFormatError(f"{kind}: no usable host/port or endpoints")
    return BrokerRegistration(
        broker_id=broker_id,
        host=host,
        port=port,
        endpoints=endpoints or (f"PLAINTEXT://{host}:{port}",),
        rack=value.get("rack"),
        timestamp_ms=int(value.get("timestamp", 0)),
        broker_epoch=czxid,
    )


def _split_endpoint(kind: str, uri: str) -> tuple[str, int]:
    try:
        _, address = uri.split("://", 1)
        host, port = address.rsplit(":", 1)
        return host.strip("[]"), int(port)
    except ValueError:
        raise ZnodeFormatError(f"{kind}: endpoint {uri!r} is not NAME://host:port") from None


# --- /brokers/topics/<t>

@dataclass(frozen=True, slots=True)
class TopicAssignment:
    partitions: dict[int, list[int]]
    topic_id: str | None = None
    adding_replicas: dict[int, list[int]] = field(default_factory=dict)
    removing_replicas: dict[int, list[int]] = field(default_factory=dict)


def encode_topic(assignment: TopicAssignment) -> bytes:
    as_json = lambda mapping: {str(p): list(r) for p, r in sorted(mapping.items())}
    value = {
        "version": 3,
        "partitions": as_json(assignment.partitions),
        "adding_replicas": as_json(assignment.adding_replicas),
        "removing_replicas": as_json(assignment.removing_replicas),
    }
    if assignment.topic_id is not None:
        value["topic_id"] = assignment.topic_id
    return _dump(value)


def decode_topic(topic: str, data: bytes) -> TopicAssignment:
    kind = f"/brokers/topics/{topic}"
    value = _load(kind, data)
    partitions = _partition_map(kind, "partitions", _field(kind, value, "partitions", dict))
    return TopicAssignment(
        partitions=partitions,
        topic_id=value.get("topic_id"),
        adding_replicas=_partition_map(kind, "adding_replicas", value.get("adding_replicas") or {}),
        removing_replicas=_partition_map(kind, "removing_replicas", value.get("removing_replicas") or {}),
    )


def _partition_map(kind: str, name: str, raw: dict) -> dict[int, list[int]]:
    result = {}
    for key, replicas in raw.items():
        try:
            partition = int(key)
        except ValueError:
            raise ZnodeFormatError(f"{kind}: {name} key {key!r} is not a partition number") from None
        result[partition] = _int_list(kind, f"{name}.{key}", replicas)
    return result


# --- /brokers/topics/<t>/partitions/<p>/state

@dataclass(frozen=True, slots=True)
class PartitionState:
    leader: int
    leader_epoch: int
    isr: list[int]
    controller_epoch: int
    leader_recovery_state: int = 0
    zk_version: int = -1                 # the znode's version, not part of the JSON


def encode_partition_state(state: PartitionState) -> bytes:
    """The state znode's JSON, as _dump would write it. Formatted directly: a
    failover writes 10,000s of these, and json.dumps costs 5x as much."""
    isr = ",".join(map(str, map(int, state.isr)))
    recovery = (f',"leader_recovery_state":{int(state.leader_recovery_state)}'
                if state.leader_recovery_state else "")
    return (f'{{"controller_epoch":{int(state.controller_epoch)},"leader":{int(state.leader)},"version":1,'
            f'"leader_epoch":{int(state.leader_epoch)},"isr":[{isr}]{recovery}}}').encode()


def decode_partition_state(path: str, data: bytes, zk_version: int = -1) -> PartitionState:
    value = _load(path, data)
    return PartitionState(
        leader=_field(path, value, "leader", int),
        leader_epoch=_field(path, value, "leader_epoch", int),
        isr=_int_list(path, "isr", _field(path, value, "isr", list)),
        controller_epoch=_field(path, value, "controller_epoch", int),
        leader_recovery_state=value.get("leader_recovery_state", 0),
        zk_version=zk_version,
    )


# --- /controller and /controller_epoch

def encode_controller(broker_id: int, timestamp_ms: int) -> bytes:
    return _dump({"version": 1, "brokerid": broker_id, "timestamp": str(timestamp_ms)})


def decode_controller(data: bytes) -> int:
    return _field("/controller", _load("/controller", data), "brokerid", int)


def encode_controller_epoch(epoch: int) -> bytes:
    return str(epoch).encode("ascii")


def decode_controller_epoch(data: bytes) -> int:
    try:
        return int(data.decode("ascii").strip())
    except (UnicodeDecodeError, ValueError):
        raise ZnodeFormatError("/controller_epoch: not a decimal number") from None


# --- /cluster/id

def encode_cluster_id(cluster_id: str) -> bytes:
    return _dump({"version": "1", "id": cluster_id})


def decode_cluster_id(data: bytes) -> str:
    return _field("/cluster/id", _load("/cluster/id", data), "id", str)


# --- /config/<type>/<name> and /config/changes

def encode_entity_config(config: dict[str, str]) -> bytes:
    return _dump({"version": 1, "config": {k: str(v) for k, v in config.items()}})


def decode_entity_config(path: str, data: bytes) -> dict[str, str]:
    config = _field(path, _load(path, data), "config", dict)
    return {str(k): str(v) for k, v in config.items()}


def encode_config_change(entity_path: str) -> bytes:
    return _dump({"version": 2, "entity_path": entity_path})


def decode_config_change(data: bytes) -> str:
    return _field("/config/changes", _load("/config/changes", data), "entity_path", str)


# --- notifications and admin triggers

def encode_partition_list(partitions: list[tuple[str, int]]) -> bytes:
    return _dump({"version": 1, "partitions": [
        {"topic": t, "partition": p} for t, p in partitions
    ]})


def decode_partition_list(kind: str, data: bytes) -> list[tuple[str, int]]:
    items = _field(kind, _load(kind, data), "partitions", list)
    try:
        return [(str(item["topic"]), int(item["partition"])) for item in items]
    except (KeyError, TypeError, ValueError):
        raise ZnodeFormatError(f"{kind}: each partition needs topic and partition") from None


LOG_DIR_FAILURE_EVENT = 1   # the one event type Kafka's LogDirEventNotification defines


def encode_log_dir_event(broker_id: int) -> bytes:
    """/log_dir_event_notification/log_dir_event_<seq>: a log dir of `broker_id` failed."""
    return _dump({"version": 1, "broker": broker_id, "event": LOG_DIR_FAILURE_EVENT})


def decode_log_dir_event(path: str, data: bytes) -> int:
    """The broker id a log dir event notification names."""
    return _field(path, _load(path, data), "broker", int)


def encode_reassignment(targets: dict[tuple[str, int], list[int]]) -> bytes:
    return _dump({"version": 1, "partitions": [
        {"topic": t, "partition": p, "replicas": list(r)}
        for (t, p), r in sorted(targets.items())
    ]})


def decode_reassignment(data: bytes) -> dict[tuple[str, int], list[int]]:
    kind = "/admin/reassign_partitions"
    items = _field(kind, _load(kind, data), "partitions", list)
    targets = {}
    for item in items:
        try:
            key = (str(item["topic"]), int(item["partition"]))
        except (KeyError, TypeError, ValueError):
            raise ZnodeFormatError(f"{kind}: each partition needs topic and partition") from None
        targets[key] = _int_list(kind, "replicas", item.get("replicas"))
    return targets


# --- /latest_producer_id_block

PRODUCER_ID_BLOCK_SIZE = 1000


@dataclass(frozen=True, slots=True)
class ProducerIdBlock:
    broker_id: int
    block_start: int
    block_end: int                       # inclusive, as Kafka writes it


def encode_producer_id_block(block: ProducerIdBlock) -> bytes:
    return _dump({
        "version": 1,
        "broker": block.broker_id,
        "block_start": str(block.block_start),
        "block_end": str(block.block_end),
    })


def decode_producer_id_block(data: bytes) -> ProducerIdBlock:
    kind = "/latest_producer_id_block"
    value = _load(kind, data)
    try:
        return ProducerIdBlock(
            broker_id=int(value["broker"]),
            block_start=int(value["block_start"]),
            block_end=int(value["block_end"]),
        )
    except (KeyError, TypeError, ValueError):
        raise ZnodeFormatError(f"{kind}: needs broker, block_start and block_end") from None


def next_producer_id_block(current: ProducerIdBlock | None, broker_id: int) -> ProducerIdBlock:
    start = 0 if current is None else current.block_end + 1
    return ProducerIdBlock(broker_id, start, start + PRODUCER_ID_BLOCK_SIZE - 1)


def encode_feature() -> bytes:
    return _dump({"version": 2, "status": 1, "features": {}})
