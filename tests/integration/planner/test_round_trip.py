"""The round trip on a real local cluster: snapshot -> `kafkactl plan` ->
`kafkactl reassign execute --wait` -> ZooKeeper's assignment equals the plan.

Until `kafkactl metrics snapshot` lands, the test writes the snapshot itself
(here only): the assignment from ZooKeeper, each replica's log dir and size
from the files on disk. Until the optimizer lands in this branch, `kafkactl
plan` runs with the TEST-ONLY stand-in optimizer through the job's explicit
hook (KAFKACTL_PLANNER_OPTIMIZER); set USE_STAND_IN = False to use the real one.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kafkactl.cluster.local import LocalCluster
from kafkactl.cluster.local.zkclient import zk_session
from kafkactl.planner.fixtures import NETWORK_BYTES_PER_S, write_jsonl
from kafkactl.planner.job import OPTIMIZER_HOOK_ENV

HERE = Path(__file__).resolve().parent
KAFKACTL = Path(sys.executable).parent / "kafkactl"
USE_STAND_IN = True
TOPIC = "skewed"
CAPACITY_BYTES = 10**9


def kafkactl(env, *args, timeout_s=300):
    done = subprocess.run([str(KAFKACTL), *args], capture_output=True, text=True, env=env, timeout=timeout_s)
    assert done.returncode == 0, f"kafkactl {' '.join(args)} exited {done.returncode}:\n{done.stderr}"
    return done


@pytest.fixture
def cluster(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("KAFKACTL_ZOOKEEPER", "KAFKACTL_BROKER_MODULE")}
    env.update(KAFKACTL_CONFIG=str(tmp_path / "home" / "config.json"), XDG_STATE_HOME=str(tmp_path / "home" / "state"),
               PYSPARK_PYTHON=sys.executable)
    directory = tmp_path / "cluster"
    try:
        status = json.loads(kafkactl(env, "cluster", "up", "--brokers", "4", "--dir", str(directory), "-o",
                                     "json").stdout)
        yield env, status
    finally:
        LocalCluster(directory).down(timeout_s=10)


def zookeeper_assignment(zookeeper: str) -> dict[int, list[int]]:
    with zk_session(zookeeper, 5) as client:
        data, _ = client.get_async(f"/brokers/topics/{TOPIC}").get(timeout=5)
    return {int(p): replicas for p, replicas in json.loads(data)["partitions"].items()}


def dir_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def write_snapshot(directory: Path, status: dict) -> None:
    """brokers, log_dirs and partitions from the cluster (test-only stand-in for `metrics snapshot`)."""
    directory.mkdir()
    brokers = status["brokers"]
    write_jsonl(directory / "brokers.jsonl", [
        {"broker_id": b["id"], "rack": None, "network_in_capacity_bytes_per_s": NETWORK_BYTES_PER_S,
         "network_out_capacity_bytes_per_s": NETWORK_BYTES_PER_S} for b in brokers])
    write_jsonl(directory / "log_dirs.jsonl", [
        {"broker_id": b["id"], "path": d, "media": "ssd" if Path(d).name.startswith("ssd") else "hdd",
         "capacity_bytes": CAPACITY_BYTES, "used_bytes": dir_size(Path(d))} for b in brokers for d in b["log_dirs"]])
    dirs = {b["id"]: b["log_dirs"] for b in brokers}
    partitions = []
    for partition, replicas in sorted(zookeeper_assignment(status["zookeeper"]).items()):
        placed = {r: next(d for d in dirs[r] if (Path(d) / f"{TOPIC}-{partition}").is_dir()) for r in replicas}
        size = max(dir_size(Path(placed[r]) / f"{TOPIC}-{partition}") for r in replicas)
        partitions.append({"topic": TOPIC, "partition": partition, "replicas": replicas, "leader": replicas[0],
                           "log_dirs": [placed[r] for r in replicas], "size_bytes": size,
                           "bytes_in_per_s": 1000.0 * (partition + 1), "bytes_out_per_s": 2000.0})
    write_jsonl(directory / "partitions.jsonl", partitions)


def test_snapshot_plan_execute_and_zookeeper_equals_the_plan(cluster, tmp_path):
    env, status = cluster
    kafkactl(env, "topics", "create", TOPIC, "--partitions", "4", "--replication-factor", "2")
    # Skew the topic onto brokers 1 and 2, then give it data.
    generated = json.loads(kafkactl(env, "reassign", "generate", "--topics", TOPIC, "--brokers", "1,2", "-o",
                                    "json").stdout)
    (tmp_path / "skew.json").write_text(json.dumps(generated["proposed"]))
    kafkactl(env, "reassign", "execute", "--plan", str(tmp_path / "skew.json"), "--wait")
    lines = "".join(f"k{i}:{'x' * (100 + i)}\n" for i in range(400))
    subprocess.run(["kcat", "-b", status["bootstrap_servers"], "-t", TOPIC, "-P", "-K:", "-X", "acks=all"],
                   input=lines, text=True, check=True, timeout=60)
    assert {b for r in zookeeper_assignment(status["zookeeper"]).values() for b in r} == {1, 2}

    write_snapshot(tmp_path / "snapshot", status)
    plan_env = dict(env)
    if USE_STAND_IN:
        plan_env.update({OPTIMIZER_HOOK_ENV: "stand_in_optimizer:optimize",
                         "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH")]))})
    out = tmp_path / "out"
    planned = json.loads(kafkactl(plan_env, "plan", "--snapshot", str(tmp_path / "snapshot"), "--out", str(out),
                                  "--master", "local[2]", "-o", "json", timeout_s=600).stdout)
    plan = json.loads((out / "plan.json").read_text())
    assert planned["violations"]["after"]["total"] == 0 and plan["partitions"]
    expected = zookeeper_assignment(status["zookeeper"])
    expected.update({p["partition"]: p["replicas"] for p in plan["partitions"]})
    assert {b for r in expected.values() for b in r} == {1, 2, 3, 4}  # the plan spreads the topic

    kafkactl(env, "reassign", "execute", "--plan", str(out / "plan.json"), "--wait", "--timeout", "120",
             "--rollback-file", str(tmp_path / "rollback.json"))
    assert zookeeper_assignment(status["zookeeper"]) == expected
