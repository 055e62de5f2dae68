"""`kafkactl configs` against the in-memory ZooKeeper: validation before writing, Kafka's znodes."""

import json

import pytest

from kafkactl.cli.main import main


@pytest.fixture
def topic(fake_zookeeper):
    fake_zookeeper.create("/brokers/topics/t", b'{"version":1,"partitions":{"0":[1]}}', makepath=True)
    fake_zookeeper.ensure_path("/config/changes")
    return "t"


def changes(zookeeper):
    return [json.loads(zookeeper.data(f"/config/changes/{c}")) for c in zookeeper.get_children("/config/changes")]


def one_line(err):
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kafkactl: error: "), err
    return lines[0]


def test_topic_alter_then_describe(fake_zookeeper, topic, capsys):
    assert main(["configs", "alter", "--topic", "t", "--add", "retention.ms=60000",
                 "--add", "cleanup.policy=compact,delete"]) == 0
    assert json.loads(fake_zookeeper.data("/config/topics/t")) == {
        "version": 1, "config": {"retention.ms": "60000", "cleanup.policy": "compact,delete"}}
    assert changes(fake_zookeeper) == [{"version": 2, "entity_path": "topics/t"}]
    capsys.readouterr()
    assert main(["configs", "describe", "--topic", "t", "-o", "json"]) == 0
    rows = {r["key"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["retention.ms"] == {"key": "retention.ms", "value": "60000", "source": "override"}
    assert rows["segment.bytes"] == {"key": "segment.bytes", "value": str(1024 ** 3), "source": "default"}
    assert main(["configs", "alter", "--topic", "t", "--delete", "retention.ms"]) == 0
    assert json.loads(fake_zookeeper.data("/config/topics/t"))["config"] == {"cleanup.policy": "compact,delete"}
    assert len(changes(fake_zookeeper)) == 2


@pytest.mark.parametrize("args, fragment", [
    (["--topic", "t", "--add", "retention.mss=1"], "retention.mss: unknown topic config"),
    (["--topic", "t", "--add", "min.insync.replicas=0"], "min.insync.replicas: invalid value '0'"),
    (["--topic", "t", "--add", "retention.ms=1", "--add", "preallocate=maybe"], "preallocate: invalid value"),
    (["--topic", "t", "--delete", "retention.ms"], "retention.ms: not set on topic 't'"),
    (["--topic", "t", "--add", "retention.ms"], "expected KEY=VALUE"),
    (["--topic", "x", "--add", "retention.ms=1"], "--topic: topic 'x' does not exist"),
    (["--broker", "1", "--add", "log.retention.hours=1"], "log.retention.hours is not dynamically updatable"),
    (["--broker", "1", "--add", "leader.replication.throttled.rate=fast"],
     "leader.replication.throttled.rate: invalid value 'fast' (not an integer)"),
    (["--broker-default", "--add", "follower.replication.throttled.rate=-5"], "follower.replication.throttled.rate"),
    (["--topic", "t", "--broker", "1", "--add", "retention.ms=1"], "choose exactly one"),
    (["--topic", "t"], "nothing to change"),
])
def test_bad_input_exits_2_naming_the_key_and_writes_nothing(fake_zookeeper, topic, capsys, args, fragment):
    fake_zookeeper.create("/config/topics/t", b'{"version":1,"config":{"segment.ms":"1000"}}', makepath=True)
    before = fake_zookeeper.snapshot()
    assert main(["configs", "alter", *args]) == 2
    assert fragment in one_line(capsys.readouterr().err)
    assert fake_zookeeper.snapshot() == before


def test_broker_and_default_throttle_rates(fake_zookeeper, capsys):
    assert main(["configs", "alter", "--broker", "2", "--add", "leader.replication.throttled.rate=1000"]) == 0
    assert main(["configs", "alter", "--broker-default", "--add", "follower.replication.throttled.rate=500"]) == 0
    assert json.loads(fake_zookeeper.data("/config/brokers/2"))["config"] == {"leader.replication.throttled.rate": "1000"}
    assert json.loads(fake_zookeeper.data("/config/brokers/<default>"))["config"] == {
        "follower.replication.throttled.rate": "500"}
    assert [c["entity_path"] for c in changes(fake_zookeeper)] == ["brokers/2", "brokers/<default>"]
    capsys.readouterr()
    assert main(["configs", "describe", "--broker", "2", "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == [
        {"key": "follower.replication.throttled.rate", "value": "500", "source": "cluster default",
         "applied": True, "note": ""},
        {"key": "leader.replication.throttled.rate", "value": "1000", "source": "broker 2",
         "applied": True, "note": ""}]


def test_a_concurrent_change_loses_nothing(fake_zookeeper, topic, capsys, monkeypatch):
    fake_zookeeper.create("/config/topics/t", b'{"version":1,"config":{}}', makepath=True)
    from kafkactl.cluster.admin import configs

    real_read = configs.read_configs

    def read_then_someone_writes(client, entities, timeout_s):
        stored = real_read(client, entities, timeout_s)
        fake_zookeeper.set("/config/topics/t", b'{"version":1,"config":{"segment.ms":"5"}}')
        return stored

    monkeypatch.setattr(configs, "read_configs", read_then_someone_writes)
    assert main(["configs", "alter", "--topic", "t", "--add", "retention.ms=1"]) == 1
    assert "nothing was written" in one_line(capsys.readouterr().err)
    assert json.loads(fake_zookeeper.data("/config/topics/t"))["config"] == {"segment.ms": "5"}
    assert changes(fake_zookeeper) == []


# --- broker configs: every one Kafka 2.8 updates dynamically, checked as Kafka checks them

@pytest.mark.parametrize("args, message", [
    (["--broker", "1", "--add", "log.retention.msec=1000"],
     "--add log.retention.msec: unknown broker config; did you mean log.retention.ms?"),
    (["--broker", "1", "--add", "broker.id=5"],
     "--add broker.id is not dynamically updatable: set it in the broker's server.properties and restart the broker"),
    (["--broker", "1", "--add", "num.io.threads=eight"], "--add num.io.threads: invalid value 'eight' (not an integer)"),
    (["--broker-default", "--add", "log.retention.ms=0"],
     "--add log.retention.ms: invalid value '0' (must be -1 for no limit, or >= 1)"),
    (["--broker-default", "--add", "min.insync.replicas=2", "--add", "advertised.listeners=PLAINTEXT://h:9092"],
     "--add advertised.listeners: a per-broker config: Kafka refuses it cluster-wide, give --broker ID"),
    (["--broker", "1", "--add", "ssl.truststore.location=/ts.jks"],
     "--add ssl.truststore.location: Kafka updates it only per listener: use "
     "listener.name.<listener>.ssl.truststore.location with --broker ID"),
    (["--broker", "1", "--add", "listener.name.ssl.ssl.key.password=secret"],
     "--add listener.name.ssl.ssl.key.password: a password config: Kafka stores these encrypted with "
     "password.encoder.secret, which kafkactl does not do (use kafka-configs.sh)"),
])
def test_a_refused_broker_config_is_one_line_and_writes_nothing(fake_zookeeper, capsys, args, message):
    fake_zookeeper.create("/config/brokers/1", b'{"version":1,"config":{"log.retention.ms":"5000"}}', makepath=True)
    fake_zookeeper.ensure_path("/config/changes")
    before = fake_zookeeper.snapshot()
    assert main(["configs", "alter", *args]) == 2
    assert one_line(capsys.readouterr().err) == f"kafkactl: error: {message}"
    assert fake_zookeeper.snapshot() == before


def test_broker_configs_kafka_accepts_are_written_and_unapplied_ones_said_so(fake_zookeeper, capsys):
    assert main(["configs", "alter", "--broker-default", "--add", "log.retention.ms=86400000",
                 "--add", "num.io.threads=16", "--add", "max.connections=1000"]) == 0
    out = capsys.readouterr().out
    assert "note: stored for Kafka brokers, not applied by kafkactl's broker: num.io.threads" in out
    assert main(["configs", "alter", "--broker", "2", "--add", "listeners=PLAINTEXT://:9092",
                 "--add", "listener.name.plaintext.max.connections=50", "--add", "max.connections=10",
                 "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "entity": "brokers/2",
        "config": {"listeners": "PLAINTEXT://:9092", "listener.name.plaintext.max.connections": "50",
                   "max.connections": "10"},
        "not_applied": ["listener.name.plaintext.max.connections", "listeners"]}
    assert json.loads(fake_zookeeper.data("/config/brokers/<default>"))["config"] == {
        "log.retention.ms": "86400000", "num.io.threads": "16", "max.connections": "1000"}
    assert [c["entity_path"] for c in changes(fake_zookeeper)] == ["brokers/<default>", "brokers/2"]


def test_describe_marks_what_brokers_do_not_apply_or_ignore(fake_zookeeper, capsys):
    # Written by another tool: a per-broker key at the cluster-wide level, which brokers ignore.
    fake_zookeeper.create("/config/brokers/<default>", json.dumps({"version": 1, "config": {
        "max.connections": "1000", "listeners": "PLAINTEXT://:9093", "num.io.threads": "16"}}).encode(),
        makepath=True)
    fake_zookeeper.create("/config/brokers/2", b'{"version":1,"config":{"max.connections":"10"}}')
    assert main(["configs", "describe", "--broker", "2", "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == [
        {"key": "listeners", "value": "PLAINTEXT://:9093", "source": "cluster default", "applied": False,
         "note": "ignored by brokers: listeners: a per-broker config: Kafka refuses it cluster-wide, "
                 "give --broker ID"},
        {"key": "max.connections", "value": "10", "source": "broker 2", "applied": True, "note": ""},
        {"key": "num.io.threads", "value": "16", "source": "cluster default", "applied": False,
         "note": "stored for Kafka brokers; not applied by kafkactl's broker"}]
    assert main(["configs", "describe", "--broker", "2"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == ["KEY", "VALUE", "SOURCE", "NOTE"]
    assert any(line.startswith("num.io.threads") and line.endswith("not applied by kafkactl's broker")
               for line in table)


def test_a_bad_broker_value_written_by_someone_else_can_still_be_deleted(fake_zookeeper, capsys):
    fake_zookeeper.create("/config/brokers/1", b'{"version":1,"config":{"min.insync.replicas":"zero"}}',
                          makepath=True)
    fake_zookeeper.ensure_path("/config/changes")
    assert main(["configs", "alter", "--broker", "1", "--delete", "min.insync.replicas"]) == 0
    assert json.loads(fake_zookeeper.data("/config/brokers/1"))["config"] == {}
