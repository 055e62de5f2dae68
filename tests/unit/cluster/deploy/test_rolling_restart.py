"""rolling_restart.py driven with a fake cluster and a fake clock."""

from __future__ import annotations

import pytest

from kafkactl.cluster.admin.topics import PartitionInfo
from kafkactl.cluster.deploy.inventory import parse_inventory
from kafkactl.cluster.deploy.rolling_restart import BrokerView, RollingRestart, RollSettings, RollStopped

INVENTORY = """
all:
  children:
    zookeeper:
      hosts:
        a: {ansible_host: 10.0.0.1, zookeeper_id: 1}
        b: {ansible_host: 10.0.0.2, zookeeper_id: 2}
        c: {ansible_host: 10.0.0.3, zookeeper_id: 3}
    brokers:
      hosts:
        a: {broker_id: 1, log_dirs: [{path: /d, media: ssd}]}
        b: {broker_id: 2, log_dirs: [{path: /d, media: ssd}]}
        c: {broker_id: 3, log_dirs: [{path: /d, media: ssd}]}
"""


class FakeCluster:
    """Three hosts; a restarted service is down for `down_polls` health polls."""

    def __init__(self, leader="b", controller=1, down_polls=2, fail_restart=None, never_back=None):
        self.modes = {"a": "follower", "b": "follower", "c": "follower"}
        self.modes[leader] = "leader"
        self.controller = controller
        self.down: dict[tuple[str, str], int] = {}
        self.down_polls = down_polls
        self.fail_restart = fail_restart
        self.never_back = never_back
        self.restarts: list[tuple[str, str]] = []

    def restart(self, host, service):
        if (host, service) == self.fail_restart:
            raise RuntimeError(f"host {host}: supervisor exited 1")
        self.restarts.append((host, service))
        self.down[(host, service)] = 10**9 if (host, service) == self.never_back else self.down_polls
        if service == "broker" and {"a": 1, "b": 2, "c": 3}[host] == self.controller:
            self.controller = 2 if self.controller != 2 else 3   # the controller moves away

    def _tick(self, key):
        if self.down.get(key, 0) > 0:
            self.down[key] -= 1
            return True
        return False

    def zookeeper_mode(self, host):
        return None if self._tick((host, "zookeeper")) else self.modes[host]

    def brokers(self):
        ids = {"a": 1, "b": 2, "c": 3}
        down = {ids[h] for (h, s), n in self.down.items() if s == "broker" and n > 0}
        for host in "abc":
            self._tick((host, "broker"))
        live = tuple(i for i in (1, 2, 3) if i not in down)
        isr = [i for i in (1, 2, 3) if i not in down]
        partitions = (PartitionInfo("t", 0, [1, 2, 3], isr[0], 0, isr),)
        return BrokerView(live, partitions, self.controller)


class Clock:
    def __init__(self):
        self.now = 0.0

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def roll(cluster, settings=RollSettings(zookeeper_timeout_s=30, broker_timeout_s=60, poll_interval_s=1)):
    clock = Clock()
    inventory = parse_inventory(INVENTORY, "inv.yml", readable=lambda path: True)
    return RollingRestart(inventory, cluster, settings, clock.monotonic, clock.sleep).run()


def test_followers_then_the_zookeeper_leader_then_brokers_with_the_controller_last():
    cluster = FakeCluster(leader="a", controller=2)
    done = roll(cluster)
    assert cluster.restarts == [("b", "zookeeper"), ("c", "zookeeper"), ("a", "zookeeper"),
                                ("a", "broker"), ("c", "broker"), ("b", "broker")]
    assert [(r.host, r.service) for r in done] == cluster.restarts
    assert all(r.waited_s >= 2 for r in done)   # each waited until its service was back


def test_a_broker_that_does_not_come_back_stops_the_roll_and_names_what_is_left():
    cluster = FakeCluster(controller=3, never_back=("a", "broker"))
    with pytest.raises(RollStopped) as stopped:
        roll(cluster)
    message = str(stopped.value)
    assert message.startswith("broker on a restarted, but the cluster was not healthy again within 60 s: "
                              "broker 1 not registered in ZooKeeper")
    assert message.endswith("; not restarted: b (broker), c (broker)")
    assert ("b", "broker") not in cluster.restarts and len(stopped.value.done) == 3


def test_a_failed_restart_stops_the_roll():
    cluster = FakeCluster(fail_restart=("c", "zookeeper"))
    with pytest.raises(RollStopped, match=r"^restarting zookeeper on c failed: host c: supervisor exited 1; "
                                          r"not restarted: b \(zookeeper\), a \(broker\), b \(broker\), "
                                          r"c \(broker\)$"):
        roll(cluster)
    assert cluster.restarts == [("a", "zookeeper")]


def test_an_unhealthy_cluster_is_not_touched():
    cluster = FakeCluster()
    cluster.down[("c", "broker")] = 10**9
    with pytest.raises(RollStopped, match="^not starting: broker 3 not registered in ZooKeeper$"):
        roll(cluster)
    assert cluster.restarts == []
    quiet = FakeCluster()
    quiet.modes["c"] = "leader"
    with pytest.raises(RollStopped, match=r"^not starting: ZooKeeper has 2 leaders \(b, c\)$"):
        roll(quiet)
