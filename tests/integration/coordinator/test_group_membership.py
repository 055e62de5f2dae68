"""Group membership on the reference cluster with real clients: a member
killed with kill -9 loses its partitions to the others; a static member
restarts without a rebalance (KIP-345); partitions added to a subscribed
topic are assigned without any member refreshing its metadata (seed 003)."""

from __future__ import annotations

import dataclasses
import subprocess
import time

import pytest

from kafkactl.cluster.admin.topics import read_assignment, write_assignment
from support.fault_cluster import FaultCluster
from support.groups import Member, partitions_shared, poll_until, stable_members
from support.names import unique_topic
from support.waiting import wait_for

SESSION_TIMEOUT_MS = 6000


@pytest.fixture
def cluster(shared_cluster):
    fault_cluster = FaultCluster(*shared_cluster)
    yield fault_cluster
    fault_cluster.close()


def topic_of(cluster: FaultCluster, prefix: str, partitions: int) -> str:
    return cluster.create_topic(prefix, partitions, {p: [1] for p in range(partitions)},
                                {"min.insync.replicas": "1"})


def test_a_member_killed_with_kill_9_loses_its_partitions_within_the_session_timeout(cluster):
    topic = topic_of(cluster, "killed-member", 4)
    group = unique_topic("g")
    survivor = Member(cluster.bootstrap, group, [topic])
    kcat = subprocess.Popen(["kcat", "-b", cluster.bootstrap, "-G", group, "-X",
                             f"session.timeout.ms={SESSION_TIMEOUT_MS}", topic],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        poll_until([survivor], lambda: 0 < len(survivor.assigned) < 4 and stable_members(cluster.bootstrap, group) == 2,
                   60, "the partitions shared between the survivor and kcat")
        kcat.kill()
        killed_at = time.monotonic()
        poll_until([survivor], lambda: partitions_shared([survivor], topic, 4), 30,
                   "every partition back on the survivor")
        took_s = time.monotonic() - killed_at
        # The session timeout, then one rebalance (the survivor rejoins at its next heartbeat).
        assert took_s < SESSION_TIMEOUT_MS / 1000 + 8, f"took {took_s:.1f} s"
    finally:
        kcat.kill()
        kcat.wait(10)
        survivor.close()


def test_a_static_member_restarting_within_its_session_causes_no_rebalance(cluster):
    topic = topic_of(cluster, "static", 4)
    group = unique_topic("g")
    static = {"session.timeout.ms": 10000}
    stays = Member(cluster.bootstrap, group, [topic], **{"group.instance.id": "stays"}, **static)
    restarts = Member(cluster.bootstrap, group, [topic], **{"group.instance.id": "restarts"}, **static)
    try:
        poll_until([stays, restarts], lambda: partitions_shared([stays, restarts], topic, 4)
                   and stays.assigned and restarts.assigned, 60, "both static members assigned")
        before = (stays.assignments, sorted(stays.assigned), sorted(restarts.assigned))
        restarts.close()          # a static member leaves no LeaveGroup behind (KIP-345)
        restarts = Member(cluster.bootstrap, group, [topic], **{"group.instance.id": "restarts"}, **static)
        poll_until([stays, restarts], lambda: sorted(restarts.assigned) == before[2], 30,
                   "the restarted member given its old partitions back")
        for _ in range(20):       # two more seconds: a rebalance would show on the member that stayed
            stays.poll_once(0.1)
        assert (stays.assignments, sorted(stays.assigned)) == before[:2], "the member that stayed was not rebalanced"
    finally:
        stays.close()
        restarts.close()


def test_partitions_added_to_a_subscribed_topic_are_assigned_without_a_metadata_refresh(cluster):
    topic = topic_of(cluster, "growing", 2)
    group = unique_topic("g")
    member = Member(cluster.bootstrap, group, [topic], **{"topic.metadata.refresh.interval.ms": 3_600_000})
    try:
        poll_until([member], lambda: partitions_shared([member], topic, 2), 60, "the two partitions assigned")
        assignment, version = read_assignment(cluster.zk, topic)
        write_assignment(cluster.zk, topic, dataclasses.replace(
            assignment, partitions={**assignment.partitions, 2: [1], 3: [1]}), version)
        added_at = time.monotonic()
        poll_until([member], lambda: partitions_shared([member], topic, 4), 30,
                   "the new partitions assigned (the coordinator started the rebalance)")
        assert time.monotonic() - added_at < 15
    finally:
        member.close()
