"""AlterConfigs (API 33, v0-v2): replace a topic's or a broker's dynamic
configs (ZooKeeper's /config/topics/<t>, /config/brokers/<id|<default>>),
as Kafka 2.8's ZooKeeper-mode brokers do; any broker takes topic and
default-broker changes. The rules: cluster/admin/config_requests.py; the
work and the answer: config_alteration.py."""

from __future__ import annotations

from kafkactl.cluster.admin import config_requests as rules
from kafkactl.cluster.broker.handlers import config_alteration

API_KEY = 33


def handle(services, header, request):
    return config_alteration.handle(services, header, request, API_KEY, _operations,
                                    lambda entity, stored, ops: rules.replaced(ops))


def _operations(resource) -> list[rules.Operation]:
    return [rules.Operation(c.name, rules.SET, c.value) for c in resource.configs]
