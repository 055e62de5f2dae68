"""rolling.py: the rolling restart's order and health gates, from literal inputs."""

from __future__ import annotations

from kafkactl.cluster.admin.topics import PartitionInfo
from kafkactl.cluster.deploy.rolling import (
    Healthy, Unhealthy, broker_health, broker_order, parse_srvr_mode, zookeeper_health, zookeeper_order,
)


def partition(topic, index, leader, isr, replicas=(1, 2, 3)):
    return PartitionInfo(topic, index, list(replicas), leader, 0, list(isr))


def test_zookeeper_followers_go_before_the_leader_in_inventory_order():
    assert zookeeper_order({"a": "leader", "b": "follower", "c": "follower"}) == ["b", "c", "a"]
    assert zookeeper_order({"a": "follower", "b": "follower", "c": "leader"}) == ["a", "b", "c"]
    assert zookeeper_order({"a": "standalone"}) == ["a"]


def test_zookeeper_health_needs_every_server_and_one_leader():
    assert isinstance(zookeeper_health({"a": "leader", "b": "follower", "c": "follower"}), Healthy)
    assert zookeeper_health({"a": "leader", "b": None, "c": "follower"}) == \
        Unhealthy("ZooKeeper on b does not answer srvr (down, or not in the quorum)")
    assert zookeeper_health({"a": "follower", "b": "follower", "c": "follower"}) == \
        Unhealthy("ZooKeeper has 0 leaders (none)")
    assert zookeeper_health({"a": "leader", "b": "observer", "c": "follower"}) == Unhealthy("ZooKeeper b is observer")
    assert isinstance(zookeeper_health({"a": "standalone"}), Healthy)


def test_the_controller_goes_last():
    assert broker_order([1, 2, 3], controller_id=1) == [2, 3, 1]
    assert broker_order([1, 2, 3], controller_id=None) == [1, 2, 3]
    assert broker_order([1, 2, 3], controller_id=7) == [1, 2, 3]   # a controller outside the inventory


def test_broker_health_waits_for_registration_leaders_and_every_isr():
    healthy = [partition("t", 0, 1, [1, 2, 3]), partition("t", 1, 2, [2, 3, 1])]
    assert broker_health([1, 2, 3], [1, 2, 3], healthy) == Healthy("3 brokers, 2 partitions fully in sync")
    assert broker_health([1, 2, 3], [1, 3], healthy) == Unhealthy("broker 2 not registered in ZooKeeper")
    assert broker_health([1, 2, 3], [1, 2, 3], [partition("t", 0, -1, [])]).reason.startswith(
        "1 partition(s) without a live leader: t-0 (leader -1")
    behind = broker_health([1, 2, 3], [1, 2, 3], [partition("t", i, 1, [1, 3]) for i in range(5)])
    assert behind == Unhealthy("5 partition(s) under-replicated: t-0 (leader 1, ISR [1, 3] of [1, 2, 3]), "
                               "t-1 (leader 1, ISR [1, 3] of [1, 2, 3]), t-2 (leader 1, ISR [1, 3] of [1, 2, 3]), …")


def test_srvr_mode():
    answer = "Zookeeper version: 3.8.0\nLatency min/avg/max: 0/0.0/0\nMode: follower\nNode count: 5\n"
    assert parse_srvr_mode(answer) == "follower"
    assert parse_srvr_mode("This ZooKeeper instance is not currently serving requests\n") is None
