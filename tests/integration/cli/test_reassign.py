"""`kafkactl reassign` as a subprocess against a real local cluster (ZooKeeper + 4 brokers).

One cluster for the module: each test uses its own topics.
"""

import json

import pytest

from support.local_cluster import cluster_up, consume, produce as produce_lines, zk_tree


@pytest.fixture(scope="module")
def up(tmp_path_factory):
    with cluster_up(tmp_path_factory, 4) as (cli, _, status):
        yield cli, status


def produce(bootstrap, topic, count):
    produce_lines(bootstrap, topic, [f"k{i}:message-{i}" for i in range(count)])


def assignment(cli, topic):
    rows = json.loads(cli.ok("topics", "describe", topic, "-o", "json").stdout)
    return {r["partition"]: r["replicas"] for r in rows}


def configs(cli, *entity):
    rows = json.loads(cli.ok("configs", "describe", *entity, "-o", "json").stdout)
    return {r["key"]: r["value"] for r in rows if r["source"] != "default"}


def test_throttled_reassignment_with_wait_then_verify_end_to_end(up, tmp_path):
    cli, status = up
    bootstrap = status["bootstrap_servers"]
    cli.ok("topics", "create", "moved", "--partitions", "3", "--replication-factor", "2")
    produce(bootstrap, "moved", 30)

    generated = json.loads(cli.ok("reassign", "generate", "--topics", "moved", "--brokers", "3,4", "-o", "json").stdout)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(generated["proposed"]))
    target = {p["partition"]: p["replicas"] for p in generated["proposed"]["partitions"]}
    before = assignment(cli, "moved")

    done = cli.ok("reassign", "execute", "--plan", str(plan), "--throttle", "50000000", "--wait",
                  "--rollback-file", str(tmp_path / "rollback.json"), "-o", "json")
    result = json.loads(done.stdout)
    assert [p["status"] for p in result["partitions"]] == ["complete"] * 3
    assert "reassigning" in done.stderr  # the progress bar's label, on stderr
    assert assignment(cli, "moved") == target
    rollback = json.loads((tmp_path / "rollback.json").read_text())
    assert {p["partition"]: p["replicas"] for p in rollback["partitions"]} == before

    # The throttles stay until verify sees every partition complete.
    moving = {p for p in target if set(target[p]) != set(before[p])}
    topic_config = configs(cli, "--topic", "moved")
    assert topic_config["follower.replication.throttled.replicas"].split(",") == [
        f"{p}:{b}" for p in sorted(moving) for b in target[p] if b not in before[p]]
    assert configs(cli, "--broker", "4")["leader.replication.throttled.rate"] == "50000000"

    verified = json.loads(cli.ok("reassign", "verify", "--plan", str(plan), "-o", "json").stdout)
    assert [p["status"] for p in verified["partitions"]] == ["complete"] * 3
    assert "topics/moved" in verified["throttles_removed"]
    assert configs(cli, "--topic", "moved") == {}
    assert all(configs(cli, "--broker", str(b)) == {} for b in (1, 2, 3, 4))
    assert consume(bootstrap, "moved") == sorted(f"k{i}:message-{i}" for i in range(30))


def test_a_kafka_tool_plan_is_accepted_as_is(up, tmp_path):
    cli, status = up
    cli.ok("topics", "create", "kafka-plan", "--partitions", "2", "--replication-factor", "1")
    # As kafka-reassign-partitions.sh writes it: its own key order, one entry
    # with log_dirs and one without, pretty-printed.
    plan = tmp_path / "kafka.json"
    plan.write_text('{\n "partitions": [\n  {"replicas": [4, 1], "topic": "kafka-plan", "partition": 0,\n'
                    '   "log_dirs": ["any", "any"]},\n  {"partition": 1, "topic": "kafka-plan", "replicas": [2]}\n'
                    ' ],\n "version": 1\n}\n')
    cli.ok("reassign", "execute", "--plan", str(plan), "--wait", "--rollback-file", str(tmp_path / "rb.json"))
    assert assignment(cli, "kafka-plan") == {0: [4, 1], 1: [2]}
    assert cli("reassign", "verify", "--plan", str(plan)).returncode == 0
    assert "no reassignment is running" in cli.ok("reassign", "status").stdout


def test_invalid_plans_exit_2_and_zookeeper_is_unchanged(up, tmp_path):
    cli, status = up
    cli.ok("topics", "create", "untouched", "--partitions", "1", "--replication-factor", "1")
    before = zk_tree(status["zookeeper"])
    bad = {"version": 1, "partitions": [{"topic": "untouched", "partition": 0, "replicas": [1, 9]}]}
    plan = tmp_path / "bad.json"
    plan.write_text(json.dumps(bad))
    done = cli("reassign", "execute", "--plan", str(plan), "--throttle", "1000")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"kafkactl: error: {plan}: partitions[0] (topic 'untouched' partition 0): \"replicas\": broker 9 is not "
        f"registered (registered: 1, 2, 3, 4)"]
    assert zk_tree(status["zookeeper"]) == before
