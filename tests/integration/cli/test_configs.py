"""`kafkactl configs` as a subprocess against a real broker: a retention change
takes effect, and dynamic broker configs apply without a restart, the
broker's own over the cluster-wide default. Both run through both back ends
(-z and -b: support/backends.py), each on a one-broker cluster of its own."""

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kafkactl.cluster.local import LocalCluster
from support.backends import BACKENDS, address_args
from support.sockets import closed_by_peer
from support.waiting import wait_for

KAFKACTL = Path(sys.executable).parent / "kafkactl"
WAIT_S = 20


def run(env, *args):
    return subprocess.run([str(KAFKACTL), *args], capture_output=True, text=True, env=env, timeout=120)


def ok(env, *args):
    done = run(env, *args)
    assert done.returncode == 0, f"kafkactl {' '.join(args)} exited {done.returncode}:\n{done.stderr}"
    return done


def earliest_offset(bootstrap, topic):
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, request_timeout_ms=10000)
    try:
        tp = TopicPartition(topic, 0)
        return consumer.beginning_offsets([tp])[tp]
    finally:
        consumer.close()


def produce(bootstrap, topic, first, count):
    lines = "".join(f"m{i}\n" for i in range(first, first + count))
    subprocess.run(["kcat", "-b", bootstrap, "-t", topic, "-P", "-X", "acks=all"], input=lines, text=True,
                   check=True, timeout=60)


@pytest.mark.parametrize("backend", BACKENDS)
def test_topic_retention_set_by_configs_alter_is_applied_by_the_broker(tmp_path, backend):
    env = {k: v for k, v in os.environ.items() if k not in ("KAFKACTL_ZOOKEEPER", "KAFKACTL_BROKER_MODULE")}
    env.update(KAFKACTL_CONFIG=str(tmp_path / "config.json"), XDG_STATE_HOME=str(tmp_path / "state"))
    directory = tmp_path / "cluster"
    try:
        status = json.loads(ok(env, "cluster", "up", "--brokers", "1", "--dir", str(directory),
                               "--config", "log.retention.check.interval.ms=500", "-o", "json").stdout)
        via = address_args(backend, status)
        bootstrap = status["bootstrap_servers"]
        ok(env, *via, "topics", "create", "kept", "--partitions", "1", "--replication-factor", "1")
        produce(bootstrap, "kept", 0, 5)
        assert earliest_offset(bootstrap, "kept") == 0

        ok(env, *via, "configs", "alter", "--topic", "kept", "--add", "retention.ms=1000", "--add", "segment.ms=200")
        described = json.loads(ok(env, *via, "configs", "describe", "--topic", "kept", "-o", "json").stdout)
        assert {r["key"]: (r["value"], r["source"]) for r in described}["retention.ms"] == ("1000", "override")

        # The old segment rolls on the next append after segment.ms, then
        # retention deletes it once it is older than retention.ms.
        time.sleep(1.5)
        produce(bootstrap, "kept", 5, 1)
        wait_for(lambda: earliest_offset(bootstrap, "kept") == 5, WAIT_S, "retention to delete the old segment",
                 interval_s=0.5)

        # A refused change writes nothing and names the key.
        bad = run(env, *via, "configs", "alter", "--topic", "kept", "--add", "retention.ms=soon")
        assert bad.returncode == 2 and "retention.ms: invalid value 'soon'" in bad.stderr
        assert {r["key"]: r["value"] for r in json.loads(ok(env, *via, "configs", "describe", "--topic", "kept",
                                                             "-o", "json").stdout)}["retention.ms"] == "1000"

        ok(env, *via, "configs", "alter", "--broker", "1", "--add", "leader.replication.throttled.rate=1048576")
        rows = json.loads(ok(env, *via, "configs", "describe", "--broker", "1", "-o", "json").stdout)
        assert rows == [{"key": "leader.replication.throttled.rate", "value": "1048576", "source": "broker 1",
                         "applied": True, "note": ""}]
    finally:
        LocalCluster(directory).down(timeout_s=10)


def produce_acks_all(producer, topic):
    """One message with acks=all and no retry: None, or the error's name."""
    errors = []
    producer.produce(topic, b"v", callback=lambda error, message: errors.append(error))
    producer.flush(15)
    return errors[0].name() if errors and errors[0] else None


def third_connection_refused(host, port, source):
    """Three connections from `source`: the first two kept, the third closed by the broker."""
    sockets = [socket.create_connection((host, port), timeout=5, source_address=(source, 0)) for _ in range(3)]
    try:
        return closed_by_peer(sockets[2], 2.0) and not closed_by_peer(sockets[0], 0.2)
    finally:
        for sock in sockets:
            sock.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_dynamic_broker_configs_apply_without_a_restart_the_broker_own_over_the_default(tmp_path, backend):
    from confluent_kafka import Producer

    from support.local_cluster import zk_tree

    env = {k: v for k, v in os.environ.items() if k not in ("KAFKACTL_ZOOKEEPER", "KAFKACTL_BROKER_MODULE")}
    env.update(KAFKACTL_CONFIG=str(tmp_path / "config.json"), XDG_STATE_HOME=str(tmp_path / "state"))
    directory = tmp_path / "cluster"
    try:
        status = json.loads(ok(env, "cluster", "up", "--brokers", "1", "--dir", str(directory), "-o", "json").stdout)
        via = address_args(backend, status)
        broker = status["brokers"][0]
        ok(env, *via, "topics", "create", "orders", "--partitions", "1", "--replication-factor", "1")
        producer = Producer({"bootstrap.servers": status["bootstrap_servers"], "acks": "all", "retries": 0,
                             "message.timeout.ms": 5000})
        wait_for(lambda: produce_acks_all(producer, "orders") is None, WAIT_S, "the topic to take writes")

        # Cluster-wide: a one-replica topic cannot meet min.insync.replicas=2.
        ok(env, *via, "configs", "alter", "--broker-default", "--add", "min.insync.replicas=2")
        wait_for(lambda: produce_acks_all(producer, "orders") == "NOT_ENOUGH_REPLICAS", WAIT_S,
                 "the cluster-wide min.insync.replicas to apply")
        # The broker's own value wins over the cluster-wide one...
        ok(env, *via, "configs", "alter", "--broker", "1", "--add", "min.insync.replicas=1")
        wait_for(lambda: produce_acks_all(producer, "orders") is None, WAIT_S,
                 "broker 1's own min.insync.replicas")
        rows = {r["key"]: r for r in json.loads(ok(env, *via, "configs", "describe", "--broker", "1",
                                                    "-o", "json").stdout)}
        assert rows["min.insync.replicas"] == {"key": "min.insync.replicas", "value": "1", "source": "broker 1",
                                               "applied": True, "note": ""}
        # The cluster-wide value is still there under it (-b: a synonym of broker 1's value).
        defaults = json.loads(ok(env, *via, "configs", "describe", "--broker-default", "-o", "json").stdout)
        assert {r["key"]: r["value"] for r in defaults}["min.insync.replicas"] == "2"
        # ... and deleting it brings the cluster-wide value back.
        ok(env, *via, "configs", "alter", "--broker", "1", "--delete", "min.insync.replicas")
        wait_for(lambda: produce_acks_all(producer, "orders") == "NOT_ENOUGH_REPLICAS", WAIT_S,
                 "the cluster-wide value again")

        # Per broker: a connection limit for one address, taken by the running broker.
        host, port = broker["host"], broker["port"]
        assert not third_connection_refused(host, port, "127.0.0.2")
        ok(env, *via, "configs", "alter", "--broker", "1", "--add", "max.connections.per.ip.overrides=127.0.0.2:2")
        wait_for(lambda: third_connection_refused(host, port, "127.0.0.2"), WAIT_S,
                 "max.connections.per.ip.overrides to apply")
        ok(env, *via, "configs", "alter", "--broker", "1", "--delete", "max.connections.per.ip.overrides")
        wait_for(lambda: not third_connection_refused(host, port, "127.0.0.2"), WAIT_S, "the limit to be lifted")

        # A refused change writes nothing and says why in one line.
        before = zk_tree(status["zookeeper"])
        bad = run(env, *via, "configs", "alter", "--broker-default", "--add", "log.retention.ms=86400000",
                  "--add", "listeners=PLAINTEXT://:9093")
        assert bad.returncode == 2 and bad.stderr.strip() == (
            "kafkactl: error: --add listeners: a per-broker config: Kafka refuses it cluster-wide, give --broker ID")
        assert zk_tree(status["zookeeper"]) == before
    finally:
        LocalCluster(directory).down(timeout_s=10)
