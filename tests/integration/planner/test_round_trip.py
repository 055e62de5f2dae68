"""The round trip on a real local cluster, every step the operator's command:
`kafkactl metrics snapshot` -> `kafkactl plan` (the real optimizer) ->
`kafkactl reassign execute --wait` -> ZooKeeper's assignment equals the plan,
and every replica sits in the log dir the plan names.

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


def zookeeper_assignment(zookeeper: str) -> dict[int, list[int]]:
    with zk_session(zookeeper, 5) as client:
        data, _ = client.get_async(f"/brokers/topics/{TOPIC}").get(timeout=5)
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
