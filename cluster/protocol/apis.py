"""Which Kafka APIs and versions this broker implements and advertises.

Advertised ranges are chosen for what real clients need (see
../shared/reference/wire-compat.md): librdkafka only compresses when Produce
v0 appears in the range and only uses magic v2 when Fetch v4+ does, so
Produce is advertised from v0 while v0-v2 requests are answered with
UNSUPPORTED_VERSION (Kafka 4.0 does the same). Fetch stops at v12 because
v13+ addresses topics by id only.
"""

from dataclasses import dataclass

PRODUCE = 0
FETCH = 1
LIST_OFFSETS = 2
METADATA = 3
FIND_COORDINATOR = 10
API_VERSIONS = 18
INIT_PRODUCER_ID = 22
OFFSET_FOR_LEADER_EPOCH = 23
DESCRIBE_CONFIGS = 32
ALTER_REPLICA_LOG_DIRS = 34
DESCRIBE_LOG_DIRS = 35


@dataclass(frozen=True, slots=True)
class VersionRange:
    advertised_min: int
    advertised_max: int
    implemented_min: int  # lowest version actually served

    def implements(self, version: int) -> bool:
        return self.implemented_min <= version <= self.advertised_max


SUPPORTED: dict[int, VersionRange] = {
    PRODUCE: VersionRange(0, 9, 3),
    FETCH: VersionRange(4, 12, 4),
    LIST_OFFSETS: VersionRange(0, 7, 0),              # v0: protocol/old_versions.py
    METADATA: VersionRange(0, 12, 0),
    FIND_COORDINATOR: VersionRange(0, 4, 0),
    API_VERSIONS: VersionRange(0, 4, 0),
    INIT_PRODUCER_ID: VersionRange(0, 4, 0),
    OFFSET_FOR_LEADER_EPOCH: VersionRange(2, 4, 2),   # kio has v2-v4
    DESCRIBE_CONFIGS: VersionRange(1, 4, 1),          # kio has v1-v4
    ALTER_REPLICA_LOG_DIRS: VersionRange(1, 2, 1),    # kio has v1-v2
    DESCRIBE_LOG_DIRS: VersionRange(1, 4, 1),         # v5 would make kafka-python infer Kafka 4.3
}


def is_supported(api_key: int, api_version: int) -> bool:
    versions = SUPPORTED.get(api_key)
    return versions is not None and versions.implements(api_version)
