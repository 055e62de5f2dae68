"""Admin operations carried out by the controller, triggered the Kafka way
through ZooKeeper, on real broker processes."""

from __future__ import annotations

import re
from pathlib import Path

from kazoo.client import KazooClient

from kafkactl.cluster.admin.topics import create_topic, describe_topics
from kafkactl.cluster.zk import codecs, layout
from support.waiting import wait_for

SESSION = {"zookeeper.session.timeout.ms": "4000"}




def zookeeper(status) -> KazooClient:
    client = KazooClient(hosts=status.zookeeper_connect, timeout=10)
    client.start(timeout=10)
    return client


def partition_dirs(status, broker_id: int, topic: str) -> list[Path]:
    """Live partition dirs; a deleted one is renamed `<t>-<p>.<id>-delete` at once
    and removed after file.delete.delay.ms, as Kafka does."""
    return [p for d in status.broker(broker_id).log_dirs for p in Path(d).glob(f"{topic}-*")
            if re.fullmatch(rf"{re.escape(topic)}-\d+", p.name)]


def test_topic_deletion_removes_logs_and_znodes_even_with_a_broker_down(start_cluster):
    cluster, status = start_cluster(brokers=3, overrides=SESSION)
    zk = zookeeper(status)
    try:
        create_topic(zk, "doomed", {0: [1, 2, 3], 1: [2, 3, 1]}, {"retention.ms": "3600000"})
        wait_for(lambda: all(p.leader >= 0 for p in describe_topics(zk, ["doomed"])["doomed"]), 20, "leaders")
        wait_for(lambda: all(len(partition_dirs(status, b, "doomed")) == 2 for b in (1, 2, 3)), 20, "logs")
        cluster.kill_broker(3)
        wait_for(lambda: zk.exists(layout.broker(3)) is None, 20, "broker 3's session to expire")

        zk.create(layout.delete_topic("doomed"), makepath=True)
        wait_for(lambda: not partition_dirs(status, 1, "doomed") and not partition_dirs(status, 2, "doomed"),
                 30, "the live replicas to be deleted")
        assert zk.exists(layout.topic("doomed")) is not None, "not finished while a replica is down"
        assert partition_dirs(status, 3, "doomed"), "the down broker still has its copy"

        cluster.up()  # broker 3 returns: the deletion completes there too
        wait_for(lambda: zk.exists(layout.topic("doomed")) is None, 30, "the topic znode to go")
        assert zk.exists(layout.delete_topic("doomed")) is None
        assert zk.exists(layout.topic_config("doomed")) is None
        wait_for(lambda: not partition_dirs(status, 3, "doomed"), 30, "broker 3's replicas to be deleted")
    finally:
        zk.stop()
        zk.close()


def test_preferred_replica_election_moves_leaders_back(start_cluster):
    cluster, status = start_cluster(brokers=3, overrides={**SESSION, "auto.leader.rebalance.enable": "false"})
    zk = zookeeper(status)
    try:
        create_topic(zk, "pref", {0: [1, 2, 3]}, {})
        leader = lambda: describe_topics(zk, ["pref"])["pref"][0].leader
        wait_for(lambda: leader() == 1, 20, "broker 1 to lead")
        cluster.stop_broker(1)              # controlled shutdown moves the leadership away
        wait_for(lambda: leader() in (2, 3), 20, "a new leader")
        cluster.up()
        wait_for(lambda: 1 in describe_topics(zk, ["pref"])["pref"][0].isr, 30, "broker 1 back in the ISR")
        # The controller learns of the leader's ISR change from its
        # notification, which it deletes once read: until then it still sees
        # broker 1 out of the ISR, and (as Kafka) gives up on electing it.
        wait_for(lambda: not zk.get_children(layout.ISR_CHANGE_NOTIFICATION), 30,
                 "the controller to read the ISR change")
        assert leader() != 1

        zk.create(layout.PREFERRED_REPLICA_ELECTION, codecs.encode_partition_list([("pref", 0)]))
        wait_for(lambda: leader() == 1, 20, "the preferred leader")
        wait_for(lambda: zk.exists(layout.PREFERRED_REPLICA_ELECTION) is None, 20, "the trigger to be deleted")
    finally:
        zk.stop()
        zk.close()


def test_topic_config_changes_apply_through_config_changes(start_cluster):
    from confluent_kafka import Producer

    cluster, status = start_cluster(brokers=2, overrides=SESSION)
    zk = zookeeper(status)
    try:
        create_topic(zk, "tuned", {0: [1, 2]}, {"min.insync.replicas": "2"})
        wait_for(lambda: describe_topics(zk, ["tuned"])["tuned"][0].isr == [1, 2], 20, "a full ISR")
        producer = Producer({"bootstrap.servers": status.bootstrap_servers, "acks": "all",
                             "message.timeout.ms": 5000, "retries": 0})

        def produce() -> str | None:
            errors = []
            producer.produce("tuned", b"v", callback=lambda err, msg: errors.append(err))
            producer.flush(10)
            return errors[0].name() if errors[0] else None

        assert produce() is None
        cluster.stop_broker(2)  # the ISR drops to [1], below min.insync.replicas=2
        wait_for(lambda: describe_topics(zk, ["tuned"])["tuned"][0].isr == [1], 20, "the ISR to shrink")
        assert produce() == "NOT_ENOUGH_REPLICAS"

        # Kafka's way: rewrite the entity's config, then announce it.
        zk.set(layout.topic_config("tuned"), codecs.encode_entity_config({"min.insync.replicas": "1"}))
        zk.create(layout.CONFIG_CHANGE_PREFIX, codecs.encode_config_change("topics/tuned"), sequence=True)
        wait_for(lambda: produce() is None, 20, "the new min.insync.replicas to apply")
    finally:
        zk.stop()
        zk.close()
