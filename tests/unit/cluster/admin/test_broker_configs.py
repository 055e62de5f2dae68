"""Kafka 2.8's dynamic broker configs as kafkactl checks them (broker_configs.py):
every refusal is one line that starts with the key."""

import dataclasses
import re
from pathlib import Path

import pytest

from kafkactl.cluster.admin import broker_configs
from kafkactl.cluster.admin.broker_configs import BrokerConfigError, check, describe_key, validate
from kafkactl.cluster.broker import dynamic_config
from kafkactl.cluster.broker.config import BrokerConfig

REPO = Path(__file__).resolve().parents[4]


@pytest.mark.parametrize("key, value, per_broker, message", [
    # unknown, with a suggestion; a topic key names its broker-level counterpart
    ("log.retention.msec", "1", True, "log.retention.msec: unknown broker config; did you mean log.retention.ms?"),
    ("num.io.thread", "8", False, "num.io.thread: unknown broker config; did you mean num.io.threads?"),
    ("frobnicate", "1", True, "frobnicate: unknown broker config"),
    ("retention.ms", "1000", True, "retention.ms: a topic config (the broker-level default is log.retention.ms)"),
    # read-only (static) configs, Kafka's and this broker's own
    ("broker.id", "2", True, "broker.id is not dynamically updatable: set it in the broker's server.properties "
                             "and restart the broker"),
    ("log.dirs", "/data", True, "log.dirs is not dynamically updatable: set it in the broker's server.properties "
                                "and restart the broker"),
    ("log.retention.hours", "1", False, "log.retention.hours is not dynamically updatable: set it in the broker's "
                                        "server.properties and restart the broker"),
    ("log.dir.media", "/d:ssd", True, "log.dir.media is not dynamically updatable: set it in the broker's "
                                      "server.properties and restart the broker"),
    # types
    ("num.io.threads", "many", True, "num.io.threads: invalid value 'many' (not an integer)"),
    ("message.max.bytes", "1_000", True, "message.max.bytes: invalid value '1_000' (not an integer)"),
    ("max.connections", "3000000000", False, "max.connections: invalid value '3000000000' (not a 32-bit integer)"),
    ("sasl.login.refresh.buffer.seconds", "40000", True,
     "sasl.login.refresh.buffer.seconds: invalid value '40000' (not a 16-bit integer)"),
    ("log.cleaner.io.buffer.load.factor", "high", False,
     "log.cleaner.io.buffer.load.factor: invalid value 'high' (not a number)"),
    ("log.preallocate", "yes", False, "log.preallocate: invalid value 'yes' (expected true or false)"),
    ("metric.reporters", "com.example.A,not a class", False,
     "metric.reporters: invalid value 'com.example.A,not a class' (not a Java class name)"),
    ("listeners", "PLAINTEXT:9092", True, "listeners: invalid value 'PLAINTEXT:9092' "
                                          "('PLAINTEXT:9092' is not NAME://host:port)"),
    ("max.connections.per.ip.overrides", "hostA=5", False,
     "max.connections.per.ip.overrides: invalid value 'hostA=5' ('hostA=5' is not host:count)"),
    # ranges
    ("min.insync.replicas", "0", False, "min.insync.replicas: invalid value '0' (must be >= 1)"),
    ("log.segment.bytes", "13", False, "log.segment.bytes: invalid value '13' (must be >= 14)"),
    ("log.retention.ms", "0", False, "log.retention.ms: invalid value '0' (must be -1 for no limit, or >= 1)"),
    ("log.retention.ms", "-2", True, "log.retention.ms: invalid value '-2' (must be -1 for no limit, or >= 1)"),
    ("num.network.threads", "0", True, "num.network.threads: invalid value '0' (must be >= 1)"),
    ("leader.replication.throttled.rate", "-5", False,
     "leader.replication.throttled.rate: invalid value '-5' (must be >= 0)"),
    ("log.cleaner.min.cleanable.ratio", "1.5", False,
     "log.cleaner.min.cleanable.ratio: invalid value '1.5' (must be between 0 and 1)"),
    ("compression.type", "lz5", False, "compression.type: invalid value 'lz5' "
                                       "(expected one of uncompressed, zstd, lz4, snappy, gzip, producer)"),
    ("log.message.timestamp.type", "createtime", False, "log.message.timestamp.type: invalid value 'createtime' "
                                                        "(expected one of CreateTime, LogAppendTime)"),
    ("log.cleanup.policy", "delete,keep", False,
     "log.cleanup.policy: invalid value 'delete,keep' (expected a list of compact, delete)"),
    ("ssl.client.auth", "always", True,
     "ssl.client.auth: invalid value 'always' (expected one of required, requested, none)"),
    ("listener.name.plaintext.max.connections", "0", False,
     "listener.name.plaintext.max.connections: invalid value '0' (must be >= 1)"),
    # scope: per-broker keys refused cluster-wide, as Kafka refuses them
    ("listeners", "PLAINTEXT://:9093", False,
     "listeners: a per-broker config: Kafka refuses it cluster-wide, give --broker ID"),
    ("ssl.cipher.suites", "TLS_AES_128_GCM_SHA256", False,
     "ssl.cipher.suites: a per-broker config: Kafka refuses it cluster-wide, give --broker ID"),
    ("listener.name.ssl.ssl.keystore.location", "/ks.jks", False,
     "listener.name.ssl.ssl.keystore.location: a per-broker config: Kafka refuses it cluster-wide, give --broker ID"),
    # the stores only per listener, in lower case; passwords never (kafkactl does not encrypt)
    ("ssl.keystore.location", "/ks.jks", True, "ssl.keystore.location: Kafka updates it only per listener: "
                                               "use listener.name.<listener>.ssl.keystore.location with --broker ID"),
    ("listener.name.SSL.ssl.keystore.location", "/ks.jks", True,
     "listener.name.SSL.ssl.keystore.location: Kafka reads listener configs under the listener name in lower "
     "case (listener.name.ssl.ssl.keystore.location)"),
    ("listener.name.ssl.log.retention.ms", "1", True,
     "listener.name.ssl.log.retention.ms: not a listener config Kafka updates dynamically (per listener: "
     "the SSL and SASL configs, max.connections, max.connection.creation.rate)"),
    ("listener.name.ssl.ssl.keystore.password", "secret", True,
     "listener.name.ssl.ssl.keystore.password: a password config: Kafka stores these encrypted with "
     "password.encoder.secret, which kafkactl does not do (use kafka-configs.sh)"),
    ("sasl.jaas.config", "x required;", True, "sasl.jaas.config: a password config: Kafka stores these encrypted "
                                              "with password.encoder.secret, which kafkactl does not do "
                                              "(use kafka-configs.sh)"),
])
def test_refusals_name_the_key_in_one_line(key, value, per_broker, message):
    with pytest.raises(BrokerConfigError) as raised:
        check(key, value, per_broker)
    assert str(raised.value) == message
    assert "\n" not in message


@pytest.mark.parametrize("key, value, per_broker, parsed", [
    ("log.retention.ms", "-1", False, -1),
    ("log.retention.ms", " 60000 ", True, 60000),
    ("log.retention.bytes", "-5", False, -5),                 # any long: negative is no limit
    ("min.insync.replicas", "2", False, 2),
    ("unclean.leader.election.enable", "TRUE", False, True),
    ("log.cleanup.policy", "compact, delete", False, ["compact", "delete"]),
    ("log.cleaner.min.cleanable.ratio", "0.25", False, 0.25),
    ("max.connections.per.ip.overrides", "127.0.0.2:3,hostA:10", False, {"127.0.0.2": 3, "hostA": 10}),
    ("max.connections.per.ip.overrides", "", False, {}),
    ("num.replica.fetchers", "4", False, 4),
    ("metric.reporters", "com.example.Reporter", False, ["com.example.Reporter"]),
    ("listeners", "PLAINTEXT://:9092,SSL://:9093", True, None),
    ("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,EXTERNAL:SASL_SSL", True,
     {"PLAINTEXT": "PLAINTEXT", "EXTERNAL": "SASL_SSL"}),
    ("listener.name.plaintext.max.connections", "100", False, 100),     # the listener limits may be cluster-wide
    ("listener.name.external.ssl.keystore.location", "/ks.jks", True, "/ks.jks"),
    ("listener.name.sasl_ssl.plain.sasl.login.class", "com.example.Login", True, "com.example.Login"),
    ("sasl.login.refresh.min.period.seconds", "60", True, 60),
    ("replica.alter.log.dirs.io.max.bytes.per.second", "0", False, 0),
])
def test_what_kafka_accepts_is_accepted(key, value, per_broker, parsed):
    value = check(key, value, per_broker)
    if parsed is not None:
        assert value == parsed


def test_validate_names_the_first_bad_key_of_several():
    assert validate({"log.retention.ms": "1000", "num.io.threads": "16"}, per_broker=False) == {
        "log.retention.ms": 1000, "num.io.threads": 16}
    with pytest.raises(BrokerConfigError, match=r"^broker\.id is not dynamically updatable"):
        validate({"log.retention.ms": "1000", "broker.id": "3"}, per_broker=True)


# --- the table against Kafka 2.8's facts

def test_per_broker_keys_are_kafkas_listener_and_security_configs():
    per_broker = {k for k, spec in broker_configs.KEYS.items() if spec.per_broker}
    assert {"listeners", "advertised.listeners", "listener.security.protocol.map", "principal.builder.class",
            "ssl.client.auth", "sasl.enabled.mechanisms", "sasl.jaas.config"} <= per_broker
    assert all(k.startswith(("ssl.", "sasl.", "listener", "advertised.", "principal.")) for k in per_broker)
    # DynamicBrokerConfig's ClusterLevelListenerConfigs and everything else: cluster-wide too
    for key in ("max.connections", "max.connection.creation.rate", "max.connections.per.ip", "num.io.threads",
                "log.retention.ms", "message.max.bytes", "leader.replication.throttled.rate"):
        assert not broker_configs.KEYS[key].per_broker


def test_only_the_keystore_and_truststore_configs_need_a_listener_prefix():
    assert {k for k, spec in broker_configs.KEYS.items() if spec.listener_only} == {
        "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
        "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
        "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.truststore.certificates"}


def test_dynamic_and_read_only_keys_do_not_overlap_and_count_as_in_kafka_2_8():
    assert not broker_configs.STATIC_KEYS & broker_configs.KEYS.keys()
    # 76 KafkaConfig keys are reconfigurable in 2.8, plus DynamicConfig.Broker's three throttles.
    assert len(broker_configs.KEYS) == 79
    # The log defaults: the topic configs' broker names, without log.message.format.version.
    log_defaults = {k for k, spec in broker_configs.KEYS.items() if spec.topic_key}
    assert len(log_defaults) == 23 and "log.message.format.version" in broker_configs.STATIC_KEYS


def test_applied_keys_are_exactly_what_the_broker_applies():
    applied = {k for k, spec in broker_configs.KEYS.items() if spec.applied}
    assert applied == dynamic_config.APPLIED_KEYS
    fields = {f.name for f in dataclasses.fields(BrokerConfig)}
    assert set(dynamic_config.APPLIED_ATTRIBUTES.values()) <= fields


@pytest.mark.parametrize("key, value, per_broker, expected", [
    ("log.retention.ms", "1000", False, (True, "")),
    ("num.io.threads", "16", True, (False, "stored for Kafka brokers; not applied by kafkactl's broker")),
    ("unclean.leader.election.enable", "true", False,
     (False, "stored for Kafka brokers; not applied by kafkactl's broker")),
    ("listeners", "PLAINTEXT://:9093", False,
     (False, "ignored by brokers: listeners: a per-broker config: Kafka refuses it cluster-wide, give --broker ID")),
    ("min.insync.replicas", "zero", True,
     (False, "ignored by brokers: min.insync.replicas: invalid value 'zero' (not an integer)")),
    # Written by Kafka's own tool, encrypted: a broker reads it (not applied here).
    ("listener.name.ssl.ssl.keystore.password", "encryptedPassword:x", True,
     (False, "stored for Kafka brokers; not applied by kafkactl's broker")),
])
def test_describe_says_what_brokers_do_with_a_stored_key(key, value, per_broker, expected):
    assert describe_key(key, value, per_broker) == expected


def test_the_operator_doc_lists_every_key_with_its_scope_and_whether_applied():
    doc = (REPO / "docs" / "broker-configs.md").read_text()
    rows = dict(re.findall(r"^\| `([a-z0-9.]+)` \|(.*)$", doc, re.MULTILINE))
    assert set(rows) == set(broker_configs.KEYS), "docs/broker-configs.md: keys missing or extra"
    for key, spec in broker_configs.KEYS.items():
        cells = [c.strip() for c in rows[key].split("|")]
        scope = "per-broker, listener prefix" if spec.listener_only else (
            "per-broker" if spec.per_broker else "cluster-wide")
        assert cells[1] == scope, key
        assert cells[3] == ("yes" if spec.applied else "no"), key
