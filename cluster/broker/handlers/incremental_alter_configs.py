"""IncrementalAlterConfigs (API 44, v0-v1): SET, DELETE, APPEND and SUBTRACT
on a topic's or a broker's dynamic configs, applied to what ZooKeeper holds,
as Kafka 2.8's ZooKeeper-mode brokers do. The rules:
cluster/admin/config_requests.py; the work and the answer: config_alteration.py."""

from __future__ import annotations

from kafkactl.cluster.admin import config_requests as rules
from kafkactl.cluster.broker.handlers import config_alteration

API_KEY = 44


def handle(services, header, request):
    return config_alteration.handle(services, header, request, API_KEY, _operations, rules.incremented)


def _operations(resource) -> list[rules.Operation]:
    return [rules.Operation(c.name, c.config_operation, c.value) for c in resource.configs]
