"""The group APIs' requests and answers: kio entities in, plain values out.

Building a request for any version this module speaks (kio has one class per
version; `make` drops the fields a version lacks) and reading its response
into the dataclasses below, with Kafka's error names in lower case
("not_coordinator") or None. No sockets here: group_queries.py sends them.

Versions: FindCoordinator v0-v4 (v4 batches keys, KIP-699), ListGroups v0-v4
(v4 filters by state; asked unfiltered, and it says each group's state),
DescribeGroups v0-v5, OffsetFetch v2-v8 (v2 is the first that fetches every
partition with topics=null; v8 asks for several groups, KIP-709),
OffsetCommit v2-v8, DeleteGroups v0-v2, OffsetDelete v0, ListOffsets v1-v7.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

# (api key, lowest, highest version this module builds), as broker_queries.py has them.
FIND_COORDINATOR = (10, 0, 4)
LIST_GROUPS = (16, 0, 4)
DESCRIBE_GROUPS = (15, 0, 5)
OFFSET_FETCH = (9, 2, 8)
OFFSET_COMMIT = (8, 2, 8)
DELETE_GROUPS = (42, 0, 2)
OFFSET_DELETE = (47, 0, 0)
LIST_OFFSETS = (2, 1, 7)

GROUP_KEY_TYPE = 0
BATCHED_FIND_COORDINATOR = 4
MULTI_GROUP_OFFSET_FETCH = 8
CONSUMER_REPLICA_ID = -1          # ListOffsets as a client asks: up to the high watermark
READ_UNCOMMITTED = 0
NO_GENERATION = -1                # OffsetCommit by an admin, not a member (as Kafka's admin client)

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class Coordinator:
    group_id: str
    error: str | None
    node_id: int
    host: str
    port: int
    message: str | None = None


@dataclass(frozen=True, slots=True)
class ListedGroup:
    group_id: str
    protocol_type: str
    state: str | None             # None before ListGroups v4


@dataclass(frozen=True, slots=True)
class GroupMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupDescription:
    group_id: str
    error: str | None
    state: str
    protocol_type: str
    protocol: str
    members: tuple[GroupMember, ...]


@dataclass(frozen=True, slots=True)
class GroupOffsets:
    group_id: str
    error: str | None                                  # the group's own error
    offsets: dict[TopicPartition, int]                 # committed; partitions without one are left out
    partition_errors: dict[TopicPartition, str]


def error_name(code) -> str | None:
    return None if code == 0 else code.name


def request_class(api_key: int, version: int):
    from kio.index import load_request_schema

    return load_request_schema(api_key, version)


# --- FindCoordinator ------------------------------------------------------------------------

def find_coordinator_request(version: int, groups: list[str]):
    from kafkactl.cluster.protocol.build import make

    cls = request_class(FIND_COORDINATOR[0], version)
    if version >= BATCHED_FIND_COORDINATOR:
        return make(cls, key_type=GROUP_KEY_TYPE, coordinator_keys=tuple(groups))
    [group] = groups
    return make(cls, key=group, key_type=GROUP_KEY_TYPE)


def coordinators(response, groups: list[str]) -> dict[str, Coordinator]:
    if hasattr(response, "coordinators"):
        return {c.key: Coordinator(c.key, error_name(c.error_code), c.node_id, c.host, c.port, c.error_message)
                for c in response.coordinators}
    [group] = groups
    return {group: Coordinator(group, error_name(response.error_code), response.node_id, response.host,
                               response.port, getattr(response, "error_message", None))}


# --- ListGroups ------------------------------------------------------------------------------

def list_groups_request(version: int):
    from kafkactl.cluster.protocol.build import make

    return make(request_class(LIST_GROUPS[0], version), states_filter=())


def listed_groups(response) -> tuple[str | None, list[ListedGroup]]:
    return error_name(response.error_code), [
        ListedGroup(g.group_id, g.protocol_type, getattr(g, "group_state", None)) for g in response.groups]


# --- DescribeGroups --------------------------------------------------------------------------

def describe_groups_request(version: int, groups: list[str]):
    from kafkactl.cluster.protocol.build import make

    return make(request_class(DESCRIBE_GROUPS[0], version), groups=tuple(groups),
                include_authorized_operations=False)


def group_descriptions(response) -> dict[str, GroupDescription]:
    return {g.group_id: GroupDescription(
        g.group_id, error_name(g.error_code), g.group_state, g.protocol_type, g.protocol_data,
        tuple(GroupMember(m.member_id, getattr(m, "group_instance_id", None), m.client_id, m.client_host,
                          bytes(m.member_metadata), bytes(m.member_assignment)) for m in g.members))
        for g in response.groups}


# --- OffsetFetch -----------------------------------------------------------------------------

def offset_fetch_request(version: int, groups: list[str]):
    """Every committed offset of the groups (topics null); several groups from v8."""
    from kafkactl.cluster.protocol.build import make, nested

    cls = request_class(OFFSET_FETCH[0], version)
    if version >= MULTI_GROUP_OFFSET_FETCH:
        return make(cls, groups=tuple(nested(cls, "OffsetFetchRequestGroup", group_id=g, topics=None)
                                      for g in groups), require_stable=False)
    [group] = groups
    return make(cls, group_id=group, topics=None, require_stable=False)


def fetched_offsets(response, groups: list[str]) -> dict[str, GroupOffsets]:
    if hasattr(response, "groups"):
        return {g.group_id: _group_offsets(g.group_id, g.error_code, g.topics) for g in response.groups}
    [group] = groups
    return {group: _group_offsets(group, getattr(response, "error_code", 0), response.topics)}


def _group_offsets(group: str, error_code, topics) -> GroupOffsets:
    offsets, errors = {}, {}
    for topic in topics:
        for p in topic.partitions:
            if p.error_code != 0:
                errors[(topic.name, p.partition_index)] = p.error_code.name
            elif p.committed_offset >= 0:
                offsets[(topic.name, p.partition_index)] = int(p.committed_offset)
    return GroupOffsets(group, error_name(error_code), offsets, errors)


# --- OffsetCommit ----------------------------------------------------------------------------

def offset_commit_request(version: int, group: str, offsets: Mapping[TopicPartition, int]):
    """A commit as an admin makes it: no member, no generation (the group must be empty)."""
    from kafkactl.cluster.protocol.build import make, nested

    cls = request_class(OFFSET_COMMIT[0], version)
    topics = tuple(
        nested(cls, "OffsetCommitRequestTopic", name=topic, partitions=tuple(
            nested(cls, "OffsetCommitRequestPartition", partition_index=p, committed_offset=offset,
                   committed_leader_epoch=-1, committed_metadata="", commit_timestamp=-1)
            for p, offset in partitions))
        for topic, partitions in _by_topic(offsets.items()))
    return make(cls, group_id=group, generation_id_or_member_epoch=NO_GENERATION, member_id="",
                group_instance_id=None, retention_time=datetime.timedelta(milliseconds=-1), topics=topics)


def partition_errors(response) -> dict[TopicPartition, str | None]:
    """OffsetCommit's and OffsetDelete's answer: per partition an error name or None."""
    return {(t.name, p.partition_index): error_name(p.error_code) for t in response.topics for p in t.partitions}


# --- DeleteGroups, OffsetDelete -----------------------------------------------------------------

def delete_groups_request(version: int, groups: list[str]):
    from kafkactl.cluster.protocol.build import make

    return make(request_class(DELETE_GROUPS[0], version), groups_names=tuple(groups))


def deleted_groups(response) -> dict[str, str | None]:
    return {r.group_id: error_name(r.error_code) for r in response.results}


def offset_delete_request(version: int, group: str, partitions: Iterable[TopicPartition]):
    from kafkactl.cluster.protocol.build import make, nested

    cls = request_class(OFFSET_DELETE[0], version)
    topics = tuple(
        nested(cls, "OffsetDeleteRequestTopic", name=topic, partitions=tuple(
            nested(cls, "OffsetDeleteRequestPartition", partition_index=p) for p, _ in indexes))
        for topic, indexes in _by_topic((tp, None) for tp in partitions))
    return make(cls, group_id=group, topics=topics)


# --- ListOffsets -------------------------------------------------------------------------------

def list_offsets_request(version: int, timestamps: Mapping[TopicPartition, int]):
    """A client's ListOffsets: per partition the offset at a timestamp, or at
    -2 (earliest) / -1 (latest: the high watermark)."""
    from kafkactl.cluster.protocol.build import make, nested

    cls = request_class(LIST_OFFSETS[0], version)
    topics = tuple(
        nested(cls, "ListOffsetsTopic", name=topic, partitions=tuple(
            nested(cls, "ListOffsetsPartition", partition_index=p, current_leader_epoch=-1, timestamp=ts,
                   max_num_offsets=1) for p, ts in partitions))
        for topic, partitions in _by_topic(timestamps.items()))
    return make(cls, replica_id=CONSUMER_REPLICA_ID, isolation_level=READ_UNCOMMITTED, topics=topics)


def listed_offsets(response) -> dict[TopicPartition, tuple[int, str | None]]:
    """Per partition (offset, error); offset -1 when no record is at or after a timestamp."""
    return {(t.name, p.partition_index): (int(p.offset), error_name(p.error_code))
            for t in response.topics for p in t.partitions}


def _by_topic(items: Iterable[tuple[TopicPartition, object]]) -> list[tuple[str, list[tuple[int, object]]]]:
    grouped: dict[str, list[tuple[int, object]]] = {}
    for (topic, partition), value in sorted(items, key=lambda item: item[0]):
        grouped.setdefault(topic, []).append((partition, value))
    return list(grouped.items())
