"""Controller-to-broker requests of ZooKeeper-mode Kafka, which kio lacks.

Kafka 4.0 removed LeaderAndIsr (4), StopReplica (5), UpdateMetadata (6) and
ControlledShutdown (7) with ZooKeeper mode, so kio, generated from Kafka
4.x's message schemas, has no classes for them. These are written by hand in
kio's conventions (frozen dataclasses with a `kafka_type` per field, and
kio's class attributes `__type__`, `__version__`, `__flexible__`,
`__api_key__` and `__header_schema__`, set by the bases of kio_entity.py from
the API version each class names), so kio's `entity_reader` / `entity_writer`
serialize them like its own classes. Field order is wire order.

One version of each, the last ZooKeeper-mode version before the KRaft
migration fields (`IsKRaftController`) were added; all four are flexible, so
requests use request header v2 and responses response header v1:

| API                    | key | version | notes                                        |
|------------------------|-----|---------|----------------------------------------------|
| LeaderAndIsr           | 4   | 6       | PartitionEpoch (= the state znode's zkVersion), LeaderRecoveryState |
| StopReplica            | 5   | 3       | per-partition LeaderEpoch and DeletePartition |
| UpdateMetadata         | 6   | 7       | TopicId per topic                            |
| ControlledShutdown     | 7   | 3       |                                              |

No `from __future__ import annotations` here: kio reads field types at run
time and needs real types, not strings.
"""

import uuid
from dataclasses import dataclass, field
from functools import partial

from kio.schema.errors import ErrorCode
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i16, i32, i64

from kafkactl.cluster.protocol.kio_entity import ApiVersion, Request, RequestPart, Response, ResponsePart

LEADER_AND_ISR = 4
STOP_REPLICA = 5
UPDATE_METADATA = 6
CONTROLLED_SHUTDOWN = 7

# The one version of each control API that this project speaks.
LEADER_AND_ISR_V6 = ApiVersion(LEADER_AND_ISR, 6, flexible=True)
STOP_REPLICA_V3 = ApiVersion(STOP_REPLICA, 3, flexible=True)
UPDATE_METADATA_V7 = ApiVersion(UPDATE_METADATA, 7, flexible=True)
CONTROLLED_SHUTDOWN_V3 = ApiVersion(CONTROLLED_SHUTDOWN, 3, flexible=True)
VERSIONS: dict[int, int] = {api.api_key: api.version for api in (
    LEADER_AND_ISR_V6, STOP_REPLICA_V3, UPDATE_METADATA_V7, CONTROLLED_SHUTDOWN_V3)}

# LeaderAndIsr `Type` (KIP-516): whether the request lists every partition.
LEADER_AND_ISR_TYPE_INCREMENTAL = 0
LEADER_AND_ISR_TYPE_FULL = 1

# StopReplica LeaderEpoch sentinels.
NO_EPOCH = -1               # stop regardless of the current leader epoch
EPOCH_DURING_DELETE = -2    # topic deletion: stop regardless of the epoch

# UpdateMetadata SecurityProtocol ids.
SECURITY_PROTOCOL_PLAINTEXT = 0


# Field metadata: the wire type kio reads and writes a field as (a new dict per call).
_int8 = partial(dict, kafka_type="int8")
_int16 = partial(dict, kafka_type="int16")
_int32 = partial(dict, kafka_type="int32")
_int64 = partial(dict, kafka_type="int64")
_string = partial(dict, kafka_type="string")
_bool = partial(dict, kafka_type="bool")
_uuid = partial(dict, kafka_type="uuid")
_error_code = partial(dict, kafka_type="error_code")


# --- LeaderAndIsr (4) v6 ------------------------------------------------------

@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderAndIsrPartitionState(RequestPart, api=LEADER_AND_ISR_V6):
    partition_index: i32 = field(metadata=_int32())
    controller_epoch: i32 = field(metadata=_int32())
    leader: BrokerId = field(metadata=_int32())
    leader_epoch: i32 = field(metadata=_int32())
    isr: tuple[BrokerId, ...] = field(metadata=_int32())
    partition_epoch: i32 = field(metadata=_int32())
    """The state znode's zkVersion: the leader's ISR writes are conditional on it."""
    replicas: tuple[BrokerId, ...] = field(metadata=_int32())
    adding_replicas: tuple[BrokerId, ...] = field(metadata=_int32(), default=())
    removing_replicas: tuple[BrokerId, ...] = field(metadata=_int32(), default=())
    is_new: bool = field(metadata=_bool(), default=False)
    leader_recovery_state: i8 = field(metadata=_int8(), default=i8(0))


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderAndIsrTopicState(RequestPart, api=LEADER_AND_ISR_V6):
    topic_name: TopicName = field(metadata=_string())
    topic_id: uuid.UUID | None = field(metadata=_uuid(), default=None)
    """None is the zero uuid (kio's convention): no topic id known."""
    partition_states: tuple[LeaderAndIsrPartitionState, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderAndIsrLiveLeader(RequestPart, api=LEADER_AND_ISR_V6):
    broker_id: BrokerId = field(metadata=_int32())
    host_name: str = field(metadata=_string())
    port: i32 = field(metadata=_int32())


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderAndIsrRequest(Request, api=LEADER_AND_ISR_V6):
    controller_id: BrokerId = field(metadata=_int32())
    controller_epoch: i32 = field(metadata=_int32())
    broker_epoch: i64 = field(metadata=_int64(), default=i64(-1))
    type: i8 = field(metadata=_int8(), default=i8(LEADER_AND_ISR_TYPE_INCREMENTAL))
    topic_states: tuple[LeaderAndIsrTopicState, ...]
    live_leaders: tuple[LeaderAndIsrLiveLeader, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderAndIsrPartitionError(ResponsePart, api=LEADER_AND_ISR_V6):
    partition_index: i32 = field(metadata=_int32())
    error_code: ErrorCode = field(metadata=_error_code())


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderAndIsrTopicError(ResponsePart, api=LEADER_AND_ISR_V6):
    topic_id: uuid.UUID | None = field(metadata=_uuid(), default=None)
    """None is the zero uuid (kio's convention): no topic id known."""
    partition_errors: tuple[LeaderAndIsrPartitionError, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderAndIsrResponse(Response, api=LEADER_AND_ISR_V6):
    error_code: ErrorCode = field(metadata=_error_code())
    topics: tuple[LeaderAndIsrTopicError, ...]


# --- StopReplica (5) v3 -------------------------------------------------------

@dataclass(frozen=True, slots=True, kw_only=True)
class StopReplicaPartitionState(RequestPart, api=STOP_REPLICA_V3):
    partition_index: i32 = field(metadata=_int32())
    leader_epoch: i32 = field(metadata=_int32(), default=i32(NO_EPOCH))
    delete_partition: bool = field(metadata=_bool())


@dataclass(frozen=True, slots=True, kw_only=True)
class StopReplicaTopicState(RequestPart, api=STOP_REPLICA_V3):
    topic_name: TopicName = field(metadata=_string())
    partition_states: tuple[StopReplicaPartitionState, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class StopReplicaRequest(Request, api=STOP_REPLICA_V3):
    controller_id: BrokerId = field(metadata=_int32())
    controller_epoch: i32 = field(metadata=_int32())
    broker_epoch: i64 = field(metadata=_int64(), default=i64(-1))
    topic_states: tuple[StopReplicaTopicState, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class StopReplicaPartitionError(ResponsePart, api=STOP_REPLICA_V3):
    topic_name: TopicName = field(metadata=_string())
    partition_index: i32 = field(metadata=_int32())
    error_code: ErrorCode = field(metadata=_error_code())


@dataclass(frozen=True, slots=True, kw_only=True)
class StopReplicaResponse(Response, api=STOP_REPLICA_V3):
    error_code: ErrorCode = field(metadata=_error_code())
    partition_errors: tuple[StopReplicaPartitionError, ...]


# --- UpdateMetadata (6) v7 ----------------------------------------------------

@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateMetadataPartitionState(RequestPart, api=UPDATE_METADATA_V7):
    partition_index: i32 = field(metadata=_int32())
    controller_epoch: i32 = field(metadata=_int32())
    leader: BrokerId = field(metadata=_int32())
    leader_epoch: i32 = field(metadata=_int32())
    isr: tuple[BrokerId, ...] = field(metadata=_int32())
    zk_version: i32 = field(metadata=_int32())
    replicas: tuple[BrokerId, ...] = field(metadata=_int32())
    offline_replicas: tuple[BrokerId, ...] = field(metadata=_int32(), default=())


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateMetadataTopicState(RequestPart, api=UPDATE_METADATA_V7):
    topic_name: TopicName = field(metadata=_string())
    topic_id: uuid.UUID | None = field(metadata=_uuid(), default=None)
    """None is the zero uuid (kio's convention): no topic id known."""
    partition_states: tuple[UpdateMetadataPartitionState, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateMetadataEndpoint(RequestPart, api=UPDATE_METADATA_V7):
    port: i32 = field(metadata=_int32())
    host: str = field(metadata=_string())
    listener: str = field(metadata=_string())
    security_protocol: i16 = field(metadata=_int16())


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateMetadataBroker(RequestPart, api=UPDATE_METADATA_V7):
    id: BrokerId = field(metadata=_int32())
    endpoints: tuple[UpdateMetadataEndpoint, ...]
    rack: str | None = field(metadata=_string(), default=None)


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateMetadataRequest(Request, api=UPDATE_METADATA_V7):
    controller_id: BrokerId = field(metadata=_int32())
    controller_epoch: i32 = field(metadata=_int32())
    broker_epoch: i64 = field(metadata=_int64(), default=i64(-1))
    topic_states: tuple[UpdateMetadataTopicState, ...]
    live_brokers: tuple[UpdateMetadataBroker, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateMetadataResponse(Response, api=UPDATE_METADATA_V7):
    error_code: ErrorCode = field(metadata=_error_code())


# --- ControlledShutdown (7) v3 ------------------------------------------------

@dataclass(frozen=True, slots=True, kw_only=True)
class ControlledShutdownRequest(Request, api=CONTROLLED_SHUTDOWN_V3):
    broker_id: BrokerId = field(metadata=_int32())
    broker_epoch: i64 = field(metadata=_int64(), default=i64(-1))


@dataclass(frozen=True, slots=True, kw_only=True)
class RemainingPartition(ResponsePart, api=CONTROLLED_SHUTDOWN_V3):
    topic_name: TopicName = field(metadata=_string())
    partition_index: i32 = field(metadata=_int32())


@dataclass(frozen=True, slots=True, kw_only=True)
class ControlledShutdownResponse(Response, api=CONTROLLED_SHUTDOWN_V3):
    error_code: ErrorCode = field(metadata=_error_code())
    remaining_partitions: tuple[RemainingPartition, ...]


# --- lookup -------------------------------------------------------------------

class UnsupportedControlVersion(ValueError):
    """A control API key or version this project does not speak."""


_REQUESTS = {
    LEADER_AND_ISR: LeaderAndIsrRequest,
    STOP_REPLICA: StopReplicaRequest,
    UPDATE_METADATA: UpdateMetadataRequest,
    CONTROLLED_SHUTDOWN: ControlledShutdownRequest,
}

_RESPONSES = {
    LEADER_AND_ISR: LeaderAndIsrResponse,
    STOP_REPLICA: StopReplicaResponse,
    UPDATE_METADATA: UpdateMetadataResponse,
    CONTROLLED_SHUTDOWN: ControlledShutdownResponse,
}


def is_control_api(api_key: int) -> bool:
    return api_key in VERSIONS


def control_request_class(api_key: int, version: int):
    _check(api_key, version)
    return _REQUESTS[api_key]


def control_response_class(api_key: int, version: int):
    _check(api_key, version)
    return _RESPONSES[api_key]


def _check(api_key: int, version: int) -> None:
    if VERSIONS.get(api_key) != version:
        raise UnsupportedControlVersion(
            f"control api_key {api_key} version {version}: only {VERSIONS} are defined")
