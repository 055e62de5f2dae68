"""`kafkactl topics` against the in-memory ZooKeeper: arguments, output, what is written."""

import json

from kafkactl.cli.main import main


def brokers(zookeeper, ids=(1, 2, 3)):
    for broker_id in ids:
        zookeeper.create(f"/brokers/ids/{broker_id}", json.dumps({
            "version": 5, "host": "h", "port": 9000 + broker_id, "jmx_port": -1, "timestamp": "1",
            "endpoints": [f"PLAINTEXT://h:{9000 + broker_id}"], "listener_security_protocol_map":
            {"PLAINTEXT": "PLAINTEXT"}, "rack": None, "features": {}}).encode(), makepath=True)


def test_create_then_describe_as_json(fake_zookeeper, capsys):
    brokers(fake_zookeeper)
    assert main(["topics", "create", "t", "--partitions", "4", "--replication-factor", "3"]) == 0
    assignment = json.loads(fake_zookeeper.data("/brokers/topics/t"))["partitions"]
    assert sorted(assignment) == ["0", "1", "2", "3"]
    assert all(sorted(replicas) == [1, 2, 3] for replicas in assignment.values())
    capsys.readouterr()
    assert main(["topics", "describe", "t", "-o", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["topic"], r["partition"], r["leader"]) for r in rows] == [("t", p, -1) for p in range(4)]


def test_a_replication_factor_above_the_brokers_is_refused_and_nothing_is_written(fake_zookeeper, capsys):
    brokers(fake_zookeeper, ids=(1, 2))
    before = fake_zookeeper.snapshot()
    assert main(["topics", "create", "t", "--partitions", "1", "--replication-factor", "3"]) == 2
    assert "--replication-factor" in capsys.readouterr().err
    assert fake_zookeeper.snapshot() == before
