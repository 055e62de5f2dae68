"""The round trip on a real local cluster, every step the operator's command:
`kafkactl metrics snapshot` -> `kafkactl plan` (the real optimizer) ->
`kafkactl reassign execute --wait` -> ZooKeeper's assignment equals the plan,
and every replica sits in the log dir the plan names. And a snapshot taken
while a throttled reassignment is still moving a partition: refused through
either back end, or with --allow-reassignment-in-progress recorded at the
target replicas, so the plan keeps every replication factor.

The local cluster's log dirs share one filesystem, so the capacity file gives
each dir a capacity of its own (CAPACITY_BYTES), as an operator would."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kafkactl.cluster.local import LocalCluster
from kafkactl.cluster.zk.client import session as zk_session
from kafkactl.planner.fixtures import NETWORK_BYTES_PER_S
from support.waiting import wait_for

KAFKACTL = Path(sys.executable).parent / "kafkactl"
TOPIC = "skewed"
CAPACITY_BYTES = 10**9


def kafkactl(env, *args, timeout_s=300):
    done = subprocess.run([str(KAFKACTL), *args], capture_output=True, text=True, env=env, timeout=timeout_s)
    assert done.returncode == 0, f"kafkactl {' '.join(args)} exited {done.returncode}:\n{done.stderr}"
    return done


@pytest.fixture
def cluster(tmp_path):
    # As an operator's shell has it: no PYSPARK_PYTHON (kafkactl plan must find its own interpreter).
    env = {k: v for k, v in os.environ.items()
           if k not in ("KAFKACTL_ZOOKEEPER", "KAFKACTL_BROKER_MODULE", "PYSPARK_PYTHON")}
    env.update(KAFKACTL_CONFIG=str(tmp_path / "home" / "config.json"), XDG_STATE_HOME=str(tmp_path / "home" / "state"))
    directory = tmp_path / "cluster"
    try:
        status = json.loads(kafkactl(env, "cluster", "up", "--brokers", "4", "--dir", str(directory), "-o",
                                     "json").stdout)
        yield env, status
    finally:
        LocalCluster(directory).down(timeout_s=10)


def zookeeper_assignment(zookeeper: str, topic: str = TOPIC) -> dict[int, list[int]]:
    with zk_session(zookeeper, 5) as client:
        data, _ = client.get_async(f"/brokers/topics/{topic}").get(timeout=5)
    return {int(p): replicas for p, replicas in json.loads(data)["partitions"].items()}


def write_capacity_file(path: Path, status: dict) -> None:
    path.write_text(json.dumps({
        "default": {"network_in_capacity_bytes_per_s": NETWORK_BYTES_PER_S,
                    "network_out_capacity_bytes_per_s": NETWORK_BYTES_PER_S},
        "brokers": {str(b["id"]): {"log_dirs": {d: {"capacity_bytes": CAPACITY_BYTES} for d in b["log_dirs"]}}
                    for b in status["brokers"]}}))


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

    write_capacity_file(tmp_path / "capacity.json", status)
    kafkactl(env, "metrics", "snapshot", "--out", str(tmp_path / "snapshot"),
             "--capacity-file", str(tmp_path / "capacity.json"))
    out = tmp_path / "out"
    planned = json.loads(kafkactl(env, "plan", "--snapshot", str(tmp_path / "snapshot"), "--out", str(out),
                                  "--master", "local[2]", "-o", "json", timeout_s=600).stdout)
    plan = json.loads((out / "plan.json").read_text())
    assert planned["violations"]["after"]["total"] == 0 and plan["partitions"]
    expected = zookeeper_assignment(status["zookeeper"])
    expected.update({p["partition"]: p["replicas"] for p in plan["partitions"]})
    assert {b for r in expected.values() for b in r} == {1, 2, 3, 4}  # the plan spreads the topic

    kafkactl(env, "reassign", "execute", "--plan", str(out / "plan.json"), "--wait", "--timeout", "120",
             "--rollback-file", str(tmp_path / "rollback.json"))
    assert zookeeper_assignment(status["zookeeper"]) == expected
    # verify exits 0 only when every replica is on its broker and in the log dir the plan names.
    kafkactl(env, "reassign", "verify", "--plan", str(out / "plan.json"))


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def start_a_move_that_stays_in_progress(env, status, tmp_path) -> tuple[int, int]:
    """single-0 (one replica, 3 MB) moving from its broker to another at 1 byte/s: more than
    one fetch brings, so the new replica owes the throttle for days. (leader, target broker)"""
    kafkactl(env, "topics", "create", "single", "--partitions", "1", "--replication-factor", "1")
    kafkactl(env, "topics", "create", "pair", "--partitions", "2", "--replication-factor", "2")
    lines = "".join(f"k{i}:{'x' * 1000}\n" for i in range(3000))
    subprocess.run(["kcat", "-b", status["bootstrap_servers"], "-t", "single", "-P", "-K:", "-X", "acks=all"],
                   input=lines, text=True, check=True, timeout=60)
    [leader] = zookeeper_assignment(status["zookeeper"], "single")[0]
    other = min(b["id"] for b in status["brokers"] if b["id"] != leader)
    (tmp_path / "move.json").write_text(json.dumps(
        {"version": 1, "partitions": [{"topic": "single", "partition": 0, "replicas": [other]}]}))
    kafkactl(env, "reassign", "execute", "--plan", str(tmp_path / "move.json"), "--throttle", "1")
    new_dirs = [Path(d) / "single-0" for b in status["brokers"] if b["id"] == other for d in b["log_dirs"]]
    wait_for(lambda: any(d.is_dir() for d in new_dirs), 30, f"broker {other} creating its replica of single-0")
    [row] = json.loads(kafkactl(env, "reassign", "status", "-o", "json").stdout)
    assert (row["status"], row["target"]) == ("in progress", [other])
    return leader, other


def test_a_snapshot_mid_reassignment_is_refused_or_records_the_targets(cluster, tmp_path):
    env, status = cluster
    leader, other = start_a_move_that_stays_in_progress(env, status, tmp_path)
    write_capacity_file(tmp_path / "capacity.json", status)
    capacity = ["--capacity-file", str(tmp_path / "capacity.json")]
    ports = json.loads(kafkactl(env, "cluster", "status", "--dir", str(tmp_path / "cluster"), "-o", "json").stdout)
    endpoints = ",".join(f"{b['id']}=127.0.0.1:{b['metrics_port']}" for b in ports["brokers"])
    through = {"-z": ["-z", status["zookeeper"]],
               "-b": ["-b", status["bootstrap_servers"], "--metrics-endpoints", endpoints]}
    sources = {"-z": "/admin/reassign_partitions exists", "-b": "listed by ListPartitionReassignments"}

    for way, args in through.items():
        refused = subprocess.run([str(KAFKACTL), "metrics", "snapshot", "--out", str(tmp_path / "refused"),
                                  *capacity, *args], capture_output=True, text=True, env=env, timeout=120)
        assert refused.returncode == 1, refused.stderr
        [line] = refused.stderr.strip().splitlines()
        assert line.startswith(f"kafkactl: error: a reassignment is in progress (1 partition moving, {sources[way]})")
        assert "--allow-reassignment-in-progress" in line and line.endswith("no snapshot written")
        assert not [p for p in tmp_path.iterdir() if "refused" in p.name]   # nothing, not even a temporary dir

        out = tmp_path / f"snapshot{way}"
        kafkactl(env, "metrics", "snapshot", "--out", str(out), *capacity, *args, "--allow-reassignment-in-progress")
        assert json.loads((out / "snapshot.json").read_text()) == {"reassigning_partitions": 1}
        rows = {(p["topic"], p["partition"]): p for p in jsonl(out / "partitions.jsonl")}
        single = rows[("single", 0)]
        assert (single["replicas"], single["leader"], len(single["log_dirs"])) == ([other], other, 1)
        assert single["size_bytes"] >= 3000 * 1000
        assert [len(rows[("pair", p)]["replicas"]) for p in (0, 1)] == [2, 2]
        used = {(d["broker_id"], d["path"]): d["used_bytes"] for d in jsonl(out / "log_dirs.jsonl")}
        assert used[(other, single["log_dirs"][0])] >= single["size_bytes"]   # as after the move

    planned = subprocess.run([str(KAFKACTL), "plan", "--snapshot", str(tmp_path / "snapshot-z"), "--out",
                              str(tmp_path / "plan"), "--master", "local[2]", "-o", "json"],
                             capture_output=True, text=True, env=env, timeout=900)
    assert planned.returncode == 0, planned.stderr
    assert planned.stderr.splitlines() == [
        f"kafkactl: note: snapshot {tmp_path / 'snapshot-z'} was taken during a reassignment: 1 partition "
        f"recorded at their target replicas"]
    report = json.loads(planned.stdout)
    assert report["snapshot_reassigning_partitions"] == 1
    # Replication factors kept: 1 + 2 + 2 replicas, not the 6 the move's transient set would give.
    assert sum(b["after"]["replica_count"] for b in report["brokers"]) == 5
    entries = json.loads((tmp_path / "plan" / "plan.json").read_text())["partitions"]
    assert all(len(e["replicas"]) == (1 if e["topic"] == "single" else 2) for e in entries
               if e["topic"] in ("single", "pair"))
