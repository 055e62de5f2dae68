"""`kafkactl metrics snapshot` on a real three-broker local cluster: every
partition present with ZooKeeper's replicas and leader, the dirs the brokers
really use, sizes where data was written, the leader's bytes-in rate right
after producing; and a broker whose metrics do not answer fails the run
without leaving a file behind."""

from __future__ import annotations

import json
import socket
import urllib.request
from pathlib import Path

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


def test_snapshot_of_a_real_cluster(real_cli, cluster_dir, tmp_path):
    up = real_cli.ok("cluster", "up", "--brokers", "3", "--dir", str(cluster_dir), "-o", "json").json()
    status = real_cli.ok("cluster", "status", "--dir", str(cluster_dir), "-o", "json").json()
    brokers = {b["id"]: b for b in status["brokers"]}
    assert all(b["metrics_port"] and b["metrics_url"].endswith(f":{b['metrics_port']}/metrics")
               for b in brokers.values())
    real_cli.ok("topics", "create", "hot", "-p", "3", "-r", "2")
    real_cli.ok("topics", "create", "idle", "-p", "2", "-r", "3")
    wait_for(lambda: all(p["leader"] >= 0 for p in
                         real_cli.ok("topics", "describe", "-o", "json").json()), 30, "leaders")
    described = {(p["topic"], p["partition"]): p for p in real_cli.ok("topics", "describe", "-o", "json").json()}

    produce(up["bootstrap_servers"], "hot", [0, 1])
    for partition in (0, 1):   # the meters tick every 5 s
        leader = described[("hot", partition)]["leader"]
        wait_for(lambda: leader_rate(brokers[leader]["metrics_port"], "hot", partition) > 0, 15,
                 f"a rate for hot-{partition}")

    out = tmp_path / "snapshot"
    summary = real_cli.ok("metrics", "snapshot", "--out", str(out), *CAPACITY, "-o", "json").json()
    assert (summary["brokers"], summary["log_dirs"], summary["partitions"]) == (3, 6, 5)
    assert sorted(p.name for p in out.iterdir()) == ["brokers.jsonl", "log_dirs.jsonl", "partitions.jsonl"]

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
        assert row["bytes_in_per_s"] > 0
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
    failed = real_cli("metrics", "snapshot", "--out", str(tmp_path / "second"), "--metrics-endpoints", endpoints,
                      *CAPACITY)
    assert failed.code == 1
    assert f"broker 3 (http://127.0.0.1:{dead}/metrics)" in failed.err and "no snapshot written" in failed.err
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "home") == ["cluster", "snapshot"]
