"""The Admin API's requests and answers: kio entities in, plain values out.

Building a request for any version this module speaks (`make` drops the
fields a version lacks, so one builder serves every version) and reading its
response into the dataclasses below, with Kafka's error names in lower case
("not_controller") or None. No sockets here: admin_client.py sends them.

Only standard Admin API requests, so that the same calls work against
ZooKeeper-mode Kafka, KRaft Kafka 3.3+ and Kafka 4.x (which has no
ZooKeeper). The version ranges are what kio can build; the highest version
both sides speak is used.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

# (api key, lowest, highest version this module builds), as broker_queries.py has them.
METADATA = (3, 1, 12)                       # v1: the first with controller_id
CREATE_TOPICS = (19, 2, 7)
DELETE_TOPICS = (20, 1, 6)
DELETE_RECORDS = (21, 0, 2)
DESCRIBE_CONFIGS = (32, 1, 4)
ALTER_CONFIGS = (33, 0, 2)
CREATE_PARTITIONS = (37, 0, 3)
ELECT_LEADERS = (43, 0, 2)
INCREMENTAL_ALTER_CONFIGS = (44, 0, 1)
ALTER_PARTITION_REASSIGNMENTS = (45, 0, 0)
LIST_PARTITION_REASSIGNMENTS = (46, 0, 0)
DESCRIBE_CLUSTER = (60, 0, 1)

API_NAMES = {3: "Metadata", 19: "CreateTopics", 20: "DeleteTopics", 21: "DeleteRecords", 32: "DescribeConfigs",
             33: "AlterConfigs", 37: "CreatePartitions", 43: "ElectLeaders", 44: "IncrementalAlterConfigs",
             45: "AlterPartitionReassignments", 46: "ListPartitionReassignments", 60: "DescribeCluster"}

TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4
BROKER_DEFAULT = ""                         # the BROKER resource's name for the cluster-wide defaults
PREFERRED, UNCLEAN = 0, 1                   # ElectLeaders election_type
SET, DELETE = 0, 1                          # IncrementalAlterConfigs config_operation
BROKER_CHOOSES = -1                         # CreateTopics: the broker's default (KIP-464)
NOT_CONTROLLER = "not_controller"
_NO_TOPIC_ID = uuid.UUID(int=0)              # DeleteTopics v6 goes by name when the id is zero

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class Node:
    node_id: int
    host: str
    port: int
    rack: str | None


@dataclass(frozen=True, slots=True)
class PartitionMetadata:
    partition: int
    error: str | None
    leader: int
    leader_epoch: int                        # -1 before Metadata v7
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    name: str
    error: str | None
    internal: bool
    partitions: tuple[PartitionMetadata, ...]


@dataclass(frozen=True, slots=True)
class ClusterMetadata:
    cluster_id: str | None
    controller_id: int                       # -1: none known
    brokers: dict[int, Node]
    topics: dict[str, TopicMetadata] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    name: str
    value: str | None
    read_only: bool
    # Kafka's ConfigSource: 1 topic, 2 broker, 3 cluster-wide default, 4 static, 5 default
    source: int
    sensitive: bool
    synonyms: tuple[tuple[str | None, int], ...] = ()   # (value, source) of each level, highest first

    def value_from(self, source: int) -> tuple[bool, str | None]:
        """(found, value) of this key at one level (a source), from the entry or its synonyms."""
        if self.source == source:
            return True, self.value
        for value, synonym_source in self.synonyms:
            if synonym_source == source:
                return True, value
        return False, None


@dataclass(frozen=True, slots=True)
class Outcome:
    """One item of a batch answer: None for success, else Kafka's error name and message."""
    error: str | None
    message: str | None = None


@dataclass(frozen=True, slots=True)
class Reassignment:
    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]


def error_name(code) -> str | None:
    return None if int(code) == 0 else code.name.lower()


def timeout_ms(timeout_s: float) -> datetime.timedelta:
    return datetime.timedelta(milliseconds=max(1, int(timeout_s * 1000)))


def find_error(entity, wanted: str) -> bool:
    """Whether `wanted` (lower case) is any error code in a response, at any depth:
    NOT_CONTROLLER comes top-level in some APIs and per item in others."""
    import dataclasses

    if isinstance(entity, tuple):
        return any(find_error(item, wanted) for item in entity)
    if not dataclasses.is_dataclass(entity):
        return False
    for f in dataclasses.fields(entity):
        value = getattr(entity, f.name)
        if f.name == "error_code" and error_name(value) == wanted:
            return True
        if isinstance(value, tuple) or dataclasses.is_dataclass(value):
            if find_error(value, wanted):
                return True
    return False


def _request_class(api_key: int, version: int):
    from kio.index import load_request_schema

    return load_request_schema(api_key, version)


# --- Metadata ------------------------------------------------------------------------------------

def metadata_request(version: int, topics: Iterable[str] | None):
    """All topics (None), or the named ones; never creates a topic."""
    from kafkactl.cluster.protocol.build import make, nested

    cls = _request_class(METADATA[0], version)
    wanted = None if topics is None else tuple(nested(cls, "MetadataRequestTopic", name=t, topic_id=None)
                                               for t in topics)
    return make(cls, topics=wanted, allow_auto_topic_creation=False, include_cluster_authorized_operations=False,
                include_topic_authorized_operations=False)


def cluster_metadata(response) -> ClusterMetadata:
    brokers = {int(b.node_id): Node(int(b.node_id), b.host, int(b.port), b.rack) for b in response.brokers}
    topics = {t.name: TopicMetadata(t.name, error_name(t.error_code), bool(t.is_internal),
                                    tuple(sorted((_partition(p) for p in t.partitions), key=lambda p: p.partition)))
              for t in response.topics if t.name is not None}
    return ClusterMetadata(getattr(response, "cluster_id", None), int(response.controller_id), brokers, topics)


def _partition(p) -> PartitionMetadata:
    return PartitionMetadata(int(p.partition_index), error_name(p.error_code), int(p.leader_id),
                             int(getattr(p, "leader_epoch", -1)), tuple(int(r) for r in p.replica_nodes),
                             tuple(int(r) for r in p.isr_nodes),
                             tuple(int(r) for r in getattr(p, "offline_replicas", ())))


# --- DescribeConfigs ----------------------------------------------------------------------------

def describe_configs_request(version: int, resources: Iterable[tuple[int, str]]):
    from kafkactl.cluster.protocol.build import make, nested

    cls = _request_class(DESCRIBE_CONFIGS[0], version)
    return make(cls, resources=tuple(nested(cls, "DescribeConfigsResource", resource_type=kind, resource_name=name,
                                            configuration_keys=None) for kind, name in resources),
                include_synonyms=True, include_documentation=False)


def described_configs(response) -> dict[tuple[int, str], tuple[Outcome, list[ConfigEntry]]]:
    """Per (resource type, name): the outcome and the config entries."""
    answers = {}
    for result in response.results:
        entries = [ConfigEntry(c.name, c.value, bool(c.read_only), int(getattr(c, "config_source", -1)),
                               bool(c.is_sensitive), tuple((y.value, int(y.source)) for y in getattr(c, "synonyms", ())
                                                           if y.name == c.name))
                   for c in result.configs]
        answers[(int(result.resource_type), result.resource_name)] = (
            Outcome(error_name(result.error_code), result.error_message), entries)
    return answers


# --- topics -----------------------------------------------------------------------------------------

def create_topics_request(version: int, name: str, partitions: int, replication_factor: int,
                          assignment: Mapping[int, list[int]] | None, configs: Mapping[str, str],
                          timeout_s: float, validate_only: bool):
    """One topic: an explicit assignment (partitions and factor then -1, as Kafka
    requires), or counts where -1 lets the broker choose its default."""
    from kafkactl.cluster.protocol.build import make, nested

    cls = _request_class(CREATE_TOPICS[0], version)
    assignments = tuple(nested(cls, "CreatableReplicaAssignment", partition_index=p, broker_ids=tuple(r))
                        for p, r in sorted((assignment or {}).items()))
    if assignments:
        partitions = replication_factor = BROKER_CHOOSES
    topic = nested(cls, "CreatableTopic", name=name, num_partitions=partitions,
                   replication_factor=replication_factor, assignments=assignments,
                   configs=tuple(nested(cls, "CreatableTopicConfig", name=k, value=v)
                                 for k, v in sorted(configs.items())))
    return make(cls, topics=(topic,), timeout=timeout_ms(timeout_s), validate_only=validate_only)


def created_topics(response) -> dict[str, Outcome]:
    return {t.name: Outcome(error_name(t.error_code), getattr(t, "error_message", None)) for t in response.topics}


def delete_topics_request(version: int, names: list[str], timeout_s: float):
    from kafkactl.cluster.protocol.build import make, nested

    cls = _request_class(DELETE_TOPICS[0], version)
    return make(cls, topic_names=tuple(names), timeout=timeout_ms(timeout_s),
                topics=tuple(nested(cls, "DeleteTopicState", name=n, topic_id=_NO_TOPIC_ID) for n in names))


def deleted_topics(response) -> dict[str, Outcome]:
    return {r.name: Outcome(error_name(r.error_code), getattr(r, "error_message", None)) for r in response.responses}


def create_partitions_request(version: int, name: str, count: int, new_replicas: list[list[int]] | None,
                              timeout_s: float, validate_only: bool):
    """Raise `name` to `count` partitions; `new_replicas` for the new ones only (or None)."""
    from kafkactl.cluster.protocol.build import make, nested

    cls = _request_class(CREATE_PARTITIONS[0], version)
    assignments = None if new_replicas is None else tuple(
        nested(cls, "CreatePartitionsAssignment", broker_ids=tuple(r)) for r in new_replicas)
    topic = nested(cls, "CreatePartitionsTopic", name=name, count=count, assignments=assignments)
    return make(cls, topics=(topic,), timeout=timeout_ms(timeout_s), validate_only=validate_only)


def created_partitions(response) -> dict[str, Outcome]:
    return {r.name: Outcome(error_name(r.error_code), r.error_message) for r in response.results}


# --- configs ------------------------------------------------------------------------------------------

def incremental_alter_configs_request(version: int, resource: tuple[int, str], additions: Mapping[str, str],
                                      deletions: Iterable[str], validate_only: bool):
    """Set and remove some keys of one resource, leaving the others as they are."""
    from kafkactl.cluster.protocol.build import make, nested

    cls = _request_class(INCREMENTAL_ALTER_CONFIGS[0], version)
    configs = tuple(nested(cls, "AlterableConfig", name=k, config_operation=SET, value=v)
                    for k, v in sorted(additions.items()))
    configs += tuple(nested(cls, "AlterableConfig", name=k, config_operation=DELETE, value=None)
                     for k in sorted(deletions))
    kind, name = resource
    return make(cls, resources=(nested(cls, "AlterConfigsResource", resource_type=kind, resource_name=name,
                                       configs=configs),), validate_only=validate_only)


def altered_configs(response) -> dict[tuple[int, str], Outcome]:
    return {(int(r.resource_type), r.resource_name): Outcome(error_name(r.error_code), r.error_message)
            for r in response.responses}


# --- elections and reassignments ----------------------------------------------------------------

def elect_leaders_request(version: int, election_type: int, partitions: Iterable[TopicPartition] | None,
                          timeout_s: float):
    """`partitions` None: every partition (Kafka's "all")."""
    from kafkactl.cluster.protocol.build import make, nested

    cls = _request_class(ELECT_LEADERS[0], version)
    return make(cls, election_type=election_type, timeout=timeout_ms(timeout_s),
                topic_partitions=None if partitions is None else tuple(
                    nested(cls, "TopicPartitions", topic=t, partitions=tuple(ps))
                    for t, ps in sorted(_by_topic(partitions).items())))


def elected_leaders(response) -> tuple[str | None, dict[TopicPartition, Outcome]]:
    """The request's error (v1+), and per partition its outcome."""
    results = {(r.topic, int(p.partition_id)): Outcome(error_name(p.error_code), p.error_message)
               for r in response.replica_election_results for p in r.partition_result}
    return error_name(getattr(response, "error_code", 0)), results


def alter_reassignments_request(version: int, targets: Mapping[TopicPartition, list[int] | None], timeout_s: float):
    """Per partition its new replicas, or None to cancel its reassignment."""
    from kafkactl.cluster.protocol.build import make, nested

    cls = _request_class(ALTER_PARTITION_REASSIGNMENTS[0], version)
    by_topic: dict[str, list] = {}
    for (topic, partition), replicas in sorted(targets.items()):
        by_topic.setdefault(topic, []).append(nested(
            cls, "ReassignablePartition", partition_index=partition,
            replicas=None if replicas is None else tuple(replicas)))
    return make(cls, timeout=timeout_ms(timeout_s), topics=tuple(
        nested(cls, "ReassignableTopic", name=t, partitions=tuple(ps)) for t, ps in by_topic.items()))


def altered_reassignments(response) -> tuple[Outcome, dict[TopicPartition, Outcome]]:
    results = {(t.name, int(p.partition_index)): Outcome(error_name(p.error_code), p.error_message)
               for t in response.responses for p in t.partitions}
    return Outcome(error_name(response.error_code), response.error_message), results


def list_reassignments_request(version: int, timeout_s: float):
    from kafkactl.cluster.protocol.build import make

    return make(_request_class(LIST_PARTITION_REASSIGNMENTS[0], version), timeout=timeout_ms(timeout_s), topics=None)


def listed_reassignments(response) -> tuple[Outcome, dict[TopicPartition, Reassignment]]:
    ongoing = {(t.name, int(p.partition_index)): Reassignment(tuple(p.replicas), tuple(p.adding_replicas),
                                                               tuple(p.removing_replicas))
               for t in response.topics for p in t.partitions}
    return Outcome(error_name(response.error_code), response.error_message), ongoing


def _by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[int]]:
    grouped: dict[str, list[int]] = {}
    for topic, partition in partitions:
        grouped.setdefault(topic, []).append(partition)
    return {t: sorted(ps) for t, ps in grouped.items()}
