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
    (["--broker", "1", "--add", "log.retention.ms=1"], "log.retention.ms: not a dynamic broker config"),
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
        {"key": "follower.replication.throttled.rate", "value": "500", "source": "cluster default"},
        {"key": "leader.replication.throttled.rate", "value": "1000", "source": "broker 2"}]


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
