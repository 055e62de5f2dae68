"""The Admin API's config rules (config_requests.py), with literal inputs:
which entity a resource names, AlterConfigs' replacement, the incremental
operations, and Kafka's error for each refusal."""

import pytest
from kio.schema.errors import ErrorCode

from kafkactl.cluster.admin import config_requests as rules
from kafkactl.cluster.admin import configs

TOPIC = configs.topic_entity("orders")
BROKER = configs.broker_entity(3)
DEFAULT = configs.broker_entity(None)


def op(name, value=None, kind=rules.SET):
    return rules.Operation(name, kind, value)


def refusal(call, *args):
    with pytest.raises(rules.Refused) as refused:
        call(*args)
    return refused.value.error, refused.value.message


def test_resources_name_topics_this_broker_or_the_cluster_default():
    assert rules.entity_of(2, "orders", 3) == TOPIC
    assert rules.entity_of(4, "3", 3) == BROKER
    assert rules.entity_of(4, "", 3) == DEFAULT
    assert refusal(rules.entity_of, 4, "1", 3) == (
        ErrorCode.invalid_request, "Unexpected broker id, expected 3, but received 1")
    assert refusal(rules.entity_of, 4, "x", 3)[0] == ErrorCode.invalid_request
    assert refusal(rules.entity_of, 8, "3", 3)[0] == ErrorCode.invalid_request      # BROKER_LOGGER
    assert refusal(rules.entity_of, 2, "bad/name", 3)[0] == ErrorCode.unknown_topic_or_partition


def test_alter_configs_replaces_the_whole_config_and_refuses_null_values():
    assert rules.replaced([op("retention.ms", "1000"), op("segment.ms", "60000")]) == {
        "retention.ms": "1000", "segment.ms": "60000"}
    assert rules.replaced([]) == {}
    assert refusal(rules.replaced, [op("retention.ms", None)])[0] == ErrorCode.invalid_request


def test_incremental_operations_apply_in_order_to_what_is_stored():
    stored = {"retention.ms": "1000", "cleanup.policy": "delete", "leader.replication.throttled.replicas": "0:1"}
    result = rules.incremented(TOPIC, stored, [
        op("retention.ms", kind=rules.DELETE),
        op("segment.ms", "60000"),
        op("cleanup.policy", "compact,delete", rules.APPEND),
        op("leader.replication.throttled.replicas", "0:1", rules.SUBTRACT),
        op("no.such.key.deleted", kind=rules.DELETE),        # not set: nothing to do
    ])
    assert result == {"segment.ms": "60000", "cleanup.policy": "delete,compact",
                      "leader.replication.throttled.replicas": ""}
    assert stored["retention.ms"] == "1000"                  # the input is not changed


def test_append_and_subtract_only_on_list_keys():
    assert refusal(rules.incremented, TOPIC, {}, [op("retention.ms", "1", rules.APPEND)]) == (
        ErrorCode.invalid_request, "Config value append is not allowed for config key: retention.ms")
    assert refusal(rules.incremented, TOPIC, {}, [op("nope", "1", rules.SUBTRACT)]) == (
        ErrorCode.invalid_config, "Unknown topic config name: nope")
    assert refusal(rules.incremented, BROKER, {}, [op("log.retention.ms", "1", rules.APPEND)])[0] == \
        ErrorCode.invalid_request
    assert rules.incremented(BROKER, {"metric.reporters": "a.B"}, [op("metric.reporters", "c.D", rules.APPEND)]) \
        == {"metric.reporters": "a.B,c.D"}
    assert refusal(rules.incremented, TOPIC, {}, [op("retention.ms", "1", 7)])[0] == ErrorCode.invalid_request


def test_the_resulting_config_is_checked_whole_with_kafkas_errors():
    resource = rules.label(2, "orders")
    rules.check(TOPIC, resource, {"retention.ms": "1000", "cleanup.policy": "compact"})
    assert refusal(rules.check, TOPIC, resource, {"retention.msx": "1"}) == (
        ErrorCode.invalid_config, "Unknown topic config name: retention.msx")
    error, message = refusal(rules.check, TOPIC, resource, {"retention.ms": "soon"})
    assert error == ErrorCode.invalid_request
    assert message.startswith("Invalid config value for resource ConfigResource(type=TOPIC, name='orders'): ")
    # Brokers: read-only keys, per-broker keys at the default, bad values: INVALID_REQUEST.
    rules.check(BROKER, "b", {"log.retention.ms": "60000", "listeners": "PLAINTEXT://:9092"})
    for entity, config in ((BROKER, {"broker.id": "4"}), (DEFAULT, {"listeners": "PLAINTEXT://:9092"}),
                           (BROKER, {"log.retention.ms": "-7"}), (BROKER, {"no.such.broker.key": "1"})):
        assert refusal(rules.check, entity, "b", config)[0] == ErrorCode.invalid_request
