"""The shell of `deploy rolling-restart`: rolling.py's rules, run against a cluster.

The protocol (rolling.py's module doc says why each rule holds):

1. Check the cluster: ZooKeeper's modes, the brokers and partitions. Not
   healthy: stop before touching anything.
2. For each ZooKeeper host in `zookeeper_order`: restart its server, then
   poll, every `poll_interval_s` for at most `zookeeper_timeout_s`, until
   the ensemble is healthy again with this server in it.
3. Brokers: before each, read the controller and take the first of
   `broker_order` among those left; restart it (controlled shutdown,
   start), then poll for at most `broker_timeout_s` until `broker_health`
   passes.
4. The first failure ends the roll: `RollStopped` names the host, what was
   waited for and the last thing seen, and lists the hosts left untouched.

Everything it touches is injected (`Cluster`): the restart of one service
on one host, the srvr probe, the read of brokers and partitions, the clock.
The CLI passes the SSH and ZooKeeper ones; the unit tests pass fakes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from kafkactl.cluster.admin.topics import PartitionInfo
from kafkactl.cluster.deploy.inventory import Inventory
from kafkactl.cluster.deploy.layout import BROKER, ZOOKEEPER
from kafkactl.cluster.deploy.rolling import (
    FOLLOWER, LEADER, Healthy, Unhealthy, broker_health, broker_order, zookeeper_health, zookeeper_order,
)


@dataclass(frozen=True, slots=True)
class BrokerView:
    live_ids: tuple[int, ...]
    partitions: tuple[PartitionInfo, ...]
    controller_id: int | None


class Cluster(Protocol):
    def restart(self, host: str, service: str) -> None: ...        # raises on failure, naming the host
    def zookeeper_mode(self, host: str) -> str | None: ...          # srvr's Mode, None when silent
    def brokers(self) -> BrokerView: ...                            # raises on failure


@dataclass(frozen=True, slots=True)
class RollSettings:
    zookeeper_timeout_s: float = 120.0
    broker_timeout_s: float = 600.0
    poll_interval_s: float = 2.0


@dataclass(frozen=True, slots=True)
class Restarted:
    host: str
    service: str
    waited_s: float
    health: str


class RollStopped(RuntimeError):
    def __init__(self, message: str, done: Sequence[Restarted], untouched: Sequence[str]):
        left = f"; not restarted: {', '.join(untouched)}" if untouched else ""
        super().__init__(message + left)
        self.done = list(done)
        self.untouched = list(untouched)


@dataclass
class RollingRestart:
    inventory: Inventory
    cluster: Cluster
    settings: RollSettings = field(default_factory=RollSettings)
    monotonic: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    report: Callable[[Restarted], None] = lambda restarted: None

    def run(self) -> list[Restarted]:
        done: list[Restarted] = []
        zookeeper_hosts = self._check_before()
        remaining_brokers = self._broker_ids()
        by_id = {host.broker_id: host.name for host in self.inventory.brokers}

        def untouched(zookeeper_left: list[str], brokers_left: list[int]) -> list[str]:
            return [f"{name} (zookeeper)" for name in zookeeper_left] + \
                [f"{by_id[i]} (broker)" for i in brokers_left]

        for position, host in enumerate(zookeeper_hosts):
            left = untouched(zookeeper_hosts[position + 1:], remaining_brokers)
            done.append(self._restart(host, ZOOKEEPER, done, left))
        while remaining_brokers:
            # Read the controller before each broker: it moves when its own
            # broker restarts, or when a ZooKeeper session expires.
            controller = self._controller(done, untouched([], remaining_brokers))
            broker_id = broker_order(remaining_brokers, controller)[0]
            remaining_brokers.remove(broker_id)
            done.append(self._restart(by_id[broker_id], BROKER, done, untouched([], remaining_brokers)))
        return done

    def _restart(self, host: str, service: str, done: list[Restarted], untouched: list[str]) -> Restarted:
        try:
            self.cluster.restart(host, service)
        except Exception as error:   # a failed restart is reported, with the hosts left alone
            raise RollStopped(f"restarting {service} on {host} failed: {_one_line(error)}", done,
                              untouched) from error
        restarted = self._wait_healthy(host, service, done, untouched)
        self.report(restarted)
        return restarted

    def _controller(self, done: list[Restarted], untouched: list[str]) -> int | None:
        try:
            return self.cluster.brokers().controller_id
        except Exception as error:
            raise RollStopped(f"cannot read the controller: {_one_line(error)}", done, untouched) from error

    def _check_before(self) -> list[str]:
        """The ZooKeeper hosts in restart order, once the cluster is found healthy."""
        modes = self._modes()
        zookeeper = zookeeper_health(modes)
        if isinstance(zookeeper, Unhealthy):
            raise RollStopped(f"not starting: {zookeeper.reason}", [], [])
        view = self.cluster.brokers()
        brokers = broker_health(self._broker_ids(), view.live_ids, view.partitions)
        if isinstance(brokers, Unhealthy):
            raise RollStopped(f"not starting: {brokers.reason}", [], [])
        return zookeeper_order(modes)

    def _wait_healthy(self, host: str, service: str, done: list[Restarted], untouched: list[str]) -> Restarted:
        start = self.monotonic()
        timeout_s = self.settings.zookeeper_timeout_s if service == ZOOKEEPER else self.settings.broker_timeout_s
        last = "nothing seen yet"
        while True:
            try:
                health = self._zookeeper_back(host) if service == ZOOKEEPER else self._brokers_back()
            except Exception as error:   # ZooKeeper may refuse reads while it elects: try again
                health = Unhealthy(_one_line(error))
            if isinstance(health, Healthy):
                return Restarted(host, service, self.monotonic() - start, health.summary)
            last = health.reason
            if self.monotonic() - start >= timeout_s:
                raise RollStopped(f"{service} on {host} restarted, but the cluster was not healthy again "
                                  f"within {timeout_s:g} s: {last}", done, untouched)
            self.sleep(self.settings.poll_interval_s)

    def _zookeeper_back(self, host: str) -> Healthy | Unhealthy:
        modes = self._modes()
        if modes.get(host) not in (LEADER, FOLLOWER) and len(modes) > 1:
            return Unhealthy(f"ZooKeeper on {host} is {modes.get(host) or 'not answering'}")
        return zookeeper_health(modes)

    def _brokers_back(self) -> Healthy | Unhealthy:
        view = self.cluster.brokers()
        return broker_health(self._broker_ids(), view.live_ids, view.partitions)

    def _modes(self) -> dict[str, str | None]:
        return {host.name: self.cluster.zookeeper_mode(host.name) for host in self.inventory.zookeeper}

    def _broker_ids(self) -> list[int]:
        return [host.broker_id for host in self.inventory.brokers]


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__
