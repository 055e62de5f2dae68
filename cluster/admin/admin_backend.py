"""`ClusterBackend` through the Kafka Admin API (see backend.py for the seam).

Reads come from Metadata (brokers, controller, partitions with leader,
leader epoch, replicas and ISR) and DescribeConfigs; changes go through
CreateTopics, DeleteTopics, CreatePartitions, IncrementalAlterConfigs,
ElectLeaders and the reassignment APIs, sent where admin_client.py routes
them. Answers the cluster refuses as bad input (INVALID_REPLICATION_FACTOR,
INVALID_CONFIG, ...) raise `RefusedChange`; Kafka wrote nothing for them.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping

from kafkactl.cluster.admin import admin_protocol as ap
from kafkactl.cluster.admin.admin_client import AdminApiError, AdminClient
from kafkactl.cluster.admin.backend import ADMIN_API, Controller, NewTopic, RefusedChange, TopicExists, config_values

# Kafka's errors for input it refuses: the CLI reports them as usage errors (exit 2).
BAD_INPUT = frozenset({
    "invalid_topic_exception", "invalid_partitions", "invalid_replication_factor", "invalid_replica_assignment",
    "invalid_config", "unknown_topic_or_partition", "invalid_request", "policy_violation",
    "topic_deletion_disabled", "invalid_update_version", "no_reassignment_in_progress"})
DEFAULT_MIN_INSYNC_REPLICAS = 1
TOPIC_CONFIG_SOURCE = 1                      # DescribeConfigs: DYNAMIC_TOPIC_CONFIG
BROKER_CONFIG_SOURCE = 2                     # DYNAMIC_BROKER_CONFIG
DEFAULT_BROKER_CONFIG_SOURCE = 3             # DYNAMIC_DEFAULT_BROKER_CONFIG
METADATA_POLL_S = 0.1


class AdminApiBackend:
    kind = ADMIN_API

    def __init__(self, client: AdminClient, timeout_s: float) -> None:
        self.admin = client
        self.timeout_s = timeout_s

    # --- reads -------------------------------------------------------------------------------------

    def topic_names(self) -> list[str]:
        return sorted(self.admin.metadata(refresh=True).topics)

    def marked_for_deletion(self) -> list[str]:
        return []    # DeleteTopics is not a marker: Metadata shows no topics waiting to be deleted

    def describe_topics(self, names: list[str]) -> dict[str, list | None]:
        """Per topic its partitions (None for a topic that does not exist)."""
        from kafkactl.cluster.admin.topics import PartitionInfo

        if not names:
            return {}
        found = self.admin.metadata(names).topics
        described: dict[str, list | None] = {}
        for name in names:
            topic = found.get(name)
            if topic is None or topic.error == "unknown_topic_or_partition":
                described[name] = None
                continue
            described[name] = [PartitionInfo(name, p.partition, list(p.replicas), p.leader, p.leader_epoch,
                                             list(p.isr)) for p in topic.partitions]
        return described

    def partition_views(self, topics: list[str]) -> dict[str, dict | None]:
        """reassignment.PartitionView per partition, as read_partitions gives them: the
        replicas from Metadata, and for a partition being moved its full replica set and
        the replicas being added and removed from ListPartitionReassignments."""
        from dataclasses import replace

        from kafkactl.cluster.admin.reassignment import PartitionView

        described = self.describe_topics(list(dict.fromkeys(topics)))
        views = {t: None if parts is None else {
            p.partition: PartitionView(t, p.partition, tuple(p.replicas), leader=p.leader, leader_epoch=p.leader_epoch,
                                       isr=tuple(p.isr)) for p in parts} for t, parts in described.items()}
        if any(views.values()):
            for (topic, partition), moving in self.list_reassignments().items():
                view = (views.get(topic) or {}).get(partition)
                if view is not None:
                    views[topic][partition] = replace(view, replicas=tuple(moving.replicas),
                                                      adding=tuple(moving.adding), removing=tuple(moving.removing))
        return views

    def brokers(self) -> list:
        """Live brokers as ZooKeeper's registrations look; the Admin API gives no
        listener name, broker epoch or registration time (-1 and 0: unknown)."""
        from kafkactl.cluster.zk.codecs import BrokerRegistration

        nodes = self.admin.metadata(refresh=True).brokers.values()
        return [BrokerRegistration(n.node_id, n.host, n.port, (f"{n.host}:{n.port}",), n.rack)
                for n in sorted(nodes, key=lambda n: n.node_id)]

    def controller(self) -> Controller:
        return Controller(self.admin.metadata(refresh=True).controller_id, -1, 0)

    def min_insync_replicas(self, names: list[str]) -> dict[str, int]:
        configs = self.topic_configs(names)
        return {name: config_values(configs[name], "min.insync.replicas") or DEFAULT_MIN_INSYNC_REPLICAS
                for name in names}

    def topic_configs(self, names: list[str], overrides_only: bool = False) -> dict[str, dict[str, str | None]]:
        """Each topic's configs (all of them, or only its own overrides)."""
        if not names:
            return {}
        answers = self._describe_configs([(ap.TOPIC_RESOURCE, n) for n in names], self.admin.send_any)
        return {name: _values(answers[(ap.TOPIC_RESOURCE, name)], TOPIC_CONFIG_SOURCE if overrides_only else None)
                for name in names}

    def broker_configs(self, broker_id: int | None, overrides_only: bool = True) -> dict[str, str | None]:
        """A broker's dynamic configs, or (broker_id None) the cluster-wide dynamic defaults."""
        name = ap.BROKER_DEFAULT if broker_id is None else str(broker_id)
        send = self.admin.send_any if broker_id is None else \
            (lambda api, build: self.admin.send_to_broker(broker_id, api, build))
        answer = self._describe_configs([(ap.BROKER_RESOURCE, name)], send)[(ap.BROKER_RESOURCE, name)]
        source = DEFAULT_BROKER_CONFIG_SOURCE if broker_id is None else BROKER_CONFIG_SOURCE
        return _values(answer, source if overrides_only else None)

    def broker_defaults(self, keys: list[str]) -> dict[str, str | None]:
        """`keys` of the controller's configs, as it would apply them to a new topic."""
        controller = self.controller().broker_id
        broker = controller if controller in self.admin.brokers() else min(self.admin.brokers())
        configs = self.broker_configs(broker, overrides_only=False)
        return {key: configs.get(key) for key in keys}

    def _describe_configs(self, resources: list[tuple[int, str]], send) -> dict:
        response = send(ap.DESCRIBE_CONFIGS, lambda v: ap.describe_configs_request(v, resources))
        answers = ap.described_configs(response)
        for resource in resources:
            outcome, _ = answers.get(resource, (ap.Outcome("no_answer"), []))
            _raise_for(outcome, f"DescribeConfigs of {resource[1] or 'the broker defaults'}")
        return answers

    # --- changes -----------------------------------------------------------------------------------

    def create_topic(self, topic: NewTopic, assignment: dict[int, list[int]]) -> dict[int, list[int]]:
        """CreateTopics with the assignment kafkactl planned; returns it once Metadata shows the topic."""
        response = self.admin.send_to_controller(ap.CREATE_TOPICS, lambda v: ap.create_topics_request(
            v, topic.name, len(assignment), 0, assignment, topic.configs, self.admin.remaining_s(), False))
        outcome = ap.created_topics(response).get(topic.name, ap.Outcome("no_answer"))
        if outcome.error == "topic_already_exists":
            raise TopicExists(topic.name)
        _raise_for(outcome, f"CreateTopics {topic.name!r}")
        self._await_metadata(lambda: topic.name in self.admin.metadata([topic.name]).topics
                             and self.admin.metadata([topic.name]).topics[topic.name].error is None)
        return assignment

    def delete_topics(self, names: list[str]) -> None:
        if not names:
            return
        response = self.admin.send_to_controller(
            ap.DELETE_TOPICS, lambda v: ap.delete_topics_request(v, names, self.admin.remaining_s()))
        answers = ap.deleted_topics(response)
        for name in names:
            _raise_for(answers.get(name, ap.Outcome("no_answer")), f"DeleteTopics {name!r}")

    def add_partitions(self, name: str, count: int, new_replicas: list[list[int]]) -> None:
        response = self.admin.send_to_controller(ap.CREATE_PARTITIONS, lambda v: ap.create_partitions_request(
            v, name, count, new_replicas, self.admin.remaining_s(), False))
        _raise_for(ap.created_partitions(response).get(name, ap.Outcome("no_answer")), f"CreatePartitions {name!r}")

    def alter_configs(self, resource: tuple[int, str], additions: Mapping[str, str], deletions: Iterable[str],
                      broker_id: int | None = None) -> None:
        """IncrementalAlterConfigs: a broker's own configs go to that broker, as Kafka wants."""
        deletions = list(deletions)

        def build(v):
            return ap.incremental_alter_configs_request(v, resource, additions, deletions, False)

        response = self.admin.send_any(ap.INCREMENTAL_ALTER_CONFIGS, build) if broker_id is None else \
            self.admin.send_to_broker(broker_id, ap.INCREMENTAL_ALTER_CONFIGS, build)
        _raise_for(ap.altered_configs(response).get(resource, ap.Outcome("no_answer")),
                   f"IncrementalAlterConfigs of {resource[1] or 'the broker defaults'}")

    def config_overrides(self, entities: list) -> dict:
        """Each configs.Entity's dynamic configs: a topic's own, a broker's own, or the cluster-wide defaults."""
        from kafkactl.cluster.admin import configs

        found = {}
        for entity in entities:
            if entity.entity_type == configs.TOPICS:
                found[entity] = self.topic_configs([entity.name], overrides_only=True)[entity.name]
            else:
                found[entity] = self.broker_configs(_broker_id(entity))
        return found

    def alter_config(self, entity, add: Mapping[str, str], delete: list[str]) -> dict[str, str]:
        """IncrementalAlterConfigs, after the checks ZooKeeper's path makes; the overrides after the change."""
        from kafkactl.cluster.admin import configs

        current = self.config_overrides([entity])[entity]
        try:
            after = configs.altered(configs.StoredConfig(entity, dict(current), None), add, delete)
        except configs.ConfigError as error:
            raise RefusedChange(str(error)) from None
        self.alter_entity(entity, add, delete)
        return after

    def alter_entity(self, entity, add: Mapping[str, str], delete: Iterable[str]) -> None:
        """IncrementalAlterConfigs SET `add`, DELETE `delete` on a configs.Entity, without
        alter_config's checks: for changes kafkactl computed itself (the throttles)."""
        from kafkactl.cluster.admin import configs

        if entity.entity_type == configs.TOPICS:
            self.alter_configs((ap.TOPIC_RESOURCE, entity.name), add, delete)
            return
        broker_id = _broker_id(entity)
        self.alter_configs((ap.BROKER_RESOURCE, ap.BROKER_DEFAULT if broker_id is None else str(broker_id)),
                           add, delete, broker_id)

    def elect(self, election_type: int, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], ap.Outcome]:
        response = self.admin.send_to_controller(ap.ELECT_LEADERS, lambda v: ap.elect_leaders_request(
            v, election_type, partitions, self.admin.remaining_s()))
        error, results = ap.elected_leaders(response)
        _raise_for(ap.Outcome(error), "ElectLeaders")
        return results

    def alter_reassignments(self, targets: Mapping[tuple[str, int], list[int] | None]) \
            -> dict[tuple[str, int], ap.Outcome]:
        response = self.admin.send_to_controller(ap.ALTER_PARTITION_REASSIGNMENTS, lambda v: (
            ap.alter_reassignments_request(v, targets, self.admin.remaining_s())))
        top, results = ap.altered_reassignments(response)
        _raise_for(top, "AlterPartitionReassignments")
        return results

    def list_reassignments(self) -> dict[tuple[str, int], ap.Reassignment]:
        response = self.admin.send_to_controller(ap.LIST_PARTITION_REASSIGNMENTS, lambda v: (
            ap.list_reassignments_request(v, self.admin.remaining_s())))
        top, ongoing = ap.listed_reassignments(response)
        _raise_for(top, "ListPartitionReassignments")
        return ongoing

    def _await_metadata(self, ready) -> None:
        """Until `ready()` (the change reached the broker we ask), bounded by the deadline."""
        while not ready():
            if self.admin.remaining_s() <= METADATA_POLL_S:
                raise AdminApiError("the change was accepted, but the brokers' metadata did not show it "
                                    "before the deadline (--timeout)")
            time.sleep(METADATA_POLL_S)


def _broker_id(entity) -> int | None:
    from kafkactl.cluster.admin import configs

    return None if entity.name == configs.BROKER_DEFAULT else int(entity.name)


def _values(answer, source: int | None) -> dict[str, str | None]:
    """Every entry's value, or only those set at `source` (a level a higher one may shadow:
    Kafka then names it among the entry's synonyms)."""
    _, entries = answer
    if source is None:
        return {e.name: e.value for e in entries}
    found = {e.name: e.value_from(source) for e in entries}
    return {name: value for name, (present, value) in found.items() if present}


def _raise_for(outcome: ap.Outcome, what: str) -> None:
    if outcome.error is None:
        return
    line = f"{what}: {outcome.error.upper()}" + (f" ({outcome.message})" if outcome.message else "")
    if outcome.error in BAD_INPUT:
        raise RefusedChange(line)
    raise AdminApiError(line)
