"""Connections cannot lock out clients or replication (issue 11, part 3):
real ZooKeeper and broker processes, hostile connections from 127.0.0.1, the
brokers' own host.

- 1,000 idle connections fill the leader's max.connections before its
  followers connect: kcat still connects, the followers' fetchers get in
  (idle client connections are closed for them), the ISR stays full and an
  acks=-1 producer keeps being acknowledged under min.insync.replicas=2.
- 20 connections announcing 100 MiB frames and sending 4 bytes leave the
  broker's RSS bounded and a Metadata request fast.
- max.connections.per.ip refuses beyond the limit while another client
  connects; connections.max.idle.ms closes an idle connection.
"""

from __future__ import annotations

import json
import resource
import socket
import subprocess
import time

from kazoo.client import KazooClient
from kio.schema.api_versions.v3 import request as api_versions3
from kio.schema.metadata.v12 import request as metadata12

from kafkactl.cluster.admin.topics import create_topic
from support.broker_support import require_tools
from support.names import unique_topic
from support.producers import BackgroundProducer
from support.wire import WireClient
from support.sockets import closed_by_peer
from support.waiting import wait_for

HUGE_PREFIX = bytes.fromhex("06400000 00030001")   # a 100 MiB frame announced, 4 bytes of it sent


def raise_open_files_limit(wanted: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, hard), hard))


def open_idle(host: str, port: int, count: int, source: str | None = None) -> list[socket.socket]:
    sockets = []
    for _ in range(count):
        sock = socket.create_connection((host, port), timeout=10, source_address=(source, 0) if source else None)
        sockets.append(sock)
    return sockets


def kcat_metadata(host: str, port: int) -> dict:
    done = subprocess.run(["kcat", "-b", f"{host}:{port}", "-L", "-J", "-m", "10"],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def isr(zk: KazooClient, topic: str) -> list[int]:
    return sorted(json.loads(zk.get(f"/brokers/topics/{topic}/partitions/0/state")[0])["isr"])


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def metadata_request():
    return metadata12.MetadataRequest(topics=(), allow_auto_topic_creation=False,
                                      include_topic_authorized_operations=False)


def test_idle_connections_lock_out_neither_clients_nor_followers(start_cluster):
    require_tools("kcat")
    raise_open_files_limit(4096)
    cluster, status = start_cluster(brokers=3, overrides={
        "max.connections": "1000", "replica.lag.time.max.ms": "3000",
        "auto.leader.rebalance.enable": "false"})
    leader = status.broker(1)
    idle = open_idle(leader.host, leader.port, 1000)
    try:
        topic = unique_topic("locked-out")
        zk = KazooClient(hosts=status.zookeeper_connect, timeout=10.0)
        zk.start(timeout=30)
        try:
            # Created now, so the followers' fetchers connect to a leader whose
            # max.connections is already taken by idle connections.
            create_topic(zk, topic, {0: [1, 2, 3]}, {"min.insync.replicas": "2"})
            wait_for(lambda: zk.exists(f"/brokers/topics/{topic}/partitions/0/state") and
                     isr(zk, topic) == [1, 2, 3], 30, what="the partition's full ISR")
            assert kcat_metadata(leader.host, leader.port)["brokers"]
            producer = BackgroundProducer(f"{leader.host}:{leader.port}", topic, lambda i: b"v%d" % i,
                                          linger_ms=5, burst=50, pause_s=0.05)
            producer.start()
            # Longer than twice replica.lag.time.max.ms: a follower starved of
            # fetches would have been dropped from the ISR by now.
            deadline = time.monotonic() + 8
            while time.monotonic() < deadline:
                assert isr(zk, topic) == [1, 2, 3]
                time.sleep(0.5)
            assert producer.stop_and_flush(30) == 0 and not producer.errors
            assert producer.acked_count() >= 200
            assert isr(zk, topic) == [1, 2, 3]
        finally:
            zk.stop()
            zk.close()
    finally:
        for sock in idle:
            sock.close()


def test_huge_size_prefixes_leave_memory_bounded_and_requests_fast(start_cluster):
    cluster, status = start_cluster(brokers=1)
    broker = status.broker(1)
    before = rss_mb(broker.pid)
    hostile = open_idle(broker.host, broker.port, 20)
    try:
        for sock in hostile:
            sock.sendall(HUGE_PREFIX)
        time.sleep(1.0)
        client = WireClient(broker.host, broker.port, timeout_s=10)
        try:
            started = time.monotonic()
            assert client.request(metadata_request()).cluster_id
            elapsed_s = time.monotonic() - started
        finally:
            client.close()
        grown = rss_mb(broker.pid) - before
        assert grown < 30, f"RSS grew by {grown:.0f} MB for 20 x 8 bytes received"
        assert elapsed_s < 0.5, f"Metadata took {elapsed_s:.2f} s"
    finally:
        for sock in hostile:
            sock.close()


def test_max_connections_per_ip_refuses_beyond_the_limit_while_others_connect(start_cluster):
    require_tools("kcat")
    cluster, status = start_cluster(brokers=1, overrides={
        "max.connections.per.ip": "20", "max.connections.per.ip.overrides": "127.0.0.2:3"})
    broker = status.broker(1)
    allowed = open_idle(broker.host, broker.port, 3, source="127.0.0.2")
    refused = open_idle(broker.host, broker.port, 1, source="127.0.0.2")[0]
    try:
        assert closed_by_peer(refused, 5.0)
        client = WireClient(broker.host, broker.port, timeout_s=10)       # from 127.0.0.1: its own limit
        try:
            assert client.request(metadata_request()).cluster_id
        finally:
            client.close()
        assert kcat_metadata(broker.host, broker.port)["brokers"]
        for sock in allowed:                                # the three are still served
            sock.settimeout(10)
            wire = WireClient.over(sock)
            assert wire.request(api_versions3.ApiVersionsRequest(
                client_software_name="t", client_software_version="1")).api_keys
    finally:
        for sock in allowed:
            sock.close()
        refused.close()


def test_connections_max_idle_ms_closes_an_idle_connection(start_cluster):
    cluster, status = start_cluster(brokers=1, overrides={"connections.max.idle.ms": "1500"})
    broker = status.broker(1)
    client = WireClient(broker.host, broker.port, timeout_s=10)
    try:
        assert client.request(metadata_request()).cluster_id
        started = time.monotonic()
        assert closed_by_peer(client.sock, 10.0)
        assert 1.0 <= time.monotonic() - started < 5.0
    finally:
        client.close()
