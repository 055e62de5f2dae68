import pytest

from kafkactl.cluster.broker.config import ConfigError, from_properties, parse_properties

BASE = {"broker.id": "1", "zookeeper.connect": "127.0.0.1:2181", "log.dirs": "/d/a,/d/b"}


def config_of(**extra):
    properties = dict(BASE)
    properties.update({k.replace("_", "."): v for k, v in extra.items()})
    return from_properties(properties)


def test_kafka_defaults_apply():
    config, warnings = from_properties(dict(BASE))
    assert warnings == []
    assert config.log_segment_bytes == 1024**3
    assert config.log_retention_ms == 168 * 3600 * 1000
    assert config.message_max_bytes == 1048588
    assert config.socket_request_max_bytes == 104857600
    assert config.min_insync_replicas == 1
    assert config.auto_create_topics_enable is True
    assert config.listeners[0].port == 9092


def test_properties_syntax():
    text = "# comment\n! also\nbroker.id = 3\nlog.dirs=/a,\\\n  /b\nkey\\=x:value\nempty=\n"
    properties = parse_properties(text)
    assert properties["broker.id"] == "3"
    assert properties["log.dirs"] == "/a,/b"
    assert properties["key=x"] == "value"
    assert properties["empty"] == ""


def test_retention_precedence_ms_over_hours():
    config, _ = from_properties({**BASE, "log.retention.hours": "1", "log.retention.ms": "5000"})
    assert config.log_retention_ms == 5000
    config, _ = from_properties({**BASE, "log.retention.hours": "2"})
    assert config.log_retention_ms == 2 * 3600 * 1000


def test_unknown_key_is_a_warning_and_known_unused_is_silent():
    _, warnings = from_properties({**BASE, "log.segmnt.bytes": "10", "num.io.threads": "8"})
    assert warnings == ["unknown config key 'log.segmnt.bytes' ignored"]


@pytest.mark.parametrize("key,value", [
    ("broker.id", "-5"),
    ("broker.id", "one"),
    ("log.segment.bytes", "10"),
    ("auto.create.topics.enable", "yes"),
    ("listeners", "localhost:9092"),
    ("log.dir.media", "/d/a:floppy"),
    ("log.retention.ms", "0"),
    ("min.insync.replicas", "0"),
])
def test_invalid_value_names_the_key(key, value):
    with pytest.raises(ConfigError, match=f"^{key}: "):
        from_properties({**BASE, key: value})


def test_missing_required_key():
    with pytest.raises(ConfigError, match="^zookeeper.connect: required"):
        from_properties({"broker.id": "1"})


def test_media_override_must_name_a_log_dir():
    config, _ = from_properties({**BASE, "log.dir.media": "/d/a:ssd,/d/b:hdd"})
    assert config.media_of("/d/a") == "ssd" and config.media_of("/d/b") == "hdd"
    with pytest.raises(ConfigError, match="^log.dir.media: /d/c"):
        from_properties({**BASE, "log.dir.media": "/d/c:ssd"})


def test_log_config_carries_broker_defaults():
    config, _ = from_properties({**BASE, "log.segment.bytes": "4096", "min.insync.replicas": "2"})
    log_config = config.default_log_config()
    assert log_config.segment_bytes == 4096
    assert log_config.min_insync_replicas == 2
