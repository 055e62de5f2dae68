"""What a ZooKeeper-mode controller decides for the Admin API's topic
requests (pure): CreateTopics, CreatePartitions, DeleteTopics, per topic, as
Kafka 2.8's KafkaApis and ZkAdminManager decide them. The broker's handlers
read ZooKeeper and the metadata snapshot into a view, ask these functions,
and write only what they plan.

CreateTopics, each topic in this order (the first rule broken is the answer):
1. named twice in the request: INVALID_REQUEST for every entry of it
   (`named_twice`; nothing of it is created);
2. in the broker's metadata: TOPIC_ALREADY_EXISTS;
3. a config without a value, or counts (not -1) together with an explicit
   assignment: INVALID_REQUEST;
4. counts of -1: the broker's num.partitions / default.replication.factor
   (KIP-464); then partitions < 1 or more new partitions than the request
   has left of MAX_NEW_PARTITIONS: INVALID_PARTITIONS; a replication factor
   < 1 or above the live brokers: INVALID_REPLICATION_FACTOR; Kafka's
   (rack-aware) assignment over the live brokers;
5. the name (Kafka's Topic.validate): INVALID_TOPIC_EXCEPTION; marked for
   deletion or in ZooKeeper: TOPIC_ALREADY_EXISTS; equal to an existing
   topic once '.' and '_' are swapped: INVALID_TOPIC_EXCEPTION;
6. an explicit assignment: partition indexes 0..n-1 each once, at least one
   replica each, the same number everywhere, no broker twice, every broker
   live: INVALID_REPLICA_ASSIGNMENT;
7. an unknown config name or an invalid value: INVALID_CONFIG.

CreatePartitions, each topic: named twice: one INVALID_REQUEST for it;
marked for deletion: INVALID_TOPIC_EXCEPTION; being reassigned:
REASSIGNMENT_IN_PROGRESS; absent: UNKNOWN_TOPIC_OR_PARTITION; a count not
above the current one, or more new partitions than the request has left:
INVALID_PARTITIONS; explicit assignments: brokers not registered, not one
per new partition, empty, a broker twice, or another replica count than
partition 0's: INVALID_REPLICA_ASSIGNMENT; otherwise Kafka's continuation
of the existing assignment (topic_changes.continued_assignment), and
INVALID_REPLICATION_FACTOR if the brokers cannot hold it.

DeleteTopics, each topic: delete.topic.enable false: INVALID_REQUEST before
v3, TOPIC_DELETION_DISABLED from v3; a name and an id together: the whole
request INVALID_REQUEST; an id no topic has: UNKNOWN_TOPIC_ID; an internal
topic (created yet or not, as the CLI checks): INVALID_TOPIC_EXCEPTION; not
in the metadata: UNKNOWN_TOPIC_OR_PARTITION. One already marked for
deletion is answered like one marked now.

Where this differs from Kafka 2.8, on purpose, with the CLI's validation:
2.8 creates a topic whose explicit assignment names an unregistered broker
(its partitions stay offline; KRaft refuses it, as here); 2.8 marks an
internal topic for deletion (its group or transaction coordinator then
loses its log; kafkactl refuses it, as here); 2.8 bounds no request's
partitions (a znode over ZooKeeper's 1 MiB fails the write; KRaft refuses
more than 10,000 records per request, the figure used here).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode

from kafkactl.cluster.admin.replica_assignment import AssignmentError, BrokerInfo, assign_replicas
from kafkactl.cluster.admin.topic_changes import (
    INTERNAL_TOPICS,
    InvalidChange,
    check_name_collision,
    continued_assignment,
    validate_assignment,
)
from kafkactl.cluster.admin.topic_names import InvalidTopicName, validate_topic_name

NO_COUNT = -1                  # num_partitions / replication_factor: the broker's default (KIP-464)
MAX_NEW_PARTITIONS = 10_000    # per request, over all its topics (KRaft's MAX_RECORDS_PER_USER_OP)
DELETE_TOPICS_DISABLED_FROM = 3   # DeleteTopics versions that know TOPIC_DELETION_DISABLED


@dataclass(frozen=True, slots=True)
class Refusal:
    error: ErrorCode
    message: str


# --- CreateTopics -----------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class NewTopic:
    """One entry of a CreateTopics request."""
    name: str
    num_partitions: int
    replication_factor: int
    assignments: tuple[tuple[int, tuple[int, ...]], ...] = ()   # (partition index, brokers)
    configs: tuple[tuple[str, str | None], ...] = ()


@dataclass(frozen=True, slots=True)
class CreateView:
    """What the controller knows when it decides."""
    live_brokers: tuple[BrokerInfo, ...]
    in_metadata: frozenset[str]             # the broker's metadata snapshot
    in_zookeeper: frozenset[str]            # /brokers/topics
    marked_for_deletion: frozenset[str]     # /admin/delete_topics
    default_num_partitions: int
    default_replication_factor: int


@dataclass(frozen=True, slots=True)
class PlannedTopic:
    name: str
    assignment: dict[int, list[int]]
    config: dict[str, str] = field(default_factory=dict)

    @property
    def replication_factor(self) -> int:
        return len(self.assignment[0])


def named_twice(names) -> frozenset[str]:
    return frozenset(name for name, count in Counter(names).items() if count > 1)


def plan_new_topics(topics: list[NewTopic], view: CreateView,
                    budget: int = MAX_NEW_PARTITIONS) -> list[PlannedTopic | Refusal]:
    """One plan or refusal per entry, in order (the module doc's rules)."""
    twice = named_twice(t.name for t in topics)
    plans: list[PlannedTopic | Refusal] = []
    for topic in topics:
        if topic.name in twice:
            plans.append(Refusal(ErrorCode.invalid_request, "Found multiple entries for this topic."))
            continue
        plan = plan_new_topic(topic, view, budget)
        if isinstance(plan, PlannedTopic):
            budget -= len(plan.assignment)
        plans.append(plan)
    return plans


def plan_new_topic(topic: NewTopic, view: CreateView, budget: int = MAX_NEW_PARTITIONS) -> PlannedTopic | Refusal:
    name = topic.name
    if name in view.in_metadata:
        return Refusal(ErrorCode.topic_already_exists, f"Topic '{name}' already exists.")
    unset = [key for key, value in topic.configs if value is None]
    if unset:
        return Refusal(ErrorCode.invalid_request, f"Null value not supported for topic configs: {', '.join(unset)}")
    counts_given = topic.num_partitions != NO_COUNT or topic.replication_factor != NO_COUNT
    if topic.assignments and counts_given:
        return Refusal(ErrorCode.invalid_request, "Both numPartitions or replicationFactor and replicasAssignments "
                                                  "were set. Both cannot be used at the same time.")
    if topic.assignments:
        assignment = _explicit(topic.assignments)
        if len(assignment) > budget:
            return _over_budget(len(assignment), budget)
    else:
        assignment = _automatic(topic, view, budget)
        if isinstance(assignment, Refusal):
            return assignment
    refusal = _name_refusal(name, view)
    if refusal is None and topic.assignments:
        refusal = explicit_assignment_refusal(topic.assignments, {b.broker_id for b in view.live_brokers})
    if refusal is None:
        refusal = _config_refusal(name, dict(topic.configs))
    if refusal is not None:
        return refusal
    return PlannedTopic(name, assignment, dict(topic.configs))


def _explicit(assignments) -> dict[int, list[int]]:
    return {index: list(brokers) for index, brokers in assignments}


def _automatic(topic: NewTopic, view: CreateView, budget: int) -> dict[int, list[int]] | Refusal:
    partitions = view.default_num_partitions if topic.num_partitions == NO_COUNT else topic.num_partitions
    factor = view.default_replication_factor if topic.replication_factor == NO_COUNT else topic.replication_factor
    if partitions <= 0:
        return Refusal(ErrorCode.invalid_partitions, "Number of partitions must be larger than 0.")
    if partitions > budget:     # before any allocation: a count of 2^31-1 costs nothing
        return _over_budget(partitions, budget)
    if factor <= 0:
        return Refusal(ErrorCode.invalid_replication_factor, "Replication factor must be larger than 0.")
    if factor > len(view.live_brokers):
        return Refusal(ErrorCode.invalid_replication_factor, f"Replication factor: {factor} larger than available "
                                                             f"brokers: {len(view.live_brokers)}.")
    try:
        return assign_replicas(list(view.live_brokers), partitions, factor)
    except AssignmentError as error:
        return Refusal(ErrorCode.invalid_replication_factor, str(error))


def _over_budget(partitions: int, budget: int) -> Refusal:
    return Refusal(ErrorCode.invalid_partitions,
                   f"{partitions} new partitions; one request creates at most {MAX_NEW_PARTITIONS} "
                   f"({max(budget, 0)} left after the topics before this one).")


def _name_refusal(name: str, view: CreateView) -> Refusal | None:
    try:
        validate_topic_name(name)
    except InvalidTopicName as error:
        return Refusal(ErrorCode.invalid_topic_exception, str(error))
    if name in view.marked_for_deletion:
        return Refusal(ErrorCode.topic_already_exists, f"Topic '{name}' is marked for deletion.")
    if name in view.in_zookeeper:
        return Refusal(ErrorCode.topic_already_exists, f"Topic '{name}' already exists.")
    try:
        check_name_collision(name, sorted(view.in_zookeeper))
    except InvalidChange as error:
        return Refusal(ErrorCode.invalid_topic_exception, str(error))
    return None


def explicit_assignment_refusal(assignments, live: set[int]) -> Refusal | None:
    """An explicit assignment of a new topic (rule 6), as (index, brokers) pairs."""
    indexes = sorted(index for index, _ in assignments)
    if indexes != list(range(len(indexes))):
        return Refusal(ErrorCode.invalid_replica_assignment,
                       "partitions should be a consecutive 0-based integer sequence")
    return _replicas_refusal([list(brokers) for _, brokers in sorted(assignments)], live, None, 0)


def _replicas_refusal(partitions: list[list[int]], live: set[int], replication_factor: int | None,
                      first_partition: int) -> Refusal | None:
    for offset, replicas in enumerate(partitions):
        if not replicas:
            return Refusal(ErrorCode.invalid_replica_assignment,
                           f"Cannot have replication factor of 0 for partition id {first_partition + offset}.")
    try:
        validate_assignment(partitions, live, replication_factor, first_partition, option="assignment")
    except InvalidChange as error:
        return Refusal(ErrorCode.invalid_replica_assignment, str(error))
    return None


def _config_refusal(name: str, config: dict[str, str]) -> Refusal | None:
    from kafkactl.cluster.admin import configs

    try:
        configs.validate(configs.topic_entity(name), config)
    except configs.ConfigError as error:
        return Refusal(ErrorCode.invalid_config, str(error))
    return None


# --- CreatePartitions --------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class NewPartitions:
    """One entry of a CreatePartitions request: the new total, and optionally
    the replicas of each new partition."""
    name: str
    count: int
    assignments: tuple[tuple[int, ...], ...] | None = None


@dataclass(frozen=True, slots=True)
class PartitionsView:
    registered_brokers: tuple[BrokerInfo, ...]
    # name -> (partitions, being reassigned), absent for a topic not in ZooKeeper
    topics: dict[str, tuple[dict[int, list[int]], bool]]
    marked_for_deletion: frozenset[str]


def plan_new_partitions(requests: list[NewPartitions], view: PartitionsView,
                        budget: int = MAX_NEW_PARTITIONS) -> dict[str, dict[int, list[int]] | Refusal]:
    """Per topic name (once, in request order) the new partitions' replicas or a refusal."""
    twice = named_twice(r.name for r in requests)
    plans: dict[str, dict[int, list[int]] | Refusal] = {}
    for request in requests:
        if request.name in twice:
            plans[request.name] = Refusal(ErrorCode.invalid_request, "Duplicate topic in request.")
            continue
        plan = _plan_partitions(request, view, budget)
        if not isinstance(plan, Refusal):
            budget -= len(plan)
        plans[request.name] = plan
    return plans


def _plan_partitions(request: NewPartitions, view: PartitionsView, budget: int) -> dict[int, list[int]] | Refusal:
    name = request.name
    if name in view.marked_for_deletion:
        return Refusal(ErrorCode.invalid_topic_exception, "The topic is queued for deletion.")
    if name not in view.topics:
        return Refusal(ErrorCode.unknown_topic_or_partition, f"The topic '{name}' does not exist.")
    existing, reassigning = view.topics[name]
    if reassigning:
        return Refusal(ErrorCode.reassignment_in_progress,
                       f"A partition reassignment is in progress for the topic '{name}'.")
    current, increment = len(existing), request.count - len(existing)
    if increment < 0:
        return Refusal(ErrorCode.invalid_partitions, f"Topic currently has {current} partitions, which is higher "
                                                     f"than the requested {request.count}.")
    if increment == 0:
        return Refusal(ErrorCode.invalid_partitions, f"Topic already has {current} partitions.")
    if increment > budget:
        return _over_budget(increment, budget)
    registered = {b.broker_id for b in view.registered_brokers}
    if request.assignments is not None:
        unknown = sorted({b for replicas in request.assignments for b in replicas} - registered)
        if unknown:
            return Refusal(ErrorCode.invalid_replica_assignment,
                           f"Unknown broker(s) in replica assignment: {', '.join(map(str, unknown))}.")
        if len(request.assignments) != increment:
            return Refusal(ErrorCode.invalid_replica_assignment,
                           f"Increasing the number of partitions by {increment} but "
                           f"{len(request.assignments)} assignments provided.")
        partitions = [list(replicas) for replicas in request.assignments]
        refusal = _replicas_refusal(partitions, registered, len(existing[0]), current)
        if refusal is not None:
            return refusal
        return {current + i: replicas for i, replicas in enumerate(partitions)}
    try:
        return continued_assignment(existing, request.count, list(view.registered_brokers))
    except AssignmentError as error:
        return Refusal(ErrorCode.invalid_replication_factor, str(error))


# --- DeleteTopics -----------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Deletion:
    """One entry of a DeleteTopics answer: `error` None means "mark it"."""
    name: str | None
    topic_id: str | None
    error: ErrorCode | None


def plan_deletions(entries: list[tuple[str | None, str | None]], topic_ids: dict[str, str | None],
                   version: int, delete_enabled: bool) -> list[Deletion]:
    """`entries`: (name, topic id) per request entry (v6 names one of the
    two; before v6 names only); `topic_ids`: the metadata's topics and
    their ids."""
    if not delete_enabled:
        error = (ErrorCode.topic_deletion_disabled if version >= DELETE_TOPICS_DISABLED_FROM
                 else ErrorCode.invalid_request)
        return [Deletion(name, topic_id, error) for name, topic_id in entries]
    if any(name is not None and topic_id is not None for name, topic_id in entries):
        return [Deletion(name, topic_id, ErrorCode.invalid_request) for name, topic_id in entries]
    by_id = {topic_id: name for name, topic_id in topic_ids.items() if topic_id}
    deletions = []
    for name, topic_id in entries:
        if topic_id is not None:
            name = by_id.get(topic_id)
            if name is None:
                deletions.append(Deletion(None, topic_id, ErrorCode.unknown_topic_id))
                continue
        if name in INTERNAL_TOPICS:
            deletions.append(Deletion(name, topic_id, ErrorCode.invalid_topic_exception))
        elif name not in topic_ids:
            deletions.append(Deletion(name, topic_id, ErrorCode.unknown_topic_or_partition))
        else:
            deletions.append(Deletion(name, topic_id, None))
    return deletions
