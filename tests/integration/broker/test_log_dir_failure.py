"""A log dir that fails while the broker serves (Kafka's KIP-112, ZooKeeper
mode): on real ZooKeeper and broker processes, a log dir of broker 1 is a
small tmpfs that an acks=all idempotent producer fills until its appends
fail with ENOSPC.

- With a second, healthy log dir, broker 1 runs on: the failed dir answers
  KAFKA_STORAGE_ERROR in DescribeLogDirs, the controller (told through
  /log_dir_event_notification, which it empties) moves the partition's
  leadership off broker 1 and takes broker 1 out of its ISR, broker 1 goes
  on serving the partition in its other dir, and every acknowledged message
  is read back in order, once.
- With that dir as its only one, broker 1 halts (a non-zero exit status)
  and the partition stays available on the other brokers.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from kazoo.client import KazooClient
from support.broker_support import kafka_python_consume, log_tail, watermarks
from support.names import unique_topic
from support.producers import BackgroundProducer
from support.waiting import wait_for

from kafkactl.cluster.admin import broker_queries as bq
from kafkactl.cluster.admin.topics import create_topic, describe_topics
from kafkactl.cluster.local import procs, state
from kafkactl.cluster.zk import layout

OVERRIDES = {
    "zookeeper.session.timeout.ms": "4000",
    "auto.leader.rebalance.enable": "false",
    "log.segment.bytes": "262144",
}
TMPFS_SIZE = "1m"
TOPIC_CONFIG = {"min.insync.replicas": "2"}


def value_of(index: int) -> bytes:
    return b"message-%08d-" % index + b"z" * 1000


@contextlib.contextmanager
def tmpfs_at(path: str, size: str = TMPFS_SIZE):
    """A tmpfs of `size` mounted over `path`, holding copies of the files
    there; unmounted at the end, whatever happened."""
    saved = Path(tempfile.mkdtemp(prefix="logdir-"))
    for entry in Path(path).iterdir():
        if entry.is_file():
            shutil.copy2(entry, saved / entry.name)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", path], check=True, timeout=30)
    try:
        for entry in saved.iterdir():
            shutil.copy2(entry, Path(path) / entry.name)
        yield path
    finally:
        subprocess.run(["umount", "-l", path], check=False, timeout=30)
        shutil.rmtree(saved, ignore_errors=True)


def log_dirs_of(status, broker_id: int = 1) -> dict[str, bq.LogDirInfo]:
    broker = status.broker(broker_id)
    answer = bq.ask_brokers([bq.BrokerAddress(broker_id, broker.host, broker.port)], bq.describe_log_dirs, 10)
    answer = answer[broker_id]
    assert isinstance(answer, list), answer
    return {d.path: d for d in answer}


def partition_state(zk, topic: str):
    return describe_topics(zk, [topic])[topic][0]


def start_producer(bootstrap: str, topic: str) -> BackgroundProducer:
    producer = BackgroundProducer(bootstrap, topic, value_of, linger_ms=5, burst=50, pause_s=0.05,
                                  config={"retry.backoff.ms": 100, "topic.metadata.refresh.interval.ms": 1000})
    producer.start()
    return producer


def check_every_acknowledged_message(bootstrap: str, topic: str, producer: BackgroundProducer) -> None:
    earliest, latest = watermarks(bootstrap, topic)
    assert earliest == 0
    records = kafka_python_consume(bootstrap, topic, latest, timeout_s=30)
    assert [r.offset for r in records] == list(range(latest)), "offsets with gaps or repeats"
    values = [r.value for r in records]
    assert len(set(values)) == len(values), "a message stored twice (the producer is idempotent)"
    by_offset = {r.offset: r.value for r in records}
    lost = [(i, o) for i, o in producer.acknowledged.items() if by_offset.get(o) != value_of(i)]
    assert lost == [], f"{len(lost)} acknowledged messages not at their offsets, e.g. {lost[:5]}"
    in_order = [o for _, o in sorted(producer.acknowledged.items())]
    assert in_order == sorted(in_order), "acknowledged messages out of the order they were sent in"


def connect(status) -> KazooClient:
    zk = KazooClient(hosts=status.zookeeper_connect, timeout=10)
    zk.start(timeout=10)
    return zk


def test_a_failed_log_dir_goes_offline_and_the_broker_serves_on(start_cluster):
    cluster, status = start_cluster(brokers=3, overrides=OVERRIDES)
    bootstrap = status.bootstrap_servers
    healthy_dir, small_dir = status.broker(1).log_dirs
    sick, healthy = unique_topic("sick"), unique_topic("healthy")
    zk = connect(status)
    try:
        with tmpfs_at(small_dir):
            create_topic(zk, healthy, {0: [1, 2, 3]}, TOPIC_CONFIG)
            create_topic(zk, sick, {0: [1, 2, 3]}, TOPIC_CONFIG)
            wait_for(lambda: all((t, 0) in log_dirs_of(status)[healthy_dir].partition_sizes for t in (sick, healthy)),
                     30, "both partitions on broker 1's healthy dir")
            # Broker 1's replica of `sick` moves to the small dir (empty: the move is a swap).
            broker = status.broker(1)
            moved = bq.ask_brokers([bq.BrokerAddress(1, broker.host, broker.port)],
                                   bq.alter_replica_log_dirs({(sick, 0): small_dir}), 10)[1]
            assert moved == {(sick, 0): None}, moved
            wait_for(lambda: (sick, 0) in log_dirs_of(status)[small_dir].partition_sizes, 30,
                     f"{sick}-0 in the small dir")
            assert partition_state(zk, sick).leader == 1

            producer = start_producer(bootstrap, sick)
            try:
                started = time.monotonic()
                wait_for(lambda: log_dirs_of(status)[small_dir].error is not None, 60,
                         "the small dir to fill up and go offline",
                         diagnose=lambda: log_tail(status.broker(1).log_file))
                filled_s = time.monotonic() - started
                assert log_dirs_of(status)[small_dir].error == "kafka_storage_error"
                wait_for(lambda: partition_state(zk, sick).leader not in (1, -1)
                         and 1 not in partition_state(zk, sick).isr, 30,
                         "leadership of the sick partition off broker 1, and broker 1 out of its ISR",
                         diagnose=lambda: str(partition_state(zk, sick)))
                after = producer.acked_count()
                wait_for(lambda: producer.acked_count() >= after + 200, 30, "acknowledgements from the new leader")
            finally:
                remaining = producer.stop_and_flush(60)
            assert remaining == 0 and producer.errors == [], producer.errors[:5]
            assert producer.acked_count() > 500, "the small dir held too little to be a test"

            # The controller read and deleted the notification(s).
            wait_for(lambda: zk.get_children(layout.LOG_DIR_EVENT_NOTIFICATION) == [], 10,
                     "no log dir event notification left")
            state_after = partition_state(zk, sick)
            assert 1 not in state_after.isr and sorted(state_after.isr) == [2, 3]
            assert cluster.status().broker(1).alive, "broker 1 halted with a healthy log dir left"
            dirs = log_dirs_of(status)
            assert dirs[small_dir].error == "kafka_storage_error" and not dirs[small_dir].partition_sizes
            # Broker 1 answers its offline replica with KAFKA_STORAGE_ERROR (ListOffsets as a replica asks).
            broker = status.broker(1)
            offsets = bq.ask_brokers([bq.BrokerAddress(1, broker.host, broker.port)],
                                     bq.log_end_offsets([(sick, 0), (healthy, 0)]), 10)[1]
            assert offsets[(sick, 0)].error == "kafka_storage_error" and offsets[(healthy, 0)].error is None
            assert dirs[healthy_dir].error is None and (healthy, 0) in dirs[healthy_dir].partition_sizes

            # Broker 1 still leads its partition on the healthy dir, which keeps
            # its full ISR: an acks=all producer is served there.
            assert partition_state(zk, healthy).leader == 1
            other = start_producer(bootstrap, healthy)
            try:
                wait_for(lambda: other.acked_count() >= 300, 30, "acknowledgements from broker 1's healthy dir")
            finally:
                assert other.stop_and_flush(30) == 0 and other.errors == [], other.errors[:5]
            assert sorted(partition_state(zk, healthy).isr) == [1, 2, 3]
            check_every_acknowledged_message(bootstrap, healthy, other)

            check_every_acknowledged_message(bootstrap, sick, producer)
            print(f"small dir offline {filled_s:.1f} s after the producer started; "
                  f"{producer.acked_count()} messages acknowledged")
            cluster.stop_broker(1)     # before the tmpfs goes: nothing of it is left open
    finally:
        zk.stop()
        zk.close()


def only_log_dir(cluster, broker_id: int) -> str:
    """Broker `broker_id` keeps its first log dir only (cluster.json, then
    its server.properties on the next `up`); returns that dir."""
    spec = state.load(cluster.layout)
    broker = next(b for b in spec.brokers if b.id == broker_id)
    broker.log_dirs = broker.log_dirs[:1]
    state.save(cluster.layout, spec)
    return broker.log_dirs[0].path


def test_a_broker_whose_only_log_dir_fails_halts(start_cluster):
    cluster, status = start_cluster(brokers=3, overrides=OVERRIDES)
    bootstrap = status.bootstrap_servers
    cluster.stop_broker(1)
    only_dir = only_log_dir(cluster, 1)
    topic = unique_topic("only")
    zk = connect(status)
    try:
        with tmpfs_at(only_dir):
            status = cluster.up()
            assert status.broker(1).log_dirs == (only_dir,)
            pid = status.broker(1).pid
            create_topic(zk, topic, {0: [1, 2, 3]}, TOPIC_CONFIG)
            wait_for(lambda: partition_state(zk, topic).leader == 1 and len(partition_state(zk, topic).isr) == 3,
                     30, "broker 1 leading with the full ISR")
            producer = start_producer(bootstrap, topic)
            try:
                wait_for(lambda: procs.exit_code(pid) is not None, 60, "broker 1 to halt",
                         diagnose=lambda: log_tail(status.broker(1).log_file))
                assert procs.exit_code(pid) != 0
                log_text = Path(status.broker(1).log_file).read_text(errors="replace")
                assert "Shutdown broker because all log dirs in" in log_text
                # Its session ends; the controller elects another leader.
                wait_for(lambda: partition_state(zk, topic).leader in (2, 3), 30, "a leader on broker 2 or 3")
                after = producer.acked_count()
                wait_for(lambda: producer.acked_count() >= after + 200, 30, "acknowledgements after the halt")
            finally:
                remaining = producer.stop_and_flush(60)
            assert remaining == 0 and producer.errors == [], producer.errors[:5]
            assert not cluster.status().broker(1).alive
            check_every_acknowledged_message(bootstrap, topic, producer)
    finally:
        zk.stop()
        zk.close()
        os.sync()
