"""DescribeLogDirs and DescribeConfigs handlers: what they answer, in every version they advertise.

The broker's parts are real where they matter (a LogManager over tmp dirs
with a configured media class, a BrokerConfig from properties); responses
are encoded and decoded again with kio, as a client would read them.
"""

from types import SimpleNamespace

import pytest

from kafkactl.cluster.broker.broker_client import decode_response
from kafkactl.cluster.broker.config import from_properties
from kafkactl.cluster.broker.handlers import describe_configs, describe_log_dirs
from kafkactl.cluster.log.manager import LogDir, LogManager
from kafkactl.cluster.protocol import apis
from kafkactl.cluster.protocol.codec import encode_response, request_class, response_class


@pytest.fixture
def services(tmp_path):
    ssd, hdd = tmp_path / "ssd0", tmp_path / "hdd0"
    config, _ = from_properties({"broker.id": "3", "zookeeper.connect": "zk:2181",
                                 "log.dirs": f"{ssd},{hdd}", "log.dir.media": f"{ssd}:ssd",
                                 "num.partitions": "4"})
    log_manager = LogManager([LogDir(str(ssd), "ssd"), LogDir(str(hdd), "hdd")], config.default_log_config(),
                             lambda: 0)
    log = log_manager.get_or_create_log("t", 0, preferred_media="ssd")
    replica_manager = SimpleNamespace(log_manager=log_manager, topic_configs={"t": {"retention.ms": "1000"}},
                                      get=lambda topic, index: None)
    metadata = SimpleNamespace(snapshot=SimpleNamespace(topics={"t": object()}))
    yield SimpleNamespace(config=config, replica_manager=replica_manager, metadata=metadata,
                          ssd=str(ssd), hdd=str(hdd), log=log)
    log_manager.shutdown()


def roundtrip(api_key, version, handler, services, **request_fields):
    """The handler's answer as a client decodes it off the wire."""
    from kafkactl.cluster.protocol.build import make

    request = make(request_class(api_key, version), **request_fields)
    response = handler(services, SimpleNamespace(api_version=version), request)
    frame = encode_response(response, correlation_id=5)
    return decode_response(frame[4:], response_class(api_key, version), 5)


def versions(api_key):
    supported = apis.SUPPORTED[api_key]
    return range(supported.implemented_min, supported.advertised_max + 1)


@pytest.mark.parametrize("version", versions(apis.DESCRIBE_LOG_DIRS))
def test_describe_log_dirs_lists_each_dir_with_its_partitions(services, version):
    response = roundtrip(35, version, describe_log_dirs.handle, services, topics=None)
    by_path = {r.log_dir: r for r in response.results}
    assert set(by_path) == {services.ssd, services.hdd}
    [ssd_topic] = by_path[services.ssd].topics
    assert (ssd_topic.name, [p.partition_index for p in ssd_topic.partitions]) == ("t", [0])
    assert ssd_topic.partitions[0].partition_size == services.log.size_bytes
    assert by_path[services.hdd].topics == ()
    if version >= 4:
        assert by_path[services.ssd].total_bytes > by_path[services.ssd].usable_bytes > 0


def test_describe_log_dirs_of_named_topics_only(services):
    from kio.schema.describe_log_dirs.v4.request import DescribableLogDirTopic

    response = roundtrip(35, 4, describe_log_dirs.handle, services,
                         topics=(DescribableLogDirTopic(topic="other", partitions=(0,)),))
    assert all(r.topics == () for r in response.results)


@pytest.mark.parametrize("version", versions(apis.DESCRIBE_CONFIGS))
def test_describe_configs_of_this_broker(services, version):
    from kafkactl.cluster.protocol.build import nested

    cls = request_class(32, version)
    resource = nested(cls, "DescribeConfigsResource", resource_type=4, resource_name="3", configuration_keys=None)
    response = roundtrip(32, version, describe_configs.handle, services, resources=(resource,),
                         include_synonyms=False)
    [result] = response.results
    configs = {c.name: c for c in result.configs}
    assert result.error_code == 0
    assert configs["log.dir.media"].value == f"{services.ssd}:ssd,{services.hdd}:hdd"
    assert configs["broker.id"].value == "3"
    if version == 0:   # no source yet: only whether the value is the default
        assert not configs["num.partitions"].is_default and configs["log.retention.ms"].is_default
    else:
        assert configs["num.partitions"].config_source == 4        # STATIC_BROKER_CONFIG
        assert configs["log.retention.ms"].config_source == 5      # Kafka's default, not set
    assert configs["num.partitions"].value == "4"
    assert configs["log.dirs"].value == f"{services.ssd},{services.hdd}"


def test_describe_configs_of_some_keys_another_broker_and_a_topic(services):
    from kio.schema.describe_configs.v4.request import DescribeConfigsResource

    response = roundtrip(32, 4, describe_configs.handle, services, resources=(
        DescribeConfigsResource(resource_type=4, resource_name="3", configuration_keys=("broker.id",)),
        DescribeConfigsResource(resource_type=4, resource_name="1", configuration_keys=None),
        DescribeConfigsResource(resource_type=2, resource_name="t", configuration_keys=None),
        DescribeConfigsResource(resource_type=2, resource_name="nope", configuration_keys=None),
    ))
    mine, other, topic, missing = response.results
    assert [c.name for c in mine.configs] == ["broker.id"]
    assert other.error_code.name == "invalid_request" and "expected 3" in other.error_message
    topic_configs = {c.name: (c.value, c.config_source) for c in topic.configs}
    assert topic_configs["retention.ms"] == ("1000", 1)
    assert topic_configs["segment.bytes"][1] == 5
    assert missing.error_code.name == "unknown_topic_or_partition"


def test_describe_configs_reports_dynamic_values_with_their_source(services):
    from kio.schema.describe_configs.v4.request import DescribeConfigsResource

    from kafkactl.cluster.broker.dynamic_config import resolve

    services.dynamic, _ = resolve(services.config, {"log.retention.ms": "1000", "log.roll.ms": "5000",
                                                    "num.io.threads": "16"},
                                  {"max.connections": "50", "leader.replication.throttled.rate": "100"})
    broker, topic = roundtrip(32, 4, describe_configs.handle, services, resources=(
        DescribeConfigsResource(resource_type=4, resource_name="3", configuration_keys=None),
        DescribeConfigsResource(resource_type=2, resource_name="t", configuration_keys=None),
    )).results
    configs = {c.name: (c.value, c.config_source, c.read_only) for c in broker.configs}
    assert configs["log.retention.ms"] == ("1000", 3, False)                 # DYNAMIC_DEFAULT_BROKER_CONFIG
    assert configs["max.connections"] == ("50", 2, False)                    # DYNAMIC_BROKER_CONFIG
    assert configs["leader.replication.throttled.rate"] == ("100", 2, True)   # not in AllDynamicConfigs
    assert configs["num.partitions"] == ("4", 4, True)                       # static, read-only
    assert "num.io.threads" not in configs                                   # not applied by this broker
    topic_configs = {c.name: (c.value, c.config_source) for c in topic.configs}
    assert topic_configs["retention.ms"] == ("1000", 1)                      # the topic's own override
    assert topic_configs["segment.ms"] == ("5000", 3)                        # the cluster-wide log.roll.ms
    assert topic_configs["segment.bytes"][1] == 5


def test_describe_configs_lists_synonyms_in_precedence_order_when_asked(services):
    from kio.schema.describe_configs.v4.request import DescribeConfigsResource

    from kafkactl.cluster.broker.dynamic_config import resolve

    services.config, _ = from_properties({"broker.id": "3", "zookeeper.connect": "zk:2181",
                                          "log.dirs": services.ssd, "log.retention.ms": "3600000"})
    services.dynamic, _ = resolve(services.config, {"log.retention.ms": "1000", "log.roll.ms": "5000"},
                                  {"log.retention.ms": "2000", "leader.replication.throttled.rate": "100"})
    resource = DescribeConfigsResource(resource_type=4, resource_name="3", configuration_keys=None)

    def synonyms(include):
        [broker] = roundtrip(32, 4, describe_configs.handle, services, resources=(resource,),
                             include_synonyms=include).results
        return {c.name: (c.value, c.config_source, [(s.name, s.value, s.source) for s in c.synonyms])
                for c in broker.configs}

    found = synonyms(True)
    # The broker's own, the cluster-wide default, server.properties, the built-in default.
    assert found["log.retention.ms"] == ("2000", 2, [
        ("log.retention.ms", "2000", 2), ("log.retention.ms", "1000", 3), ("log.retention.ms", "3600000", 4),
        ("log.retention.ms", "604800000", 5)])
    assert found["log.roll.ms"][2][0] == ("log.roll.ms", "5000", 3) and found["log.roll.ms"][2][-1][2] == 5
    assert found["num.partitions"] == ("1", 5, [("num.partitions", "1", 5)])     # only the built-in default
    assert found["leader.replication.throttled.rate"][2] == [("leader.replication.throttled.rate", "100", 2)]
    assert all(entry[2] == [] for entry in synonyms(False).values())              # not asked: none, as Kafka


@pytest.mark.parametrize("version", [v for v in versions(apis.DESCRIBE_CONFIGS) if v >= 1])
def test_topic_synonyms_are_the_override_then_the_broker_keys_levels(services, version):
    from kafkactl.cluster.broker.dynamic_config import resolve
    from kafkactl.cluster.protocol.build import nested

    services.config, _ = from_properties({"broker.id": "3", "zookeeper.connect": "zk:2181",
                                          "log.dirs": services.ssd, "log.retention.ms": "3600000",
                                          "log.segment.bytes": "1048576"})
    services.dynamic, _ = resolve(services.config, {"log.retention.ms": "1000", "log.segment.delete.delay.ms": "62000"},
                                  {"log.retention.ms": "2000"})
    services.replica_manager.topic_configs = {"t": {"retention.ms": "500", "compression.type": "lz4"}}
    resource = nested(request_class(32, version), "DescribeConfigsResource", resource_type=2, resource_name="t",
                      configuration_keys=None)

    def described(include):
        [topic] = roundtrip(32, version, describe_configs.handle, services, resources=(resource,),
                            include_synonyms=include).results
        return {c.name: (c.value, c.config_source, [(s.name, s.value, s.source) for s in c.synonyms])
                for c in topic.configs}

    found = described(True)
    # Kafka's order: the topic's own (1), the broker's own (2), the cluster default (3),
    # server.properties (4), the built-in default (5), under the broker key's name.
    assert found["retention.ms"] == ("500", 1, [
        ("retention.ms", "500", 1), ("log.retention.ms", "2000", 2), ("log.retention.ms", "1000", 3),
        ("log.retention.ms", "3600000", 4), ("log.retention.ms", "604800000", 5)])
    assert found["file.delete.delay.ms"] == ("62000", 3, [
        ("log.segment.delete.delay.ms", "62000", 3), ("log.segment.delete.delay.ms", "60000", 5)])
    assert found["segment.bytes"] == ("1048576", 4, [
        ("log.segment.bytes", "1048576", 4), ("log.segment.bytes", "1073741824", 5)])
    assert found["cleanup.policy"] == ("delete", 5, [("log.cleanup.policy", "delete", 5)])
    assert found["min.insync.replicas"] == ("1", 5, [("min.insync.replicas", "1", 5)])
    assert found["max.message.bytes"][2] == [("message.max.bytes", "1048588", 5)]
    # A broker key this broker does not read: the override alone.
    assert found["compression.type"] == ("lz4", 1, [("compression.type", "lz4", 1)])
    for name, (value, source, synonyms) in found.items():    # the entry is its first level
        assert (value, source) == synonyms[0][1:], name
    # Not asked: the same values and sources, no synonyms (as Kafka).
    assert described(False) == {name: (value, source, []) for name, (value, source, _) in found.items()}


def test_topic_entries_for_a_new_topic_take_their_source_from_the_broker_levels(services):
    from kafkactl.cluster.broker.dynamic_config import resolve

    services.config, _ = from_properties({"broker.id": "3", "zookeeper.connect": "zk:2181",
                                          "log.dirs": services.ssd, "log.cleanup.policy": "compact"})
    services.dynamic, _ = resolve(services.config, {}, {"min.insync.replicas": "2"})
    entries = {e[0]: e[1:3] for e in describe_configs.topic_entries_for(services, {"segment.ms": "5000"})}
    assert entries["cleanup.policy"] == ("compact", 4)          # STATIC_BROKER_CONFIG, no longer DEFAULT
    assert entries["min.insync.replicas"] == ("2", 2)           # the broker's own dynamic value
    assert entries["segment.ms"] == ("5000", 1)
    assert entries["retention.bytes"] == ("-1", 5)
