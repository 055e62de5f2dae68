"""`kafkactl topics alter --replication-factor` as a subprocess against a real
local cluster (ZooKeeper + 3 real brokers): up from 1 to 3 with a throttle,
then down to 2, the records readable throughout and the leaders in place."""

import json

import pytest

from support.local_cluster import cluster_up, consume, produce, zk_tree
from support.waiting import wait_for

RECORDS = [f"k{i}:message-{i}" for i in range(30)]


@pytest.fixture(scope="module")
def up(tmp_path_factory):
    with cluster_up(tmp_path_factory, 3) as (cli, _, status):
        yield cli, status


def describe(cli, topic):
    return {r["partition"]: r for r in json.loads(cli.ok("topics", "describe", topic, "-o", "json").stdout)}


def overrides(cli, *entity):
    rows = json.loads(cli.ok("configs", "describe", *entity, "-o", "json").stdout)
    return {r["key"]: r["value"] for r in rows if r["source"] != "default"}


def fully_replicated(cli, topic, factor):
    rows = describe(cli, topic)
    done = all(len(r["replicas"]) == factor and sorted(r["isr"]) == sorted(r["replicas"]) for r in rows.values())
    return rows if done else None


def test_replication_factor_up_to_3_then_down_to_2(up, tmp_path):
    cli, status = up
    bootstrap = status["bootstrap_servers"]
    cli.ok("topics", "create", "grow", "--partitions", "3", "--replication-factor", "1")
    produce(bootstrap, "grow", RECORDS)
    before = describe(cli, "grow")

    done = cli.ok("topics", "alter", "grow", "--replication-factor", "3", "--yes", "--wait",
                  "--throttle", "50000000", "--rollback-file", str(tmp_path / "rollback.json"), "-o", "json")
    result = json.loads(done.stdout)
    assert [p["status"] for p in result["partitions"]] == ["complete"] * 3
    assert "reassigning" in done.stderr and str(tmp_path / "rollback.json") in done.stderr
    rollback = json.loads((tmp_path / "rollback.json").read_text())
    assert {p["partition"]: p["replicas"] for p in rollback["partitions"]} == \
        {p: r["replicas"] for p, r in before.items()}
    # Every partition on all three brokers, every replica in the ISR, and no
    # leadership moved: the old replica is still first, and still leads.
    after = wait_for(lambda: fully_replicated(cli, "grow", 3), 60, "3 replicas in every ISR")
    for partition, row in after.items():
        assert row["replicas"][0] == before[partition]["replicas"][0]
        assert row["leader"] == before[partition]["leader"]
    # The throttles were removed at the end, as `reassign verify` would.
    assert "topics/grow" in result["throttles_removed"]
    assert overrides(cli, "--topic", "grow") == {}
    assert all(overrides(cli, "--broker", str(b)) == {} for b in (1, 2, 3))
    assert consume(bootstrap, "grow") == sorted(RECORDS)

    done = cli.ok("topics", "alter", "grow", "-r", "2", "--yes", "--wait", "-o", "json")
    assert [p["status"] for p in json.loads(done.stdout)["partitions"]] == ["complete"] * 3
    shrunk = wait_for(lambda: fully_replicated(cli, "grow", 2), 60, "2 replicas in every ISR")
    for partition, row in shrunk.items():
        assert row["replicas"][0] == before[partition]["replicas"][0]
        assert row["replicas"] == [b for b in after[partition]["replicas"] if b in row["replicas"]]  # order kept
    assert consume(bootstrap, "grow") == sorted(RECORDS)
    assert "no reassignment is running" in cli.ok("reassign", "status").stdout


def test_refusals_leave_zookeeper_as_it_was(up, tmp_path):
    cli, status = up
    cli.ok("topics", "create", "kept", "--partitions", "2", "--replication-factor", "2")
    before = zk_tree(status["zookeeper"])
    for args, code, message in [
        (["-r", "4", "--yes"], 2, "replication factor: 4 larger than available brokers: 3"),
        (["-r", "3", "-p", "4"], 2, "one change at a time"),
        (["-r", "3", "--out", str(tmp_path / "p.json"), "--throttle", "10"], 2, "with --out nothing is started"),
    ]:
        done = cli("topics", "alter", "kept", *args)
        assert done.returncode == code, done.stderr
        assert done.stderr.strip().splitlines()[-1].startswith("kafkactl: error: ")
        assert message in done.stderr
    dry = json.loads(cli.ok("topics", "alter", "kept", "-r", "3", "--dry-run", "-o", "json").stdout)
    assert all(len(p["replicas"]) == 3 for p in dry["proposed"]["partitions"])
    assert zk_tree(status["zookeeper"]) == before
