"""Which Kafka APIs and versions this broker implements and advertises.

Advertised ranges are chosen for what real clients need (see
../shared/reference/wire-compat.md): librdkafka only compresses when Produce
v0 appears in the range and only uses magic v2 when Fetch v4+ does, so
Produce is advertised from v0 (as Kafka 4.0 does) though v0-v2 are not
served. Fetch stops at v12 because v13+ addresses topics by id only.

Versions Kafka 2.8 serves but this broker cannot (Produce v0-2 and Fetch
v0-3 carry message formats 0 and 1; the log holds magic 2 only) are still
read, from `answered_min`, and answered with UNSUPPORTED_VERSION in their
own layout: clients that never ask ApiVersions (kafka-python's SimpleClient,
a client pinned to api_version=(0, 10)) get an error they can parse instead
of a closed connection they would retry forever. docs/architecture.md has
the audit against Kafka 2.8.
"""

from dataclasses import dataclass

PRODUCE = 0
FETCH = 1
LIST_OFFSETS = 2
METADATA = 3
OFFSET_COMMIT = 8
OFFSET_FETCH = 9
FIND_COORDINATOR = 10
JOIN_GROUP = 11
HEARTBEAT = 12
LEAVE_GROUP = 13
SYNC_GROUP = 14
DESCRIBE_GROUPS = 15
LIST_GROUPS = 16
API_VERSIONS = 18
CREATE_TOPICS = 19
DELETE_TOPICS = 20
INIT_PRODUCER_ID = 22
OFFSET_FOR_LEADER_EPOCH = 23
DESCRIBE_CONFIGS = 32
ALTER_REPLICA_LOG_DIRS = 34
DESCRIBE_LOG_DIRS = 35
CREATE_PARTITIONS = 37
DELETE_GROUPS = 42
OFFSET_DELETE = 47


@dataclass(frozen=True, slots=True)
class VersionRange:
    advertised_min: int
    advertised_max: int
    implemented_min: int  # lowest version actually served
    answered_min: int | None = None  # lowest version read, to refuse it in its own layout

    def implements(self, version: int) -> bool:
        return self.implemented_min <= version <= self.advertised_max

    def refuses(self, version: int) -> bool:
        """Read only to answer UNSUPPORTED_VERSION (below implemented_min)."""
        return self.answered_min is not None and self.answered_min <= version < self.implemented_min

    def decoded(self) -> range:
        """Every version the dispatcher hands to a decoder."""
        low = self.implemented_min if self.answered_min is None else self.answered_min
        return range(low, self.advertised_max + 1)


SUPPORTED: dict[int, VersionRange] = {
    PRODUCE: VersionRange(0, 9, 3, answered_min=0),   # v0-2 refused
    FETCH: VersionRange(4, 12, 4, answered_min=0),    # v0-3 refused, not advertised
    LIST_OFFSETS: VersionRange(0, 7, 0),              # v0: protocol/old_versions/
    METADATA: VersionRange(0, 12, 0),
    # The group coordinator's APIs, at Kafka 3.0's ranges (OffsetCommit v0-1 and
    # OffsetFetch v0 predate kio; clients of the last eight years send newer).
    OFFSET_COMMIT: VersionRange(2, 8, 2),
    OFFSET_FETCH: VersionRange(1, 8, 1),
    FIND_COORDINATOR: VersionRange(0, 4, 0),
    JOIN_GROUP: VersionRange(0, 7, 0),
    HEARTBEAT: VersionRange(0, 4, 0),
    LEAVE_GROUP: VersionRange(0, 4, 0),
    SYNC_GROUP: VersionRange(0, 5, 0),
    DESCRIBE_GROUPS: VersionRange(0, 5, 0),
    LIST_GROUPS: VersionRange(0, 4, 0),
    DELETE_GROUPS: VersionRange(0, 2, 0),
    OFFSET_DELETE: VersionRange(0, 0, 0),
    API_VERSIONS: VersionRange(0, 4, 0),
    INIT_PRODUCER_ID: VersionRange(0, 4, 0),
    OFFSET_FOR_LEADER_EPOCH: VersionRange(0, 4, 0),   # v0-1: protocol/old_versions/
    DESCRIBE_CONFIGS: VersionRange(0, 4, 0),          # v0: protocol/old_versions/
    ALTER_REPLICA_LOG_DIRS: VersionRange(0, 2, 0),    # v0: kio's v1 layout
    DESCRIBE_LOG_DIRS: VersionRange(0, 4, 0),         # v0: kio's v1 layout; v5 would make kafka-python infer Kafka 4.3
    # The topic Admin APIs at Kafka 2.8's ranges (CreateTopics v7, DeleteTopics v6: topic ids).
    CREATE_TOPICS: VersionRange(0, 7, 0),             # v0-1: protocol/old_versions/
    DELETE_TOPICS: VersionRange(0, 6, 0),             # v0: kio's v1 request
    CREATE_PARTITIONS: VersionRange(0, 3, 0),
}


def is_supported(api_key: int, api_version: int) -> bool:
    versions = SUPPORTED.get(api_key)
    return versions is not None and versions.implements(api_version)


def is_refused(api_key: int, api_version: int) -> bool:
    """Answered with UNSUPPORTED_VERSION in the request's own version."""
    versions = SUPPORTED.get(api_key)
    return versions is not None and versions.refuses(api_version)
