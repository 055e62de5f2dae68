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


@pytest.mark.parametrize("raw, policy", [
    ("delete", "delete"), ("compact", "compact"), ("compact,delete", "compact,delete"),
    ("delete, compact", "compact,delete"), ("compact,compact", "compact"),
])
def test_cleanup_policy_is_kafkas_list_of_delete_and_compact(raw, policy):
    config = log_config_for(BROKER, {"cleanup.policy": raw})
    assert config.cleanup_policy == policy
    assert config.compact == ("compact" in policy) and config.delete == ("delete" in policy)


@pytest.mark.parametrize("raw", ["", "keep", "compact,", "compact;delete", "Compact"])
def test_cleanup_policy_refuses_anything_else(raw):
    with pytest.raises(TopicConfigError, match="^cleanup.policy: invalid value .*expected delete, compact or both"):
        validate_topic_config({"cleanup.policy": raw})


def test_cleaner_topic_configs_reach_the_log_config():
    config = log_config_for(BROKER, {"delete.retention.ms": "5", "min.compaction.lag.ms": "6",
                                     "max.compaction.lag.ms": "7", "min.cleanable.dirty.ratio": "0.01"})
    assert (config.delete_retention_ms, config.min_compaction_lag_ms, config.max_compaction_lag_ms,
            config.min_cleanable_dirty_ratio) == (5, 6, 7, 0.01)


def test_broker_defaults_of_the_cleaner_configs_are_kafkas_and_server_properties_set_them():
    config = log_config_for(BROKER, {})
    assert (config.cleanup_policy, config.delete_retention_ms, config.min_compaction_lag_ms,
            config.max_compaction_lag_ms, config.min_cleanable_dirty_ratio) == (
        "delete", 86_400_000, 0, 2**63 - 1, 0.5)
    broker, warnings = from_properties({"broker.id": "1", "zookeeper.connect": "z:1",
                                        "log.cleanup.policy": "compact", "log.cleaner.delete.retention.ms": "9",
                                        "log.cleaner.min.cleanable.ratio": "0.1", "log.cleaner.threads": "2",
                                        "log.cleaner.io.max.bytes.per.second": "1e6"})
    assert not warnings
    config = log_config_for(broker, {})
    assert (config.cleanup_policy, config.delete_retention_ms, config.min_cleanable_dirty_ratio) == (
        "compact", 9, 0.1)
    assert broker.log_cleaner_threads == 2 and broker.log_cleaner_io_max_bytes_per_second == 1e6
    assert log_config_for(broker, {"cleanup.policy": "delete"}).cleanup_policy == "delete"


def test_min_compaction_lag_above_the_max_is_refused():
    with pytest.raises(TopicConfigError, match="^min.compaction.lag.ms: 10 is greater than max.compaction.lag.ms 5"):
        validate_topic_config({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"})
