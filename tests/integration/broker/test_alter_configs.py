"""AlterConfigs and IncrementalAlterConfigs as real clients send them
(confluent-kafka's AdminClient, kafka-python's KafkaAdminClient), checked
in ZooKeeper (the config znode and its change notification) and through
DescribeConfigs afterwards; refused and validate_only requests write nothing.
"""

from __future__ import annotations

import json

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from support.names import unique_topic
from support.waiting import wait_for
from support.wire import wait_until_known_everywhere

from kafkactl.cluster.zk import layout

TIMEOUT_S = 30


@pytest.fixture(scope="module")
def env(shared_cluster):
    _, status = shared_cluster
    zk = KazooClient(hosts=status.zookeeper_connect)
    zk.start(timeout=15)
    admin = AdminClient({"bootstrap.servers": status.bootstrap_servers})
    try:
        yield status, zk, admin
    finally:
        zk.stop()
        zk.close()


def new_topic(status, zk, prefix: str) -> str:
    from kafkactl.cluster.admin.topics import create_topic

    topic = unique_topic(prefix)
    create_topic(zk, topic, {0: [status.brokers[0].id]}, {})
    wait_until_known_everywhere(status.brokers, topic)
    return topic


def stored(zk, entity_path: str) -> dict | None:
    try:
        data, _ = zk.get(f"/config/{entity_path}")
    except NoNodeError:
        return None
    return json.loads(data)["config"]


def notifications(zk) -> list[str]:
    names = sorted(zk.get_children(layout.CONFIG_CHANGES))
    return [json.loads(zk.get(f"{layout.CONFIG_CHANGES}/{n}")[0])["entity_path"] for n in names]


def error_code(future) -> int:
    with pytest.raises(KafkaException) as raised:
        future.result(TIMEOUT_S)
    return raised.value.args[0].code()


def described(admin, resource_type, name: str) -> dict:
    resource = ConfigResource(resource_type, name)
    return {k: v.value for k, v in admin.describe_configs([resource])[resource].result(TIMEOUT_S).items()}


def test_alter_configs_replaces_a_topics_config_and_describe_configs_shows_it(env):
    status, zk, admin = env
    topic = new_topic(status, zk, "alter")
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic, set_config={"retention.ms": "123456"})
    admin.alter_configs([resource])[resource].result(TIMEOUT_S)
    assert stored(zk, f"topics/{topic}") == {"retention.ms": "123456"}
    assert f"topics/{topic}" in notifications(zk)
    wait_for(lambda: described(admin, ConfigResource.Type.TOPIC, topic)["retention.ms"] == "123456",
             TIMEOUT_S, what="the broker applying the change")
    # Non-incremental: a key not given is removed.
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic, set_config={"segment.ms": "600000"})
    admin.alter_configs([resource])[resource].result(TIMEOUT_S)
    assert stored(zk, f"topics/{topic}") == {"segment.ms": "600000"}


def test_incremental_alter_configs_sets_deletes_appends_and_subtracts(env):
    status, zk, admin = env
    topic = new_topic(status, zk, "incr")

    def alter(*entries):
        resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=list(entries))
        admin.incremental_alter_configs([resource])[resource].result(TIMEOUT_S)

    alter(ConfigEntry("retention.ms", "7200000", incremental_operation=AlterConfigOpType.SET),
          ConfigEntry("leader.replication.throttled.replicas", "0:1",
                      incremental_operation=AlterConfigOpType.APPEND))
    alter(ConfigEntry("leader.replication.throttled.replicas", "0:2,0:1",
                      incremental_operation=AlterConfigOpType.APPEND))
    assert stored(zk, f"topics/{topic}") == {"retention.ms": "7200000",
                                             "leader.replication.throttled.replicas": "0:1,0:2"}
    alter(ConfigEntry("leader.replication.throttled.replicas", "0:1", incremental_operation=AlterConfigOpType.SUBTRACT),
          ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE))
    assert stored(zk, f"topics/{topic}") == {"leader.replication.throttled.replicas": "0:2"}
    wait_for(lambda: described(admin, ConfigResource.Type.TOPIC, topic)["leader.replication.throttled.replicas"]
             == "0:2", TIMEOUT_S, what="describe_configs showing the change")


def test_refused_and_validate_only_changes_write_nothing(env):
    status, zk, admin = env
    topic = new_topic(status, zk, "refused")
    before, config_before = len(notifications(zk)), stored(zk, f"topics/{topic}")

    def incremental(name, value, op=AlterConfigOpType.SET, topic_name=topic, **kwargs):
        resource = ConfigResource(ConfigResource.Type.TOPIC, topic_name,
                                  incremental_configs=[ConfigEntry(name, value, incremental_operation=op)])
        return admin.incremental_alter_configs([resource], **kwargs)[resource]

    assert error_code(incremental("no.such.key", "1")) == 40                    # INVALID_CONFIG
    assert error_code(incremental("retention.ms", "soon")) == 42                # INVALID_REQUEST
    assert error_code(incremental("retention.ms", "1", AlterConfigOpType.APPEND)) == 42   # not a list
    assert error_code(incremental("retention.ms", "1", topic_name=unique_topic("nope"))) == 3   # UNKNOWN_TOPIC
    incremental("retention.ms", "1000", validate_only=True).result(TIMEOUT_S)
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic, set_config={"retention.ms": "x"})
    assert error_code(admin.alter_configs([resource])[resource]) == 42
    assert stored(zk, f"topics/{topic}") == config_before == {} and len(notifications(zk)) == before


def incremental_by_hand(status, resource_name: str, *ops, validate_only=False):
    """IncrementalAlterConfigs v1 on a BROKER resource, hand-built: neither
    client sends the cluster default's name "" or another broker's id."""
    from kio.schema.incremental_alter_configs.v1 import request as iac
    from support.wire import client

    c = client(status.brokers[0])
    try:
        answer = c.request(iac.IncrementalAlterConfigsRequest(validate_only=validate_only, resources=(
            iac.AlterConfigsResource(resource_type=4, resource_name=resource_name, configs=tuple(
                iac.AlterableConfig(name=name, config_operation=op, value=value) for name, op, value in ops)),)))
    finally:
        c.close()
    [result] = answer.responses
    return result


def test_broker_configs_per_broker_and_cluster_default(env):
    status, zk, admin = env
    broker_id = str(status.brokers[0].id)
    # A key the broker applies (DescribeConfigs states what is in effect),
    # harmless to the shared cluster: index entries every 8 KiB, not 4.
    key = "log.index.interval.bytes"

    def incremental(name, value, op=AlterConfigOpType.SET):
        resource = ConfigResource(ConfigResource.Type.BROKER, broker_id,
                                  incremental_configs=[ConfigEntry(name, value, incremental_operation=op)])
        return admin.incremental_alter_configs([resource])[resource]

    assert incremental_by_hand(status, "", (key, 0, "6000")).error_code == 0
    assert stored(zk, "brokers/<default>")[key] == "6000"
    wait_for(lambda: described(admin, ConfigResource.Type.BROKER, broker_id).get(key) == "6000",
             TIMEOUT_S, what="describe_configs showing the cluster default")
    incremental(key, "8192").result(TIMEOUT_S)
    assert stored(zk, f"brokers/{broker_id}")[key] == "8192"
    wait_for(lambda: described(admin, ConfigResource.Type.BROKER, broker_id).get(key) == "8192",
             TIMEOUT_S, what="describe_configs showing the broker's own value")
    incremental(key, None, op=AlterConfigOpType.DELETE).result(TIMEOUT_S)
    assert incremental_by_hand(status, "", (key, 1, None)).error_code == 0
    assert key not in stored(zk, f"brokers/{broker_id}") and key not in stored(zk, "brokers/<default>")
    # A read-only key, a per-broker key at the cluster default: INVALID_REQUEST, nothing written.
    assert error_code(incremental("broker.id", "7")) == 42
    per_broker = incremental_by_hand(status, "", ("listeners", 0, "PLAINTEXT://:1"))
    assert per_broker.error_code == 42 and "listeners" in per_broker.error_message
    assert "broker.id" not in stored(zk, f"brokers/{broker_id}") and "listeners" not in stored(zk, "brokers/<default>")


def test_another_brokers_id_is_an_invalid_request_and_validate_only_writes_nothing(env):
    status, zk, _ = env
    result = incremental_by_hand(status, "999", ("log.cleaner.backoff.ms", 0, "1"))
    assert result.error_code == 42 and "Unexpected broker id" in result.error_message
    assert stored(zk, "brokers/999") is None
    before = stored(zk, "brokers/<default>")
    assert incremental_by_hand(status, "", ("log.cleaner.backoff.ms", 0, "1"), validate_only=True).error_code == 0
    assert stored(zk, "brokers/<default>") == before


def test_kafka_python_alter_configs_and_its_errors(env):
    from kafka.admin import ConfigResource as KafkaConfigResource
    from kafka.admin import ConfigResourceType, KafkaAdminClient

    status, zk, _ = env
    topic = new_topic(status, zk, "kp-alter")
    admin = KafkaAdminClient(bootstrap_servers=status.bootstrap_servers, request_timeout_ms=TIMEOUT_S * 1000)
    try:
        admin.alter_configs([KafkaConfigResource(ConfigResourceType.TOPIC, topic, configs={"retention.ms": "99000"})])
        assert stored(zk, f"topics/{topic}") == {"retention.ms": "99000"}
        answer = admin.alter_configs([KafkaConfigResource(ConfigResourceType.TOPIC, topic,
                                                          configs={"cleanup.policy": "shred"})])
        assert "InvalidRequest" in repr(answer), answer
        assert stored(zk, f"topics/{topic}") == {"retention.ms": "99000"}
    finally:
        admin.close()
