"""Log compaction on a real broker (cleanup.policy=compact): kcat writes keyed
records and tombstones, the cleaner keeps the latest per key at its offset
and drops the tombstones after delete.retention.ms; a keyless record is
refused as Kafka refuses it; a broker killed (SIGKILL) in the middle of a
slow clean comes back with every key's latest value, no duplicate and no
offset changed."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from support.broker_support import KAFKACTL, partition_dir, require_tools, wait_for_leaders
from support.compaction import (
    consume_with_kcat, keyed_rounds, latest_per_key, partition_files, produce_with_kcat, with_offsets,
)
from support.names import unique_topic
from support.waiting import wait_for

FAST_CLEANER = {"log.cleaner.backoff.ms": "200", "log.segment.delete.delay.ms": "100"}


def create_compacted(zookeeper: str, bootstrap: str, topic: str, **configs: str) -> None:
    import subprocess

    settings = {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01", **configs}
    args = [str(KAFKACTL), "-z", zookeeper, "topics", "create", topic, "-p", "1", "-r", "1"]
    for key, value in settings.items():
        args += ["--config", f"{key}={value}"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    wait_for_leaders(bootstrap, topic)


def cleaned_up_to(status, topic: str) -> int:
    """The partition's first dirty offset in its dir's cleaner-offset-checkpoint (0 before any clean)."""
    from kafkactl.cluster.log.checkpoint import OffsetCheckpointFile

    path = partition_dir(status, topic).parent / "cleaner-offset-checkpoint"
    return OffsetCheckpointFile(str(path)).read().get((topic, 0), 0) if path.exists() else 0


def test_the_cleaner_keeps_the_latest_value_per_key_and_drops_tombstones(start_cluster):
    require_tools("kcat")
    _, status = start_cluster(overrides=FAST_CLEANER)
    bootstrap, topic = status.bootstrap_servers, unique_topic("compacted")
    create_compacted(status.zookeeper_connect, bootstrap, topic, **{"segment.bytes": "4096",
                                                                  "delete.retention.ms": "0"})
    written = with_offsets(keyed_rounds(keys=40, rounds=6, tombstones=frozenset({3, 7})))
    filler = with_offsets(keyed_rounds(keys=60, rounds=1, prefix="fill-a"), len(written))
    produce_with_kcat(bootstrap, topic, [r[1:] for r in written + filler])
    everything = written + filler
    # The first clean keeps the tombstones (no clean section yet, so no delete horizon).
    first = wait_for(lambda: (r := consume_with_kcat(bootstrap, topic)) and len(r) < len(everything) and r,
                     20, what="a first clean")
    assert {k for _, k, v in first if v is None} <= {"k00003", "k00007"}
    # More data rolls more segments; once a clean has taken the tombstones into the clean
    # section (its checkpoint passed them), the next clean passes the delete horizon.
    for prefix in ("fill-b", "fill-c"):
        more = with_offsets(keyed_rounds(keys=60, rounds=1, prefix=prefix), len(everything))
        produce_with_kcat(bootstrap, topic, [r[1:] for r in more])
        everything += more
        if prefix == "fill-b":
            wait_for(lambda: cleaned_up_to(status, topic) > len(written), 20, what="the tombstones cleaned once")
    active_base = lambda: int(partition_files(partition_dir(status, topic), ".log")[-1].split(".")[0])  # noqa: E731
    expected = lambda: latest_per_key([r for r in everything if r[0] < active_base()], drop_tombstones=True) + [  # noqa: E731
        r for r in everything if r[0] >= active_base()]
    got = wait_for(lambda: (r := consume_with_kcat(bootstrap, topic)) == expected() and r, 20,
                   what="every key's latest value at its offset, tombstones gone")
    assert not [k for _, k, v in got if v is None]
    assert [k for _, k, _ in got if k.startswith("k")] == sorted(
        f"k{k:05d}" for k in range(40) if k not in (3, 7))


def test_a_keyless_record_is_refused_with_invalid_record(start_cluster):
    from confluent_kafka import KafkaError, Producer

    _, status = start_cluster()
    bootstrap, topic = status.bootstrap_servers, unique_topic("compacted-keyless")
    create_compacted(status.zookeeper_connect, bootstrap, topic)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "retries": 0})
    reports = []
    producer.produce(topic, value=b"no key", partition=0, on_delivery=lambda err, msg: reports.append(err))
    producer.flush(30)   # its own batch: a refusal refuses the whole batch, as Kafka's does
    producer.produce(topic, key=b"k", value=b"keyed", partition=0, on_delivery=lambda err, msg: reports.append(err))
    producer.flush(30)
    assert reports[0] is not None and reports[0].code() == KafkaError.INVALID_RECORD   # 87
    assert reports[1] is None
    assert consume_with_kcat(bootstrap, topic) == [(0, "k", "keyed")]   # nothing of the refused batch


def kafkactl_ok(zookeeper: str, *args: str) -> None:
    import subprocess

    done = subprocess.run([str(KAFKACTL), "-z", zookeeper, *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def cleaner_threads_in_effect(bootstrap: str) -> str:
    """log.cleaner.threads as broker 1 answers DescribeConfigs (the value in effect)."""
    from confluent_kafka.admin import AdminClient, ConfigResource

    resource = ConfigResource(ConfigResource.Type.BROKER, "1")
    admin = AdminClient({"bootstrap.servers": bootstrap})   # kept while the answer comes
    entries = admin.describe_configs([resource])[resource].result(30)
    return entries["log.cleaner.threads"].value


def alter_broker_config(bootstrap: str, name: str, key: str, value: str) -> tuple[int, str | None]:
    """IncrementalAlterConfigs SET of one of a broker's own configs through
    confluent-kafka: (error code, message)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

    resource = ConfigResource(ConfigResource.Type.BROKER, name, incremental_configs=[
        ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)])
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        admin.incremental_alter_configs([resource])[resource].result(30)
    except KafkaException as error:
        return error.args[0].code(), error.args[0].str()
    return 0, None


def stored_broker_configs(zookeeper: str) -> dict[str, dict[str, str]]:
    """/config/brokers/<entity> as stored, per entity."""
    import json

    from kazoo.client import KazooClient

    client = KazooClient(hosts=zookeeper, timeout=10)
    client.start(timeout=10)
    try:
        return {name: json.loads(client.get(f"/config/brokers/{name}")[0])["config"]
                for name in client.get_children("/config/brokers")}
    finally:
        client.stop()
        client.close()


def test_dynamic_cleaner_configs_apply_without_a_restart(start_cluster):
    """A clean crawling at 1 byte/s speeds up when the I/O limit is raised; a
    topic without its own cleanup.policy is compacted once the broker-wide
    default says compact; a thread count beyond twice the one in effect is
    refused whole, as Kafka's broker refuses it: at once through the Admin
    API, when it applies it if written to ZooKeeper directly."""
    require_tools("kcat")
    cluster, status = start_cluster(overrides={**FAST_CLEANER, "log.cleaner.io.max.bytes.per.second": "1"})
    zookeeper, bootstrap = status.zookeeper_connect, status.bootstrap_servers
    crawling, plain = unique_topic("compacted-crawl"), unique_topic("compacted-later")
    create_compacted(zookeeper, bootstrap, crawling, **{"segment.bytes": "4096"})
    kafkactl_ok(zookeeper, "topics", "create", plain, "-p", "1", "-r", "1", "--config", "segment.bytes=4096",
                "--config", "min.cleanable.dirty.ratio=0.01")
    wait_for_leaders(bootstrap, plain)
    for topic in (crawling, plain):
        produce_with_kcat(bootstrap, topic, keyed_rounds(keys=40, rounds=6))
    written = len(keyed_rounds(keys=40, rounds=6))
    assert cleaned_up_to(status, crawling) == 0 and len(consume_with_kcat(bootstrap, crawling)) == written

    kafkactl_ok(zookeeper, "configs", "alter", "--broker-default", "--add", "log.cleaner.io.max.bytes.per.second=1e9",
                "--add", "log.cleanup.policy=compact")
    for topic in (crawling, plain):
        wait_for(lambda t=topic: len(consume_with_kcat(bootstrap, t)) < written, 20, what=f"{topic} compacted")

    # Through the Admin API the broker refuses, at once and writing nothing, what it could not
    # apply, as Kafka's does (INVALID_REQUEST): the default too, checked with broker 1's own.
    refused = subprocess.run([str(KAFKACTL), "-b", bootstrap, "configs", "alter", "--broker-default", "--add",
                              "log.cleaner.threads=5"], capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0
    assert ("Invalid config value for resource ConfigResource(type=BROKER, name=''): log.cleaner.threads 5: "
            "Log cleaner threads cannot be increased to more than double the current value 1") in refused.stderr
    kafkactl_ok(zookeeper, "configs", "alter", "--broker", "1", "--add", "log.cleaner.threads=2")
    wait_for(lambda: cleaner_threads_in_effect(bootstrap) == "2", 20, what="two cleaner threads in effect")
    assert alter_broker_config(bootstrap, "1", "log.cleaner.threads", "5") == (
        42, "Invalid config value for resource ConfigResource(type=BROKER, name='1'): log.cleaner.threads 5: "
            "Log cleaner threads cannot be increased to more than double the current value 2")
    assert stored_broker_configs(zookeeper) == {"1": {"log.cleaner.threads": "2"},
                                                "<default>": {"log.cleaner.io.max.bytes.per.second": "1e9",
                                                              "log.cleanup.policy": "compact"}}
    for threads in ("4", "2"):
        assert alter_broker_config(bootstrap, "1", "log.cleaner.threads", threads) == (0, None)
        wait_for(lambda t=threads: cleaner_threads_in_effect(bootstrap) == t, 20, what=f"{threads} cleaner threads")
    # Written to ZooKeeper directly, the broker refuses it when it applies it (in its log).
    log_file = Path(status.brokers[0].log_file)
    kafkactl_ok(zookeeper, "configs", "alter", "--broker", "1", "--add", "log.cleaner.threads=5")
    wait_for(lambda: "log.cleaner.threads 5: Log cleaner threads cannot be increased to more than double the "
                     "current value 2" in log_file.read_text(errors="replace"), 20, what="the refusal in the log")
    assert cleaner_threads_in_effect(bootstrap) == "2"


@pytest.mark.slow
def test_a_broker_killed_mid_clean_keeps_every_latest_value_and_every_offset(start_cluster):
    require_tools("kcat")
    throttled = {**FAST_CLEANER, "log.cleaner.io.max.bytes.per.second": "150000"}
    cluster, status = start_cluster(overrides=throttled)
    bootstrap, topic = status.bootstrap_servers, unique_topic("compacted-kill")
    # Written as a delete-policy topic, then made compacted: a clean that started while kcat was
    # still writing (seen under load) would leave the first segment holding every key's then
    # latest value, never half its size.
    create_compacted(status.zookeeper_connect, bootstrap, topic,
                     **{"segment.bytes": "65536", "cleanup.policy": "delete"})
    written = with_offsets(keyed_rounds(keys=300, rounds=12, value_bytes=200))     # ~850 KB
    produce_with_kcat(bootstrap, topic, [r[1:] for r in written])
    directory = partition_dir(status, topic)
    first_segment = directory / "00000000000000000000.log"
    full_size = first_segment.stat().st_size
    kafkactl_ok(status.zookeeper_connect, "configs", "alter", "--topic", topic, "--add", "cleanup.policy=compact")
    # The first group's copy is in place (smaller) while the throttled clean goes on with the others.
    wait_for(lambda: first_segment.stat().st_size < full_size / 2, 60, what="a first group cleaned")
    assert partition_files(directory, ".log")[-1] != "00000000000000000000.log"
    cluster.kill_broker(1)
    status = cluster.up()
    bootstrap = status.bootstrap_servers
    wait_for_leaders(bootstrap, topic)
    got = consume_with_kcat(bootstrap, topic)
    offsets = [r[0] for r in got]
    assert offsets == sorted(set(offsets)), "a duplicated offset"
    original = {r[0]: r for r in written}
    assert all(original[r[0]] == r for r in got), "a record changed its offset, key or value"
    assert latest_per_key(got, drop_tombstones=False) == latest_per_key(written, drop_tombstones=False)
    assert len(got) < len(written)   # the clean did take effect before the kill
