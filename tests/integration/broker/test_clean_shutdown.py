"""SIGTERM is a clean shutdown: the broker deregisters from ZooKeeper at once,
leaves Kafka's clean-shutdown marker and offset checkpoints in every log dir,
and serves everything again after a restart."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from support.broker_support import kafka_python_consume, log_tail, partition_dir, wait_for_leaders, watermarks
from support.names import unique_topic
from kazoo.client import KazooClient

COUNTS = {"big": 1000, "small": 10}


def _produce(bootstrap: str, topics: dict[str, str]) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        for name, topic in topics.items():
            for i in range(COUNTS[name]):
                producer.send(topic, key=b"%d" % i, value=b"%s-%d" % (name.encode(), i), partition=0)
        producer.flush()
    finally:
        producer.close()


def _read_checkpoint(path: Path) -> dict[tuple[str, int], int]:
    """Kafka's offset checkpoint: `0`, the entry count, then `topic partition offset` lines."""
    lines = path.read_text().split("\n")
    assert lines[-1] == "", f"{path} does not end with a newline"
    lines = lines[:-1]
    assert lines[0] == "0", f"{path}: version line {lines[0]!r}"
    assert int(lines[1]) == len(lines) - 2, f"{path}: count {lines[1]} for {len(lines) - 2} entries"
    entries = {}
    for line in lines[2:]:
        topic, partition, offset = line.split(" ")
        entries[(topic, int(partition))] = int(offset)
    assert len(entries) == len(lines) - 2, f"{path}: duplicate entries"
    return entries


def test_sigterm_deregisters_writes_checkpoints_and_restarts_clean(start_cluster):
    cluster, status = start_cluster(brokers=1)
    bootstrap = status.bootstrap_servers
    topics = {name: unique_topic(f"clean-{name}") for name in COUNTS}
    _produce(bootstrap, topics)
    home = {name: partition_dir(status, topic).parent for name, topic in topics.items()}

    zk = KazooClient(hosts=status.zookeeper_connect)
    zk.start(timeout=15)
    try:
        deleted = threading.Event()
        deleted_at = []

        def on_change(event):
            if event.type == "DELETED":
                deleted_at.append(time.monotonic())
                deleted.set()

        assert zk.exists("/brokers/ids/1", watch=on_change) is not None
        started = time.monotonic()
        cluster.stop_broker(1)
        exited = time.monotonic() - started
        assert deleted.wait(5), "/brokers/ids/1 still there after the broker stopped"
        # A crash would leave the znode for the session timeout (18 s).
        assert deleted_at[0] - started < 3.0, f"deregistered {deleted_at[0] - started:.1f} s after SIGTERM"
        assert zk.exists("/brokers/ids/1") is None
    finally:
        zk.stop()
        zk.close()
    assert exited < 10, f"the broker took {exited:.1f} s to stop"
    assert "stopped cleanly" in Path(status.broker(1).log_file).read_text(), log_tail(status.broker(1).log_file)

    expected = {(topic, 0): COUNTS[name] for name, topic in topics.items()}
    seen = {}
    for log_dir in map(Path, status.broker(1).log_dirs):
        here = {tp: n for tp, n in expected.items() if home[_name(topics, tp[0])] == log_dir}
        seen.update(here)
        assert (log_dir / ".kafka_cleanshutdown").exists(), f"no clean-shutdown marker in {log_dir}"
        assert _read_checkpoint(log_dir / "recovery-point-offset-checkpoint") == here, log_dir
        assert _read_checkpoint(log_dir / "replication-offset-checkpoint") == here, log_dir
        assert _read_checkpoint(log_dir / "log-start-offset-checkpoint") == {tp: 0 for tp in here}
    assert seen == expected  # each partition checkpointed in the dir that holds it

    restarted = cluster.up()
    assert restarted.broker(1).alive
    wait_for_leaders(bootstrap, *topics.values())
    for log_dir in restarted.broker(1).log_dirs:
        assert not (Path(log_dir) / ".kafka_cleanshutdown").exists(), "marker kept after start-up"
    for name, topic in topics.items():
        assert watermarks(bootstrap, topic) == (0, COUNTS[name])
        records = kafka_python_consume(bootstrap, topic, COUNTS[name])
        assert [(r.offset, r.key, r.value) for r in records] == [
            (i, b"%d" % i, b"%s-%d" % (name.encode(), i)) for i in range(COUNTS[name])]


def _name(topics: dict[str, str], topic: str) -> str:
    return next(name for name, t in topics.items() if t == topic)
