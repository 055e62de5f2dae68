"""`kafkactl metrics snapshot` on a real three-broker local cluster: every
partition present with ZooKeeper's replicas and leader, the dirs the brokers
really use, sizes where data was written, the leader's bytes-in rate right
after producing; and a broker whose metrics do not answer fails the run
without leaving a file behind.

The same snapshot through both back ends (-z and -b: support/backends.py),
from one cluster loaded once for the module. Neither ZooKeeper's broker
registration nor Metadata says where a broker serves its metrics; with -b the
context's local cluster is not the one addressed, so the metrics ports must
be given (--metrics-port, --metrics-endpoints), and without them the command
says so in one line."""

from __future__ import annotations

import json
import socket
import urllib.request
from pathlib import Path

import pytest

from support.backends import BACKENDS, address_args
from support.local_cluster import cluster_up
from support.waiting import wait_for

HOT_RECORDS = 200
VALUE = b"x" * 2000
CAPACITY = ["--network-in-capacity", "125000000", "--network-out-capacity", "250000000"]


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def leader_rate(metrics_port: int, topic: str, partition: int) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as response:
        for line in response.read().decode().splitlines():
            if line.startswith("kafka_partition_bytes_in_per_second{") and \
                    f'topic="{topic}",partition="{partition}"' in line:
                return float(line.rsplit(" ", 1)[1])
    return 0.0


def produce(bootstrap: str, topic: str, partitions: list[int]) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    try:
        for partition in partitions:
            for _ in range(HOT_RECORDS):
                producer.send(topic, VALUE, partition=partition)
        producer.flush(30)
    finally:
        producer.close()


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    """Topics hot (3 partitions, 2 replicas) and idle (2, 3); hot-0 and hot-1
    written to until their leaders measure a rate. Yields the CLI, `cluster up`'s
    status, `cluster status`'s brokers by id and the partitions as described."""
    with cluster_up(tmp_path_factory, 3) as (cli, cluster, up):
        status = json.loads(cli.ok("cluster", "status", "--dir", str(cluster.root), "-o", "json").stdout)
        brokers = {b["id"]: b for b in status["brokers"]}
        assert all(b["metrics_port"] and b["metrics_url"].endswith(f":{b['metrics_port']}/metrics")
                   for b in brokers.values())
        cli.ok("topics", "create", "hot", "-p", "3", "-r", "2")
        cli.ok("topics", "create", "idle", "-p", "2", "-r", "3")

        def described():
            return {(p["topic"], p["partition"]): p
                    for p in json.loads(cli.ok("topics", "describe", "-o", "json").stdout)}

        wait_for(lambda: all(p["leader"] >= 0 for p in described().values()), 30, "leaders")
        partitions = described()
        produce(up["bootstrap_servers"], "hot", [0, 1])
        for partition in (0, 1):   # the meters tick every 5 s
            leader = partitions[("hot", partition)]["leader"]
            wait_for(lambda: leader_rate(brokers[leader]["metrics_port"], "hot", partition) > 0, 15,
                     f"a rate for hot-{partition}")
        yield cli, up, brokers, partitions


def one_line_error(done) -> str:
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("kafkactl: error: "), done.stderr
    return line


@pytest.mark.parametrize("backend", BACKENDS)
def test_snapshot_of_a_real_cluster(loaded, backend, tmp_path):
    cli, up, brokers, described = loaded
    via = address_args(backend, up)
    out = tmp_path / "snapshot"
    if backend == "admin-api":
        refused = cli("metrics", "snapshot", "--out", str(out), *CAPACITY, *via)
        assert refused.returncode == 2
        line = one_line_error(refused)
        assert "no metrics endpoint for broker 1" in line and "--metrics-port" in line, line
        assert not out.exists()
        # Broker 1's metrics on its host as Metadata names it (--metrics-port), the others' named.
        via += ["--metrics-port", str(brokers[1]["metrics_port"]), "--metrics-endpoints",
                ",".join(f"{i}=127.0.0.1:{brokers[i]['metrics_port']}" for i in (2, 3))]

    summary = json.loads(cli.ok("metrics", "snapshot", "--out", str(out), *CAPACITY, *via, "-o", "json").stdout)
    assert (summary["brokers"], summary["log_dirs"], summary["partitions"]) == (3, 6, 5)
    assert summary["metrics_endpoints"] == {str(i): b["metrics_url"] for i, b in brokers.items()}
    assert sorted(p.name for p in out.iterdir()) == ["brokers.jsonl", "log_dirs.jsonl", "partitions.jsonl",
                                                     "snapshot.json"]
    assert json.loads((out / "snapshot.json").read_text()) == {"reassigning_partitions": 0}
    assert summary["reassigning_partitions"] == 0

    assert jsonl(out / "brokers.jsonl") == [
        {"broker_id": i, "rack": None, "network_in_capacity_bytes_per_s": 125000000,
         "network_out_capacity_bytes_per_s": 250000000} for i in (1, 2, 3)]
    log_dirs = jsonl(out / "log_dirs.jsonl")
    assert {(d["broker_id"], d["path"], d["media"]) for d in log_dirs} == {
        (i, path, media) for i, b in brokers.items() for path, media in b["log_dir_media"].items()}
    assert all(d["capacity_bytes"] > 0 for d in log_dirs)

    partitions = {(p["topic"], p["partition"]): p for p in jsonl(out / "partitions.jsonl")}
    assert sorted(partitions) == sorted(described)
    for key, row in partitions.items():
        assert row["replicas"] == described[key]["replicas"] and row["leader"] == described[key]["leader"]
        for broker_id, path in zip(row["replicas"], row["log_dirs"]):   # where the replica really lives
            assert (Path(path) / f"{key[0]}-{key[1]}").is_dir() and path in brokers[broker_id]["log_dirs"]
    for partition in (0, 1):
        row = partitions[("hot", partition)]
        assert row["size_bytes"] > HOT_RECORDS * len(VALUE)
        assert row["bytes_in_per_s"] > 0       # a one-minute average: still above 0 for the second back end
    assert partitions[("hot", 2)]["size_bytes"] == 0 and partitions[("hot", 2)]["bytes_in_per_s"] == 0
    assert all(partitions[("idle", p)]["size_bytes"] == 0 for p in (0, 1))
    used = {(d["broker_id"], d["path"]): d["used_bytes"] for d in log_dirs}
    for partition in (0, 1):   # acks=all: every replica holds all of it
        row = partitions[("hot", partition)]
        assert all(used[(b, path)] >= row["size_bytes"] for b, path in zip(row["replicas"], row["log_dirs"]))

    # Broker 3's metrics do not answer: exit 1 naming it, and no snapshot at all.
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        dead = unused.getsockname()[1]
    endpoints = f"1=127.0.0.1:{brokers[1]['metrics_port']},2=127.0.0.1:{brokers[2]['metrics_port']}," \
                f"3=127.0.0.1:{dead}"
    failed = cli("metrics", "snapshot", "--out", str(tmp_path / "second"), "--metrics-endpoints", endpoints,
                 *CAPACITY, *address_args(backend, up))
    assert failed.returncode == 1
    line = one_line_error(failed)
    assert f"broker 3 (http://127.0.0.1:{dead}/metrics)" in line and "no snapshot written" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["snapshot"]
