"""`kafkactl deploy`'s operations over the hosts of an inventory (control side).

Each operation works the hosts in parallel (at most `Deployment.parallel`
at once, ssh.on_hosts), and returns one outcome per host in inventory order;
the CLI formats them. The rules:

- plan / install: every host is gathered and planned first (install.py);
  if any host cannot be reached or has a problem, `InstallRefused` is
  raised and no host is changed.
- start: the log dirs of every broker host are checked first (they exist,
  are directories, can be written: a missing one usually means a disk that
  is not mounted, and a broker would create it on the root disk); then
  every ZooKeeper server is started, the ensemble is awaited (one leader,
  every server answering srvr), then every broker, and their
  registrations in ZooKeeper are awaited. Each wait is bounded.
- stop: brokers first (each by controlled shutdown), then ZooKeeper.
- status: per host and service, from the supervisor or systemd; and each
  broker log dir's media as detected now (a disk may have been replaced).
- rolling-restart: rolling_restart.py, through `SshCluster`.
- uninstall: stop, then remove the install root and the units; with
  `purge_data`, also ZooKeeper's data, the service logs and every log
  dir's contents.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from kafkactl.cluster.deploy import install, rolling
from kafkactl.cluster.deploy.host_plan import HostPlan, Release
from kafkactl.cluster.deploy.inventory import Connection, Inventory
from kafkactl.cluster.deploy.media import (
    MediaDecision, effective_media, parse_probe_output, probe_command, probe_source,
)
from kafkactl.cluster.deploy.layout import BROKER, ZOOKEEPER, ZOOKEEPER_CLIENT_PORT, HostLayout
from kafkactl.cluster.deploy.parallel import HostOutcome, on_hosts
from kafkactl.cluster.deploy.render import systemd_unit_name, zookeeper_connect
from kafkactl.cluster.deploy.rolling_restart import BrokerView
from kafkactl.cluster.deploy.services import HostServices, ServiceStatus
from kafkactl.cluster.deploy.ssh import HostSession, SshOptions, connect
from kafkactl.cluster.deploy.wheelhouse import Wheelhouse

T = TypeVar("T")
SYSTEMD_CHECK = '[ "$(cat /proc/1/comm 2>/dev/null)" = systemd ] && [ -d /run/systemd/system ]'
SRVR_TIMEOUT_S = 2.0
ZOOKEEPER_READ_TIMEOUT_S = 10.0


class InstallRefused(RuntimeError):
    """Some host cannot be installed; nothing was changed on any host."""

    def __init__(self, plans: list[HostOutcome[HostPlan]]):
        super().__init__("nothing was changed on any host")
        self.plans = plans


class WaitTimedOut(RuntimeError):
    pass


@dataclass(frozen=True)
class Deployment:
    inventory: Inventory
    ssh: SshOptions
    layout: HostLayout = field(default_factory=HostLayout)
    parallel: int = 8
    hosts: frozenset[str] | None = None      # --host: only these (None: all)

    def targets(self, names: Sequence[str] | None = None) -> list[tuple[str, Connection]]:
        wanted = set(names) if names is not None else None
        return [(name, connection) for name, connection in self.inventory.connections().items()
                if (self.hosts is None or name in self.hosts) and (wanted is None or name in wanted)]

    def on(self, work: Callable[[HostSession], T], names: Sequence[str] | None = None) -> list[HostOutcome[T]]:
        return on_hosts(self.targets(names), work, self.ssh, self.parallel)


def release_of(wheelhouse: Wheelhouse) -> Release:
    return Release(
        name=wheelhouse.release,
        files=tuple((f.name, f.sha256, f.size) for f in wheelhouse.files),
        manifest=wheelhouse.manifest_text(),
        compatible=wheelhouse.compatible_with,
    )


# --- plan and install -----------------------------------------------------------

def plan(deployment: Deployment, release: Release) -> list[HostOutcome[HostPlan]]:
    return deployment.on(lambda session: install.plan(session, deployment.inventory, release, deployment.layout))


def install_all(deployment: Deployment, wheelhouse: Wheelhouse) -> tuple[list[HostOutcome[HostPlan]],
                                                                         list[HostOutcome[list[str]]]]:
    release = release_of(wheelhouse)
    plans = plan(deployment, release)
    if any(not outcome.ok or outcome.value.problems for outcome in plans):   # type: ignore[union-attr]
        raise InstallRefused(plans)
    by_name = {outcome.name: outcome.value for outcome in plans}

    def work(session: HostSession) -> list[str]:
        host_plan = by_name.get(session.name)
        if host_plan is None:   # every host was planned above, or the install was refused
            raise install.DeployError(f"host {session.name}: no plan")
        return install.apply(session, host_plan, release, wheelhouse.path, deployment.layout)

    return plans, deployment.on(work)


# --- services ---------------------------------------------------------------------

def services_of(deployment: Deployment, name: str) -> list[str]:
    inventory = deployment.inventory
    return [service for service, hosts in ((ZOOKEEPER, inventory.zookeeper), (BROKER, inventory.brokers))
            if any(host.name == name for host in hosts)]


def host_services(session: HostSession, layout: HostLayout) -> HostServices:
    systemd = session.run(SYSTEMD_CHECK, check=False, timeout_s=10).exit_status == 0
    return HostServices(session, layout, systemd)


def service_action(deployment: Deployment, action: str, service: str,
                   names: Sequence[str]) -> list[HostOutcome[str]]:
    def work(session: HostSession) -> str:
        services = host_services(session, deployment.layout)
        return getattr(services, action)(service)
    return deployment.on(work, names)


def check_log_dirs(deployment: Deployment) -> list[HostOutcome[list[str]]]:
    """Each broker host's log dir problems (empty when fine)."""
    brokers = {host.name: host for host in deployment.inventory.brokers}

    def work(session: HostSession) -> list[str]:
        problems = []
        for log_dir in brokers[session.name].log_dirs:
            path = shlex.quote(log_dir.path)
            result = session.run(f"test -d {path} && test -w {path} && touch {path}/.kafkactl-write-check "
                                 f"&& rm -f {path}/.kafkactl-write-check", check=False, timeout_s=30)
            if result.exit_status != 0:
                exists = session.run(f"test -d {path}", check=False, timeout_s=30).exit_status == 0
                problems.append(f"host {session.name}: log dir {log_dir.path} "
                                f"{'cannot be written' if exists else 'does not exist (is its disk mounted?)'}")
        return problems
    return deployment.on(work, list(brokers))


def start_all(deployment: Deployment, wait_timeout_s: float,
              clock: Callable[[], float] = time.monotonic) -> list[tuple[str, str, HostOutcome[str]]]:
    """(host, service, outcome) for each service started, ZooKeeper first."""
    results: list[tuple[str, str, HostOutcome[str]]] = []
    zookeeper_hosts = [host.name for host in deployment.inventory.zookeeper]
    for outcome in service_action(deployment, "start", ZOOKEEPER, zookeeper_hosts):
        results.append((outcome.name, ZOOKEEPER, outcome))
    if any(not outcome.ok for _, _, outcome in results):
        return results
    wait_for(lambda: zookeeper_health(deployment.inventory), wait_timeout_s, clock)
    broker_hosts = [host.name for host in deployment.inventory.brokers]
    started = service_action(deployment, "start", BROKER, broker_hosts)
    results += [(outcome.name, BROKER, outcome) for outcome in started]
    if all(outcome.ok for outcome in started):
        expected = [host.broker_id for host in deployment.inventory.brokers
                    if deployment.hosts is None or host.name in deployment.hosts]
        wait_for(lambda: brokers_registered(deployment.inventory, expected), wait_timeout_s, clock)
    return results


def stop_all(deployment: Deployment) -> list[tuple[str, str, HostOutcome[str]]]:
    results = [(o.name, BROKER, o) for o in
               service_action(deployment, "stop", BROKER, [h.name for h in deployment.inventory.brokers])]
    results += [(o.name, ZOOKEEPER, o) for o in
                service_action(deployment, "stop", ZOOKEEPER, [h.name for h in deployment.inventory.zookeeper])]
    return results


@dataclass(frozen=True)
class HostStatus:
    services: dict[str, ServiceStatus]
    media: dict[str, MediaDecision]        # each log dir's media now (broker hosts)


def status_all(deployment: Deployment) -> list[HostOutcome[HostStatus]]:
    brokers = {host.name: host for host in deployment.inventory.brokers}

    def work(session: HostSession) -> HostStatus:
        services = host_services(session, deployment.layout).status(services_of(deployment, session.name))
        media: dict[str, MediaDecision] = {}
        broker = brokers.get(session.name)
        if broker is not None:
            paths = [log_dir.path for log_dir in broker.log_dirs]
            probe = session.run(probe_command(paths), input=probe_source(), timeout_s=60)
            detected = parse_probe_output(session.name, probe.stdout, paths)
            media = {d.path: effective_media(session.name, d, detected.get(d.path)) for d in broker.log_dirs}
        return HostStatus(services, media)
    return deployment.on(work)


def uninstall_all(deployment: Deployment, purge_data: bool) -> list[HostOutcome[list[str]]]:
    layout = deployment.layout
    log_dirs = {host.name: [d.path for d in host.log_dirs] for host in deployment.inventory.brokers}

    def work(session: HostSession) -> list[str]:
        services = host_services(session, layout)
        done = []
        for service in reversed(services_of(deployment, session.name)):   # the broker before ZooKeeper
            if services.stop(service) != "none":
                done.append(f"stopped {service}")
        units = [f"/etc/systemd/system/{systemd_unit_name(s)}" for s in services_of(deployment, session.name)]
        if services.systemd:
            session.run("systemctl disable " + " ".join(shlex.quote(u.rsplit('/', 1)[1]) for u in units) +
                        " ; rm -f -- " + " ".join(shlex.quote(u) for u in units) + " && systemctl daemon-reload",
                        check=False, timeout_s=60)
        session.run(f"rm -rf -- {shlex.quote(layout.install_root)}/* ", timeout_s=120)
        done.append(f"removed {layout.install_root}")
        if purge_data:
            # What the deploy made, by name: the data root may hold other things
            # (a log dir's mount point among them), and a log dir may be a mount
            # point itself, so its contents go, not the directory.
            owned = [layout.zookeeper_data_dir, layout.logs_dir]
            session.run("rm -rf -- " + " ".join(shlex.quote(path) for path in owned), timeout_s=600)
            for path in log_dirs.get(session.name, []):
                session.run(f"if [ -d {shlex.quote(path)} ]; then find {shlex.quote(path)} -mindepth 1 "
                            f"-maxdepth 1 ! -name lost+found -exec rm -rf -- {{}} +; fi", timeout_s=600)
            done.append("purged ZooKeeper's data, the service logs and the log dirs' contents")
        return done
    return deployment.on(work)


# --- the cluster, seen from here --------------------------------------------------

def wait_for(check: Callable[[], rolling.Health], timeout_s: float, clock: Callable[[], float] = time.monotonic,
             interval_s: float = 1.0, sleep: Callable[[float], None] = time.sleep) -> rolling.Healthy:
    deadline = clock() + timeout_s
    while True:
        try:
            health = check()
        except Exception as error:   # ZooKeeper still electing, a broker not yet listening: try again
            health = rolling.Unhealthy(" ".join(str(error).split()) or type(error).__name__)
        if isinstance(health, rolling.Healthy):
            return health
        if clock() >= deadline:
            raise WaitTimedOut(f"not ready within {timeout_s:g} s: {health.reason}")
        sleep(interval_s)


def zookeeper_mode(address: str) -> str | None:
    from kafkactl.cluster.local.zookeeper import four_letter
    try:
        return rolling.parse_srvr_mode(four_letter(address, ZOOKEEPER_CLIENT_PORT, "srvr", SRVR_TIMEOUT_S))
    except OSError:
        return None


def zookeeper_modes(inventory: Inventory) -> dict[str, str | None]:
    return {host.name: zookeeper_mode(host.connection.address) for host in inventory.zookeeper}


def zookeeper_health(inventory: Inventory) -> rolling.Health:
    return rolling.zookeeper_health(zookeeper_modes(inventory))


def broker_view(inventory: Inventory) -> BrokerView:
    from kafkactl.cluster.admin import inspect, topics
    from kafkactl.cluster.zk.client import session

    with session(zookeeper_connect(inventory), ZOOKEEPER_READ_TIMEOUT_S) as client:
        live = tuple(b.broker_id for b in topics.live_brokers(client, ZOOKEEPER_READ_TIMEOUT_S))
        described = topics.describe_topics(client, topics.list_topics(client, ZOOKEEPER_READ_TIMEOUT_S),
                                           ZOOKEEPER_READ_TIMEOUT_S)
        controller = inspect.read_controller(client, ZOOKEEPER_READ_TIMEOUT_S).broker_id
    partitions = tuple(p for parts in described.values() if parts for p in parts)
    return BrokerView(live, partitions, controller if controller >= 0 else None)


def brokers_registered(inventory: Inventory, expected: Sequence[int]) -> rolling.Health:
    view = broker_view(inventory)
    missing = sorted(set(expected) - set(view.live_ids))
    if missing:
        return rolling.Unhealthy(f"brokers {', '.join(map(str, missing))} not registered in ZooKeeper")
    return rolling.Healthy(f"{len(view.live_ids)} brokers registered")


class SshCluster:
    """rolling_restart.Cluster over SSH (restarts) and ZooKeeper (health)."""

    def __init__(self, deployment: Deployment):
        self.deployment = deployment
        self.connections = deployment.inventory.connections()

    def restart(self, host: str, service: str) -> None:
        with connect(host, self.connections[host], self.deployment.ssh) as session:
            host_services(session, self.deployment.layout).restart(service)

    def zookeeper_mode(self, host: str) -> str | None:
        return zookeeper_mode(self.connections[host].address)

    def brokers(self) -> BrokerView:
        return broker_view(self.deployment.inventory)


def outcome_rows(outcomes: Sequence[HostOutcome[Any]]) -> list[dict[str, Any]]:
    return [{"host": o.name, "ok": o.ok, "error": o.error} for o in outcomes]


def wheelhouse_for(path: Path | None, timeout_s: float) -> Wheelhouse:
    from kafkactl.cluster.deploy.wheelhouse import build_wheelhouse, load_wheelhouse
    return load_wheelhouse(path, timeout_s=timeout_s) if path is not None else build_wheelhouse(timeout_s=timeout_s)
