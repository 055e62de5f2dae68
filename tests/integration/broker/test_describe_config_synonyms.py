"""DescribeConfigs with include_synonyms on a TOPIC, as real clients ask it
(confluent-kafka's AdminClient, kafka-python's KafkaAdminClient): the topic's
override, then the levels of the broker key it defaults to, in Kafka's order.

The shared cluster's server.properties sets log.segment.bytes (a static
level); the test adds a broker-level value and a cluster-wide default of
log.segment.delete.delay.ms (file.delete.delay.ms: how long a deleted
segment waits, harmless to the other tests) and removes them afterwards.
"""

from __future__ import annotations

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource
from kazoo.client import KazooClient
from support.names import unique_topic
from support.waiting import wait_for
from support.wire import wait_until_known_everywhere

from kafkactl.cluster.admin import configs

TIMEOUT_S = 30
BROKER_KEY = "log.segment.delete.delay.ms"

# What the topic is expected to show, whichever client asks: (value, source, synonyms).
EXPECTED = {
    "retention.ms": ("123456", "DYNAMIC_TOPIC_CONFIG", [
        ("retention.ms", "123456", "DYNAMIC_TOPIC_CONFIG"),
        ("log.retention.ms", "604800000", "DEFAULT_CONFIG")]),
    "file.delete.delay.ms": ("61000", "DYNAMIC_BROKER_CONFIG", [
        (BROKER_KEY, "61000", "DYNAMIC_BROKER_CONFIG"),
        (BROKER_KEY, "62000", "DYNAMIC_DEFAULT_BROKER_CONFIG"),
        (BROKER_KEY, "60000", "DEFAULT_CONFIG")]),
    "segment.bytes": ("1048576", "STATIC_BROKER_CONFIG", [
        ("log.segment.bytes", "1048576", "STATIC_BROKER_CONFIG"),
        ("log.segment.bytes", "1073741824", "DEFAULT_CONFIG")]),
    "cleanup.policy": ("delete", "DEFAULT_CONFIG", [("log.cleanup.policy", "delete", "DEFAULT_CONFIG")]),
}


@pytest.fixture(scope="module")
def env(shared_cluster):
    from kafkactl.cluster.admin.topics import create_topic

    _, status = shared_cluster
    zk = KazooClient(hosts=status.zookeeper_connect)
    zk.start(timeout=15)
    broker_id = status.brokers[0].id
    try:
        topic = unique_topic("synonyms")
        create_topic(zk, topic, {0: [broker_id]}, {"retention.ms": "123456"})
        wait_until_known_everywhere(status.brokers, topic)
        configs.alter(zk, configs.broker_entity(broker_id), {BROKER_KEY: "61000"}, (), TIMEOUT_S)
        configs.alter(zk, configs.broker_entity(None), {BROKER_KEY: "62000"}, (), TIMEOUT_S)
        yield status, topic
    finally:
        for entity in (configs.broker_entity(broker_id), configs.broker_entity(None)):
            configs.alter(zk, entity, {}, (BROKER_KEY,), TIMEOUT_S)
        zk.stop()
        zk.close()


def by_name(synonyms: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """The synonyms as confluent-kafka's ConfigEntry keeps them: a dict by name,
    so of the levels that share a name only the last (lowest) one is left."""
    kept: dict[str, tuple[str, str, str]] = {}
    for synonym in synonyms:
        kept[synonym[0]] = synonym
    return list(kept.values())


def confluent_described(status, topic: str) -> dict:
    # librdkafka asks for synonyms whenever the broker speaks DescribeConfigs v1+.
    admin = AdminClient({"bootstrap.servers": status.bootstrap_servers})
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    entries = admin.describe_configs([resource])[resource].result(TIMEOUT_S)
    return {name: (e.value, ConfigSource(e.source).name,
                   [(s.name, s.value, ConfigSource(s.source).name) for s in e.synonyms.values()])
            for name, e in entries.items()}


def kafka_python_described(status, topic: str) -> dict:
    from kafka.admin import ConfigResource as KafkaConfigResource
    from kafka.admin import ConfigResourceType, KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=status.bootstrap_servers, request_timeout_ms=TIMEOUT_S * 1000)
    try:
        answer = admin.describe_configs([KafkaConfigResource(ConfigResourceType.TOPIC, topic)],
                                        include_synonyms=True, config_filter="all")
    finally:
        admin.close()
    return {name: (c["value"], c["config_source"], [(s["name"], s["value"], s["source"]) for s in c["synonyms"]])
            for name, c in answer["topic"][topic].items()}


def applied(describe, status, topic: str, keep=lambda synonyms: synonyms):
    """The description once the broker shows both dynamic values (it reads each
    on its own config change notification, asynchronously: the broker's own
    can show before the cluster-wide default); `keep`: what the client keeps
    of the synonyms."""
    found = describe(status, topic)
    value, source, synonyms = EXPECTED["file.delete.delay.ms"]
    return found if found["file.delete.delay.ms"] == (value, source, keep(synonyms)) else None


def test_kafka_python_sees_every_level_in_kafkas_order(env):
    status, topic = env
    found = wait_for(lambda: applied(kafka_python_described, status, topic), TIMEOUT_S,
                     what="the broker applying the dynamic values")
    assert {name: found[name] for name in EXPECTED} == EXPECTED
    for name, (value, source, synonyms) in found.items():    # every entry is its first level
        assert synonyms and (value, source) == synonyms[0][1:], name


def test_confluent_kafka_sees_the_same_levels(env):
    status, topic = env
    found = wait_for(lambda: applied(confluent_described, status, topic, by_name), TIMEOUT_S,
                     what="the broker applying the dynamic values")
    assert {name: found[name] for name in EXPECTED} == {
        name: (value, source, by_name(synonyms)) for name, (value, source, synonyms) in EXPECTED.items()}
