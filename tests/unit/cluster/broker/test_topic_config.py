import pytest

from kafkactl.cluster.broker.config import from_properties
from kafkactl.cluster.broker.topic_config import TopicConfigError, log_config_for, validate_topic_config

BROKER, _ = from_properties({"broker.id": "1", "zookeeper.connect": "z:1", "log.segment.bytes": "1000000"})


def test_overrides_win_over_broker_defaults():
    config = log_config_for(BROKER, {"segment.bytes": "2048", "retention.ms": "1000"})
    assert config.segment_bytes == 2048
    assert config.retention_ms == 1000
    assert log_config_for(BROKER, {}).segment_bytes == 1000000


def test_bad_stored_value_falls_back_to_default():
    assert log_config_for(BROKER, {"segment.bytes": "banana"}).segment_bytes == 1000000


@pytest.mark.parametrize("key,value", [("segment.bytes", "1"), ("retnetion.ms", "5"), ("cleanup.policy", "keep")])
def test_validation_names_the_key(key, value):
    with pytest.raises(TopicConfigError, match=f"^{key}: "):
        validate_topic_config({key: value})


@pytest.mark.parametrize("key, value, message", [
    ("retention.ms", "abc", "retention.ms: invalid value 'abc' (not an integer)"),
    ("segment.bytes", "1x", "segment.bytes: invalid value '1x' (not an integer)"),
    ("min.cleanable.dirty.ratio", "half", "min.cleanable.dirty.ratio: invalid value 'half' (not a number)"),
    ("min.cleanable.dirty.ratio", "2", "min.cleanable.dirty.ratio: invalid value '2' (must be between 0 and 1)"),
    ("retenton.ms", "1", "retenton.ms: unknown topic config; did you mean retention.ms?"),
    ("zzz", "1", "zzz: unknown topic config"),
])
def test_messages_speak_kafka_not_python_and_suggest_close_keys(key, value, message):
    with pytest.raises(TopicConfigError) as raised:
        validate_topic_config({key: value})
    assert str(raised.value) == message
