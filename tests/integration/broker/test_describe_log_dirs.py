"""DescribeLogDirs, DescribeConfigs and ListOffsets(replica_id -2) as real clients see them.

kafka-python's describe_log_dirs and confluent-kafka's describe_configs
decode the broker's answers with their own codecs, so these check the wire
format, not just our own reading of it.
"""

from __future__ import annotations

from support.names import unique_topic
from support.waiting import wait_for
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, ConfigResource

from kafkactl.cluster.admin import broker_queries as bq


def produce(status, topic: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": status.bootstrap_servers, "acks": "all", "linger.ms": 5})
    for i in range(count):
        producer.produce(topic, f"value-{i}".encode() * 10)
    assert producer.flush(30) == 0


def create_topic(status, topic: str, replicas: list[int]) -> None:
    """Through ZooKeeper, the way kafka-topics.sh does; wait for the full ISR."""
    from kafkactl.cluster.admin.topics import create_topic as write_topic
    from kafkactl.cluster.admin.topics import describe_topics
    from kafkactl.cluster.zk.client import connect

    zk = connect(status.zookeeper_connect)
    try:
        write_topic(zk, topic, {0: replicas}, {})
        wait_for(lambda: describe_topics(zk, [topic])[topic][0].isr == replicas, 30, what="a full ISR")
    finally:
        zk.stop()
        zk.close()


def test_kafka_python_describe_log_dirs_sees_our_partitions_and_dirs(shared_cluster):
    from kafka.admin import KafkaAdminClient

    _, status = shared_cluster
    topic = unique_topic("logdirs")
    create_topic(status, topic, [status.brokers[0].id])
    produce(status, topic, 200)
    admin = KafkaAdminClient(bootstrap_servers=status.bootstrap_servers, request_timeout_ms=10000)
    try:
        [answer] = admin.describe_log_dirs()
    finally:
        admin.close()
    dirs = {d["log_dir"]: d for d in answer["log_dirs"]}
    assert set(dirs) == set(status.brokers[0].log_dirs)
    sizes = {(t["name"], p["partition_index"]): p["partition_size"]
             for d in dirs.values() for t in d["topics"] for p in t["partitions"]}
    assert sizes[(topic, 0)] > 200 * 70
    assert all(d["error_code"] == 0 for d in dirs.values())
    # v4 (both sides speak it): the volume's size and what is left of it.
    assert all(d["total_bytes"] >= d["usable_bytes"] > 0 for d in dirs.values())


def test_confluent_describe_configs_of_the_broker_has_its_log_dir_media(shared_cluster):
    _, status = shared_cluster
    broker = status.brokers[0]
    admin = AdminClient({"bootstrap.servers": status.bootstrap_servers})
    resource = ConfigResource(ConfigResource.Type.BROKER, str(broker.id))
    configs = admin.describe_configs([resource])[resource].result(30)
    ssd, hdd = broker.log_dirs
    assert configs["log.dir.media"].value == f"{ssd}:ssd,{hdd}:hdd"
    assert configs["broker.id"].value == str(broker.id)
    assert configs["listeners"].value.startswith("PLAINTEXT://")
    assert configs["log.retention.ms"].is_default


def test_a_follower_tells_its_own_log_end_offset_to_the_debugging_replica_id(start_cluster):
    _, status = start_cluster(brokers=2)
    topic = unique_topic("leo")
    create_topic(status, topic, [1, 2])
    produce(status, topic, 50)
    addresses = [bq.BrokerAddress(b.id, b.host, b.port) for b in status.brokers]

    def offsets():
        answers = bq.ask_brokers(addresses, bq.log_end_offsets([(topic, 0)]), 5)
        return {b: answers[b][(topic, 0)] for b in answers}

    wait_for(lambda: offsets()[2].offset == 50, 20, what="the follower to have all 50")
    assert offsets() == {1: bq.OffsetAnswer(50, None), 2: bq.OffsetAnswer(50, None)}
