"""`kafkactl configs` as a subprocess against a real broker: a retention change takes effect."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from kafkactl.cluster.local import LocalCluster

KAFKACTL = Path(sys.executable).parent / "kafkactl"


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


def test_topic_retention_set_by_configs_alter_is_applied_by_the_broker(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("KAFKACTL_ZOOKEEPER", "KAFKACTL_BROKER_MODULE")}
    env.update(KAFKACTL_CONFIG=str(tmp_path / "config.json"), XDG_STATE_HOME=str(tmp_path / "state"))
    directory = tmp_path / "cluster"
    try:
        status = json.loads(ok(env, "cluster", "up", "--brokers", "1", "--dir", str(directory),
                               "--config", "log.retention.check.interval.ms=500", "-o", "json").stdout)
        bootstrap = status["bootstrap_servers"]
        ok(env, "topics", "create", "kept", "--partitions", "1", "--replication-factor", "1")
        produce(bootstrap, "kept", 0, 5)
        assert earliest_offset(bootstrap, "kept") == 0

        ok(env, "configs", "alter", "--topic", "kept", "--add", "retention.ms=1000", "--add", "segment.ms=200")
        described = json.loads(ok(env, "configs", "describe", "--topic", "kept", "-o", "json").stdout)
        assert {r["key"]: (r["value"], r["source"]) for r in described}["retention.ms"] == ("1000", "override")

        # The old segment rolls on the next append after segment.ms, then
        # retention deletes it once it is older than retention.ms.
        time.sleep(1.5)
        produce(bootstrap, "kept", 5, 1)
        deadline = time.monotonic() + 20
        while earliest_offset(bootstrap, "kept") == 0 and time.monotonic() < deadline:
            time.sleep(0.5)
        assert earliest_offset(bootstrap, "kept") == 5

        # A refused change writes nothing and names the key.
        bad = run(env, "configs", "alter", "--topic", "kept", "--add", "retention.ms=soon")
        assert bad.returncode == 2 and "retention.ms: invalid value 'soon'" in bad.stderr
        assert {r["key"]: r["value"] for r in json.loads(ok(env, "configs", "describe", "--topic", "kept",
                                                             "-o", "json").stdout)}["retention.ms"] == "1000"

        ok(env, "configs", "alter", "--broker", "1", "--add", "leader.replication.throttled.rate=1048576")
        rows = json.loads(ok(env, "configs", "describe", "--broker", "1", "-o", "json").stdout)
        assert rows == [{"key": "leader.replication.throttled.rate", "value": "1048576", "source": "broker 1"}]
    finally:
        LocalCluster(directory).down(timeout_s=10)
