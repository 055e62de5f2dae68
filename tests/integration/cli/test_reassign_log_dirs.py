"""`kafkactl reassign` with plans that name log dirs, against a real local cluster
(ZooKeeper + 3 brokers, each with an ssd and an hdd log dir).

One cluster for the module: each test uses its own topics.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kafkactl.cluster.admin import broker_queries as bq
from kafkactl.cluster.local import LocalCluster
from kafkactl.cluster.local.zkclient import zk_session

pytestmark = pytest.mark.slow

KAFKACTL = Path(sys.executable).parent / "kafkactl"


class Cli:
    def __init__(self, env):
        self.env = env

    def __call__(self, *args, timeout_s=180):
        return subprocess.run([str(KAFKACTL), *args], capture_output=True, text=True, env=self.env,
                              timeout=timeout_s)

    def ok(self, *args, **kwargs):
        done = self(*args, **kwargs)
        assert done.returncode == 0, f"kafkactl {' '.join(args)} exited {done.returncode}:\n{done.stderr}"
        return done


@pytest.fixture(scope="module")
def up(tmp_path_factory):
    home = tmp_path_factory.mktemp("home")
    env = {k: v for k, v in os.environ.items() if k not in ("KAFKACTL_ZOOKEEPER", "KAFKACTL_BROKER_MODULE")}
    env.update(KAFKACTL_CONFIG=str(home / "config.json"), XDG_STATE_HOME=str(home / "state"))
    directory = tmp_path_factory.mktemp("cluster")
    cli = Cli(env)
    try:
        status = json.loads(cli.ok("cluster", "up", "--brokers", "3", "--dir", str(directory), "-o", "json").stdout)
        yield cli, status
    finally:
        LocalCluster(directory).down(timeout_s=10)


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
    lines = "".join(f"k{i}:message-{i}-{'z' * 200}\n" for i in range(count))
    subprocess.run(["kcat", "-b", bootstrap, "-t", topic, "-P", "-K:", "-X", "acks=all"], input=lines, text=True,
                   check=True, timeout=60)


def consume(bootstrap, topic):
    done = subprocess.run(["kcat", "-b", bootstrap, "-t", topic, "-C", "-e", "-o", "beginning", "-f", "%k\n", "-q"],
                          capture_output=True, text=True, check=True, timeout=60)
    return sorted(done.stdout.split())


def write_plan(path, entries):
    path.write_text(json.dumps({"version": 1, "partitions": entries}))
    return path


def test_execute_wait_puts_replicas_in_the_named_dirs_and_verify_agrees(up, tmp_path):
    cli, status = up
    bootstrap = status["bootstrap_servers"]
    cli.ok("topics", "create", "placed", "--replica-assignment", "1,1")
    produce(bootstrap, "placed", 2000)
    ssd1, hdd1 = log_dirs_of(status, 1)
    _, hdd2 = log_dirs_of(status, 2)
    assert where(status, 1, "placed", 0)[0] == [ssd1] and where(status, 1, "placed", 1)[0] == [ssd1]

    # Partition 0 moves to broker 2, into its hdd dir; partition 1 stays on
    # broker 1 and moves from its ssd dir to its hdd dir.
    plan = write_plan(tmp_path / "plan.json", [
        {"topic": "placed", "partition": 0, "replicas": [2], "log_dirs": [hdd2]},
        {"topic": "placed", "partition": 1, "replicas": [1], "log_dirs": [hdd1]}])
    done = cli.ok("reassign", "execute", "--plan", str(plan), "--wait", "--rollback-file",
                  str(tmp_path / "rollback.json"), "-o", "json")
    result = json.loads(done.stdout)
    assert result["log_dirs_named"] == 2 and result["log_dirs_pending"] == []
    assert [p["status"] for p in result["partitions"]] == ["complete", "complete"]
    assert "warning" not in done.stderr

    assert where(status, 2, "placed", 0) == ([hdd2], [])
    assert where(status, 1, "placed", 1) == ([hdd1], [])
    verified = json.loads(cli.ok("reassign", "verify", "--plan", str(plan), "-o", "json").stdout)
    assert [p["status"] for p in verified["partitions"]] == ["complete", "complete"]
    assert [[d["done"] for d in p["log_dirs"]] for p in verified["partitions"]] == [[True], [True]]
    assert consume(bootstrap, "placed") == sorted(f"k{i}" for i in range(2000))


def test_verify_reports_a_move_between_dirs_until_it_is_done(up, tmp_path):
    cli, status = up
    cli.ok("topics", "create", "replaced", "--replica-assignment", "3")
    ssd3, hdd3 = log_dirs_of(status, 3)
    assert where(status, 3, "replaced", 0)[0] == [ssd3]
    plan = write_plan(tmp_path / "plan.json", [
        {"topic": "replaced", "partition": 0, "replicas": [3], "log_dirs": [ssd3]}])
    # Already there: complete at once.
    cli.ok("reassign", "execute", "--plan", str(plan), "--wait")
    assert json.loads(cli.ok("reassign", "verify", "--plan", str(plan), "-o", "json").stdout)[
        "partitions"][0]["status"] == "complete"
    # A plan that says elsewhere is not complete until the replica is there.
    elsewhere = write_plan(tmp_path / "elsewhere.json", [
        {"topic": "replaced", "partition": 0, "replicas": [3], "log_dirs": [hdd3]}])
    before = cli("reassign", "verify", "--plan", str(elsewhere), "-o", "json")
    assert before.returncode == 1
    [row] = json.loads(before.stdout)["partitions"]
    assert row["status"] == "failed" and f"not {hdd3}, and no move runs" in row["detail"]


def zk_tree(zookeeper):
    """Every znode's data under the paths a reassignment writes."""
    tree = {}
    with zk_session(zookeeper, 10) as client:
        def walk(path):
            data, _ = client.get_async(path).get(timeout=10)
            tree[path] = data
            for child in client.get_children_async(path).get(timeout=10):
                walk(f"{path.rstrip('/')}/{child}")
        for root in ("/admin", "/config", "/brokers/topics"):
            if client.exists_async(root).get(timeout=10):
                walk(root)
    return tree


def test_a_dir_the_broker_does_not_have_exits_2_and_nothing_is_written(up, tmp_path):
    cli, status = up
    cli.ok("topics", "create", "nowhere", "--replica-assignment", "1")
    ssd1, _ = log_dirs_of(status, 1)
    before = zk_tree(status["zookeeper"])
    plan = write_plan(tmp_path / "bad.json", [
        {"topic": "nowhere", "partition": 0, "replicas": [2, 1], "log_dirs": ["any", "/data/no-such-dir"]}])
    done = cli("reassign", "execute", "--plan", str(plan), "--throttle", "1000",
               "--rollback-file", str(tmp_path / "rollback.json"))
    assert done.returncode == 2, done.stderr
    message = done.stderr.strip().splitlines()[-1]
    assert message.startswith(f"kafkactl: error: {plan}: partitions[0] (topic 'nowhere' partition 0): ")
    assert "broker 1 has no log dir /data/no-such-dir" in message and ssd1 in message
    assert zk_tree(status["zookeeper"]) == before
    assert not (tmp_path / "rollback.json").exists()
    assert where(status, 1, "nowhere", 0) == ([ssd1], [])
