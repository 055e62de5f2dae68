"""`kafkactl reassign` with plans that name log dirs, against a real local cluster
(ZooKeeper + 3 brokers, each with an ssd and an hdd log dir), through both
back ends (-z and -b: the dirs are the brokers' AlterReplicaLogDirs either way).

One cluster for the module: each test and back end uses its own topics.
"""

import json

import pytest

from kafkactl.cluster.admin import broker_queries as bq
from support.backends import BACKENDS, Through
from support.local_cluster import cluster_up, consume as consume_records, produce as produce_lines, zk_tree


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with cluster_up(tmp_path_factory, 3) as (cli, _, status):
        yield cli, status


@pytest.fixture(params=BACKENDS)
def up(cluster, request):
    cli, status = cluster
    return Through(cli, status, request.param), status


def log_dirs_of(status, broker_id):
    [broker] = [b for b in status["brokers"] if b["id"] == broker_id]
    ssd, hdd = broker["log_dirs"]
    return ssd, hdd


def where(status, broker_id, topic, partition):
    """(dir holding the replica, dir of a future replica) as the broker says (DescribeLogDirs)."""
    [broker] = [b for b in status["brokers"] if b["id"] == broker_id]
    address = bq.BrokerAddress(broker_id, broker["host"], broker["port"])
    answer = bq.ask_brokers([address], bq.describe_log_dirs, 10)[broker_id]
    assert isinstance(answer, list), answer
    current = [d.path for d in answer if (topic, partition) in d.partition_sizes]
    future = [d.path for d in answer if (topic, partition) in d.future_replicas]
    return current, future


def produce(bootstrap, topic, count):
    produce_lines(bootstrap, topic, [f"k{i}:message-{i}-{'z' * 200}" for i in range(count)])


def consume(bootstrap, topic):
    return consume_records(bootstrap, topic, "%k\n")


def write_plan(path, entries):
    path.write_text(json.dumps({"version": 1, "partitions": entries}))
    return path


def test_execute_wait_puts_replicas_in_the_named_dirs_and_verify_agrees(up, tmp_path):
    cli, status = up
    bootstrap = status["bootstrap_servers"]
    placed = cli.t("placed")
    cli.ok("topics", "create", placed, "--replica-assignment", "1,1")
    produce(bootstrap, placed, 2000)
    ssd1, hdd1 = log_dirs_of(status, 1)
    _, hdd2 = log_dirs_of(status, 2)
    assert where(status, 1, placed, 0)[0] == [ssd1] and where(status, 1, placed, 1)[0] == [ssd1]

    # Partition 0 moves to broker 2, into its hdd dir; partition 1 stays on
    # broker 1 and moves from its ssd dir to its hdd dir.
    plan = write_plan(tmp_path / "plan.json", [
        {"topic": placed, "partition": 0, "replicas": [2], "log_dirs": [hdd2]},
        {"topic": placed, "partition": 1, "replicas": [1], "log_dirs": [hdd1]}])
    done = cli.ok("reassign", "execute", "--plan", str(plan), "--wait", "--rollback-file",
                  str(tmp_path / "rollback.json"), "-o", "json")
    result = json.loads(done.stdout)
    assert result["log_dirs_named"] == 2 and result["log_dirs_pending"] == []
    assert [p["status"] for p in result["partitions"]] == ["complete", "complete"]
    assert "warning" not in done.stderr

    assert where(status, 2, placed, 0) == ([hdd2], [])
    assert where(status, 1, placed, 1) == ([hdd1], [])
    verified = json.loads(cli.ok("reassign", "verify", "--plan", str(plan), "-o", "json").stdout)
    assert [p["status"] for p in verified["partitions"]] == ["complete", "complete"]
    assert [[d["done"] for d in p["log_dirs"]] for p in verified["partitions"]] == [[True], [True]]
    assert consume(bootstrap, placed) == sorted(f"k{i}" for i in range(2000))


def test_verify_reports_a_move_between_dirs_until_it_is_done(up, tmp_path):
    cli, status = up
    replaced = cli.t("replaced")
    cli.ok("topics", "create", replaced, "--replica-assignment", "3")
    ssd3, hdd3 = log_dirs_of(status, 3)
    assert where(status, 3, replaced, 0)[0] == [ssd3]
    plan = write_plan(tmp_path / "plan.json", [
        {"topic": replaced, "partition": 0, "replicas": [3], "log_dirs": [ssd3]}])
    # Already there: complete at once.
    cli.ok("reassign", "execute", "--plan", str(plan), "--wait")
    assert json.loads(cli.ok("reassign", "verify", "--plan", str(plan), "-o", "json").stdout)[
        "partitions"][0]["status"] == "complete"
    # A plan that says elsewhere is not complete until the replica is there.
    elsewhere = write_plan(tmp_path / "elsewhere.json", [
        {"topic": replaced, "partition": 0, "replicas": [3], "log_dirs": [hdd3]}])
    before = cli("reassign", "verify", "--plan", str(elsewhere), "-o", "json")
    assert before.returncode == 1
    [row] = json.loads(before.stdout)["partitions"]
    assert row["status"] == "failed" and f"not {hdd3}, and no move runs" in row["detail"]


def test_a_dir_the_broker_does_not_have_exits_2_and_nothing_is_written(up, tmp_path):
    cli, status = up
    nowhere = cli.t("nowhere")
    cli.ok("topics", "create", nowhere, "--replica-assignment", "1")
    ssd1, _ = log_dirs_of(status, 1)
    before = zk_tree(status["zookeeper"])
    plan = write_plan(tmp_path / "bad.json", [
        {"topic": nowhere, "partition": 0, "replicas": [2, 1], "log_dirs": ["any", "/data/no-such-dir"]}])
    done = cli("reassign", "execute", "--plan", str(plan), "--throttle", "1000",
               "--rollback-file", str(tmp_path / "rollback.json"))
    assert done.returncode == 2, done.stderr
    message = done.stderr.strip().splitlines()[-1]
    assert message.startswith(f"kafkactl: error: {plan}: partitions[0] (topic {nowhere!r} partition 0): ")
    assert "broker 1 has no log dir /data/no-such-dir" in message and ssd1 in message
    assert zk_tree(status["zookeeper"]) == before
    assert not (tmp_path / "rollback.json").exists()
    assert where(status, 1, nowhere, 0) == ([ssd1], [])
