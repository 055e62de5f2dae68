"""GET /metrics of real brokers: after producing to and consuming from a
replicated topic, log sizes match the segment files, bytes in match what was
appended, rates rise, dirs and media are the brokers' own, and request
statistics count what the clients sent."""

from __future__ import annotations

import json
import re
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from support.broker_support import KAFKACTL, kafka_python_consume, wait_for_leaders
from support.names import unique_topic
from support.waiting import wait_for

RECORDS = 300
VALUE = b"v" * 1000

_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def scrape(port: int) -> list[tuple[str, dict, float]]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = response.read().decode()
    samples = []
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        match = _LINE.match(line)
        assert match, f"unreadable line {line!r}"
        samples.append((match.group(1), dict(_LABEL.findall(match.group(2) or "")), float(match.group(3))))
    return samples


def pick(samples, name, **labels) -> list[tuple[dict, float]]:
    return [(l, v) for n, l, v in samples if n == name and all(l.get(k) == str(w) for k, w in labels.items())]


def one(samples, name, **labels) -> float:
    found = pick(samples, name, **labels)
    assert len(found) == 1, f"{name} {labels}: {found}"
    return found[0][1]


def kafkactl(zookeeper: str, *args: str) -> str:
    done = subprocess.run([str(KAFKACTL), "-z", zookeeper, *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def segment_bytes(partition_dir: Path) -> int:
    return sum(f.stat().st_size for f in partition_dir.glob("*.log"))


@pytest.fixture
def cluster(start_cluster):
    _, status = start_cluster(brokers=2)
    return status


def test_metrics_of_two_brokers_after_produce_and_consume(cluster):
    from kafka import KafkaProducer

    topic = unique_topic("metrics")
    kafkactl(cluster.zookeeper_connect, "topics", "create", topic, "-p", "2", "-r", "2")
    wait_for_leaders(cluster.bootstrap_servers, topic)
    [p0, p1] = json.loads(kafkactl(cluster.zookeeper_connect, "topics", "describe", topic, "-o", "json"))
    leader, follower = p0["leader"], [b for b in p0["replicas"] if b != p0["leader"]][0]
    ports = {b.id: b.metrics_port for b in cluster.brokers}

    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all", linger_ms=5)
    try:
        for _ in range(RECORDS):
            producer.send(topic, VALUE, partition=0)
        producer.flush(30)
    finally:
        producer.close()
    kafka_python_consume(cluster.bootstrap_servers, topic, RECORDS, partition=0)

    # The leader: bytes in are the bytes appended (batches are stored as received).
    def leader_rate():
        samples = scrape(ports[leader])
        return one(samples, "kafka_partition_bytes_in_per_second", topic=topic, partition=0) > 0 and samples

    samples = wait_for(leader_rate, 15, interval_s=0.5, what="a bytes-in rate on the leader (5 s ticks)")
    [(labels, size)] = pick(samples, "kafka_log_size_bytes", topic=topic, partition=0)
    partition_dir = Path(labels["log_dir"]) / f"{topic}-0"
    assert labels["log_dir"] in cluster.broker(leader).log_dirs and partition_dir.is_dir()
    assert size == segment_bytes(partition_dir) > RECORDS * len(VALUE)
    assert one(samples, "kafka_partition_bytes_in_total", topic=topic, partition=0) == size
    assert one(samples, "kafka_log_end_offset", topic=topic, partition=0) == RECORDS
    assert one(samples, "kafka_log_start_offset", topic=topic, partition=0) == 0
    assert one(samples, "kafka_partition_bytes_out_total", topic=topic, partition=0) >= size   # the consumer
    assert one(samples, "kafka_partition_replication_bytes_out_total", topic=topic, partition=0) >= size
    assert one(samples, "kafka_partition_bytes_in_per_second", topic=topic, partition=0) > 0
    assert one(samples, "kafka_log_size_bytes", topic=topic, partition=1) == 0

    # Log dirs: the brokers' own, with their media; used is the bytes of the logs there.
    media = cluster.broker(leader).log_dir_media
    for dir_labels, used in pick(samples, "kafka_log_dir_used_bytes"):
        assert dir_labels["media"] == media[dir_labels["path"]]
        in_dir = sum(v for l, v in pick(samples, "kafka_log_size_bytes") if l["log_dir"] == dir_labels["path"])
        assert used == in_dir
        assert one(samples, "kafka_log_dir_capacity_bytes", path=dir_labels["path"]) > 0
        assert 0 < one(samples, "kafka_log_dir_free_bytes", path=dir_labels["path"])
    assert sorted(l["path"] for l, _ in pick(samples, "kafka_log_dir_used_bytes")) == sorted(media)

    assert one(samples, "kafka_broker_info", broker_id=leader, rack="") == 1
    assert one(samples, "kafka_under_replicated_partitions") == 0
    assert one(samples, "kafka_requests_total", api="Produce") >= 1
    assert one(samples, "kafka_requests_total", api="Fetch") >= 1
    assert one(samples, "kafka_request_latency_seconds_count", api="Produce") == \
        one(samples, "kafka_requests_total", api="Produce")
    assert one(samples, "kafka_request_latency_seconds_bucket", api="Produce", le="+Inf") == \
        one(samples, "kafka_requests_total", api="Produce")

    # The follower: the same log, replicated; nothing produced to it as leader.
    def replicated():
        samples = scrape(ports[follower])
        return one(samples, "kafka_log_end_offset", topic=topic, partition=0) == RECORDS and samples

    samples = wait_for(replicated, 15, what="the follower to replicate")
    [(labels, follower_size)] = pick(samples, "kafka_log_size_bytes", topic=topic, partition=0)
    assert follower_size == size == segment_bytes(Path(labels["log_dir"]) / f"{topic}-0")
    assert pick(samples, "kafka_partition_bytes_in_total", topic=topic, partition=0) == []

    # Both brokers host both partitions, and between them lead each partition
    # once (the cluster's partitions include __consumer_offsets: the test's
    # confluent-kafka consumer has a group id, so the coordinator created it).
    every = [scrape(ports[b.id]) for b in cluster.brokers]
    assert [len(pick(s, "kafka_log_end_offset", topic=topic)) for s in every] == [2, 2]
    hosted = [{(l["topic"], l["partition"]) for l, _ in pick(s, "kafka_log_end_offset")} for s in every]
    assert [one(s, "kafka_partition_count") for s in every] == [len(h) for h in hosted]
    assert sum(one(s, "kafka_leader_count") for s in every) == len(set().union(*hosted))


def test_only_metrics_is_served(cluster):
    with pytest.raises(urllib.error.HTTPError) as error:
        urllib.request.urlopen(f"http://127.0.0.1:{cluster.brokers[0].metrics_port}/", timeout=10)
    assert error.value.code == 404


def test_metrics_port_0_takes_a_free_port_and_logs_it(zookeeper_server, tmp_path):
    import signal
    import sys

    from kafkactl.cluster.local.ports import free_loopback_ports

    [port] = free_loopback_ports(1)
    properties = tmp_path / "server.properties"
    properties.write_text(f"broker.id=1\nlisteners=PLAINTEXT://127.0.0.1:{port}\nlog.dirs={tmp_path / 'data'}\n"
                          f"zookeeper.connect={zookeeper_server}/metrics-port-0\nmetrics.port=0\n")
    log_file = tmp_path / "broker.log"
    with open(log_file, "w") as log:
        broker = subprocess.Popen([sys.executable, "-m", "kafkactl.cluster.broker", str(properties)],
                                  stdout=log, stderr=subprocess.STDOUT)
    try:
        logged = wait_for(lambda: re.search(r"metrics on http://127\.0\.0\.1:(\d+)/metrics", log_file.read_text()),
                          30, what="the broker to log its metrics port")
        samples = scrape(int(logged.group(1)))
        assert one(samples, "kafka_broker_info", broker_id=1, rack="") == 1
        assert one(samples, "kafka_partition_count") == 0
    finally:
        broker.send_signal(signal.SIGTERM)
        try:
            broker.wait(20)
        except subprocess.TimeoutExpired:
            broker.kill()
            broker.wait(5)
