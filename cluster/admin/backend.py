"""The seam between kafkactl's commands and the two ways to a cluster.

`ClusterBackend` is what commands ask of a cluster, in Kafka's nouns:
topics and their partitions, brokers, the controller, configs, and the
changes to them. `ZooKeeperBackend` does it the way ZooKeeper-mode Kafka's
tools did (reading and writing Kafka's znodes: cluster/admin/topics.py,
configs.py); `AdminApiBackend` (admin_backend.py) through the Kafka Admin
API, which also works against KRaft clusters that have no ZooKeeper.

What one back end cannot do raises `Unsupported` with one line saying why;
commands report it as a usage error (exit 2), and never guess.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

ZOOKEEPER = "zookeeper"
ADMIN_API = "admin-api"


class Unsupported(Exception):
    """This back end cannot do what was asked (the message says why, in one line)."""


class TopicExists(Exception):
    pass


class RefusedChange(Exception):
    """The cluster refused a change as bad input (nothing was written)."""


@dataclass(frozen=True, slots=True)
class Controller:
    broker_id: int              # -1: none
    epoch: int                  # -1: unknown (the Admin API does not say)
    elected_ms: int             # 0: unknown


@dataclass(frozen=True, slots=True)
class NewTopic:
    name: str
    partitions: int | None              # None: the brokers' num.partitions
    replication_factor: int | None      # None: the brokers' default.replication.factor
    assignment: dict[int, list[int]] | None
    configs: dict[str, str]


class ClusterBackend(Protocol):
    kind: str

    def topic_names(self) -> list[str]: ...

    def marked_for_deletion(self) -> list[str]: ...

    def describe_topics(self, names: list[str]) -> dict[str, list | None]: ...

    def brokers(self) -> list: ...                    # BrokerRegistration, by id

    def controller(self) -> Controller: ...

    def min_insync_replicas(self, names: list[str]) -> dict[str, int]: ...

    def broker_defaults(self, keys: list[str]) -> dict[str, str | None]: ...

    def create_topic(self, topic: NewTopic, assignment: dict[int, list[int]]) -> dict[int, list[int]]: ...

    def delete_topics(self, names: list[str]) -> None: ...

    def config_overrides(self, entities: list) -> dict: ...    # configs.Entity -> its dynamic configs

    def alter_config(self, entity, add: Mapping[str, str], delete: list[str]) -> dict[str, str]: ...


class ZooKeeperBackend:
    """Kafka's znodes, through a kazoo client open for the command."""

    kind = ZOOKEEPER

    def __init__(self, client, timeout_s: float) -> None:
        self.client = client
        self.timeout_s = timeout_s

    def topic_names(self) -> list[str]:
        from kafkactl.cluster.admin.topics import list_topics

        return list_topics(self.client, self.timeout_s)

    def marked_for_deletion(self) -> list[str]:
        from kafkactl.cluster.admin.topics import marked_for_deletion

        return marked_for_deletion(self.client, self.timeout_s)

    def describe_topics(self, names: list[str]) -> dict[str, list | None]:
        from kafkactl.cluster.admin.topics import describe_topics

        return describe_topics(self.client, names, self.timeout_s)

    def brokers(self) -> list:
        from kafkactl.cluster.admin.topics import live_brokers

        return live_brokers(self.client, self.timeout_s)

    def controller(self) -> Controller:
        from kafkactl.cluster.admin.inspect import read_controller

        info = read_controller(self.client, self.timeout_s)
        return Controller(info.broker_id, info.epoch, info.timestamp_ms)

    def min_insync_replicas(self, names: list[str]) -> dict[str, int]:
        from kafkactl.cluster.admin.topics import min_insync_replicas

        return min_insync_replicas(self.client, names, self.timeout_s)

    def broker_defaults(self, keys: list[str]) -> dict[str, str | None]:
        """Asked of the controller (it creates topics in Kafka), else the lowest live broker."""
        from kafkactl.cluster.admin import broker_queries as bq

        registrations = self.brokers()
        if not registrations:
            raise RefusedChange("no live broker to take defaults from")
        controller = self.controller().broker_id
        chosen = next((r for r in registrations if r.broker_id == controller), registrations[0])
        address = bq.BrokerAddress(chosen.broker_id, chosen.host, chosen.port)
        answer = bq.ask_brokers([address], bq.broker_configs(keys), self.timeout_s)[chosen.broker_id]
        if isinstance(answer, bq.BrokerQueryError):
            raise RefusedChange(f"broker {chosen.broker_id} did not give its defaults ({answer})")
        return answer

    def create_topic(self, topic: NewTopic, assignment: dict[int, list[int]]) -> dict[int, list[int]]:
        from kafkactl.cluster.admin.topics import TopicExistsError, create_topic

        try:
            create_topic(self.client, topic.name, assignment, topic.configs, self.timeout_s)
        except TopicExistsError:
            raise TopicExists(topic.name) from None
        return assignment

    def delete_topics(self, names: list[str]) -> None:
        from kafkactl.cluster.admin.topics import mark_for_deletion

        mark_for_deletion(self.client, names, self.timeout_s)


    def partition_views(self, topics: list[str]) -> dict[str, dict | None]:
        from kafkactl.cluster.admin.reassignment import read_partitions

        return read_partitions(self.client, topics, self.timeout_s)

    def config_overrides(self, entities: list) -> dict:
        from kafkactl.cluster.admin import configs

        return {e: stored.config for e, stored in configs.read_configs(self.client, entities, self.timeout_s).items()}

    def alter_config(self, entity, add: Mapping[str, str], delete: list[str]) -> dict[str, str]:
        """The overrides after the change: config and notification in one multi."""
        from kafkactl.cluster.admin import configs

        try:
            return configs.alter(self.client, entity, add, delete, self.timeout_s)
        except configs.ConfigError as error:
            raise RefusedChange(str(error)) from None


def config_values(entries: Mapping[str, str | None], key: str) -> int | None:
    """An integer config's value, None when absent or not a number."""
    try:
        value = entries.get(key)
        return None if value is None else int(value)
    except ValueError:
        return None
