"""LocalCluster: one ZooKeeper and N brokers as background processes under a dir.

    cluster = LocalCluster(tmp_path / "c")
    status = cluster.up(brokers=1, overrides={"log.segment.bytes": "1048576"})
    ... status.bootstrap_servers, status.zookeeper_connect ...
    cluster.kill_broker(1)     # crash; cluster.up() restarts it with its data
    cluster.down(purge=True)

Processes outlive the Python process that started them (that is what the
CLI needs); tests should use `with cluster.running(...)` or a fixture that
calls down() so nothing is left behind.
"""

import fcntl
import os
import shutil
import signal
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from kafkactl.cluster import fatal
from kafkactl.cluster.local import procs, state
from kafkactl.cluster.local.brokers import BROKER_MODULE, broker_argv, server_properties, validate_overrides
from kafkactl.cluster.local.errors import (LocalClusterError, LocalClusterUsageError, NotAClusterDirError,
                     ShapeMismatchError, StartupError)
from kafkactl.cluster.local.files import atomic_write_text
from kafkactl.cluster.local.ports import free_loopback_ports, port_in_use
from kafkactl.cluster.local.procs import Proc
from kafkactl.cluster.local.state import BrokerSpec, ClusterSpec, Layout
from kafkactl.cluster.local.zookeeper import ZooKeeperCommand, is_ok, wait_ready, zoo_cfg

DEFAULT_BROKERS = 3
DEFAULT_UP_TIMEOUT_S = 60.0
DEFAULT_STOP_TIMEOUT_S = 15.0
ZOOKEEPER_STOP_TIMEOUT_S = 10.0
LOCK_TIMEOUT_S = 30.0
ZK_CALL_TIMEOUT_S = 5.0
STATUS_ZK_TIMEOUT_S = 2.0
POLL_INTERVAL_S = 0.1


@dataclass(frozen=True, slots=True)
class BrokerStatus:
    id: int
    host: str
    port: int
    pid: int | None  # None when not running
    alive: bool
    log_dirs: tuple[str, ...]
    log_dir_media: dict[str, str]
    config_file: str
    log_file: str
    registered: bool | None = None  # None: ZooKeeper was not asked or not reachable
    metrics_port: int | None = None  # GET /metrics

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def metrics_url(self) -> str | None:
        return None if self.metrics_port is None else f"http://{self.host}:{self.metrics_port}/metrics"

    def to_dict(self) -> dict:
        return {
            "id": self.id, "host": self.host, "port": self.port, "pid": self.pid,
            "alive": self.alive, "log_dirs": list(self.log_dirs),
            "log_dir_media": dict(self.log_dir_media), "registered": self.registered,
            "config_file": self.config_file, "log_file": self.log_file,
            "metrics_port": self.metrics_port, "metrics_url": self.metrics_url,
        }


@dataclass(frozen=True, slots=True)
class ClusterStatus:
    directory: str
    host: str
    zookeeper_port: int
    zookeeper_pid: int | None
    zookeeper_alive: bool
    zookeeper_log_file: str
    brokers: tuple[BrokerStatus, ...]
    overrides: dict[str, str] = field(default_factory=dict)

    @property
    def zookeeper_connect(self) -> str:
        return f"{self.host}:{self.zookeeper_port}"

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(b.address for b in self.brokers)

    @property
    def all_alive(self) -> bool:
        return self.zookeeper_alive and all(b.alive for b in self.brokers)

    def broker(self, broker_id: int) -> BrokerStatus:
        for broker in self.brokers:
            if broker.id == broker_id:
                return broker
        raise KeyError(f"no broker {broker_id}")

    def to_dict(self) -> dict:
        return {
            "dir": self.directory,
            "zookeeper": self.zookeeper_connect,
            "bootstrap_servers": self.bootstrap_servers,
            "brokers": [b.to_dict() for b in self.brokers],
            "zookeeper_pid": self.zookeeper_pid,
            "zookeeper_alive": self.zookeeper_alive,
            "zookeeper_log_file": self.zookeeper_log_file,
            "config_overrides": dict(self.overrides),
        }


class LocalCluster:
    """A local cluster rooted at `directory`; all state lives in DIR/cluster.json."""

    def __init__(self, directory: str | os.PathLike, *, host: str = "127.0.0.1",
                 zookeeper_command: ZooKeeperCommand | None = None,
                 python: str = sys.executable, broker_module: str = BROKER_MODULE):
        self.root = Path(directory).expanduser().absolute()
        self.layout = Layout(self.root)
        self.host = host
        self.zookeeper_command = zookeeper_command or ZooKeeperCommand()
        self.python = python
        self.broker_module = broker_module

    # ---- public API -------------------------------------------------------

    def exists(self) -> bool:
        return state.is_cluster_dir(self.root)

    def spec(self) -> ClusterSpec:
        spec = state.load(self.layout)
        if spec is None:
            raise LocalClusterError(f"no local cluster in {self.root}; start one with "
                                    f"`kafkactl cluster up --dir {self.root}`")
        return spec

    def up(self, brokers: int | None = None, overrides: Mapping[str, str] | None = None,
           timeout_s: float = DEFAULT_UP_TIMEOUT_S) -> ClusterStatus:
        """Start whatever is not running and wait until every broker registered.

        On a new dir: creates a cluster of `brokers` (default 3). On an
        existing one: keeps its shape; a different `brokers` or `overrides`
        raises ShapeMismatchError. None means "whatever it already has".
        """
        if brokers is not None and brokers < 1:
            raise LocalClusterUsageError(f"--brokers must be at least 1, not {brokers}")
        if overrides is not None:
            validate_overrides(overrides)
        deadline = time.monotonic() + timeout_s
        self.root.mkdir(parents=True, exist_ok=True)
        with self._locked():
            spec = self._load_or_create(brokers, overrides)
            self._write_configs(spec)
            self._ensure_zookeeper(spec, _remaining(deadline))
            from kafkactl.cluster.zk import client as zk_client  # kazoo: imported only when needed
            try:
                with zk_client.session(self._connect(spec), _remaining(deadline)) as client:
                    stale = self._stale_registrations(spec, client)
                    offsets = self._ensure_brokers(spec)
                    self._wait_registered(spec, client, stale, offsets, deadline, timeout_s)
            except zk_client.ZooKeeperUnavailable as error:   # from connecting: calls here time out otherwise
                raise LocalClusterError(str(error)) from error
            return self._status(spec, registered=True)

    def status(self, check_registration: bool = True,
               zk_timeout_s: float = STATUS_ZK_TIMEOUT_S) -> ClusterStatus:
        """Live status; asks ZooKeeper which brokers are registered if it runs."""
        spec = self.spec()
        registered = None
        if check_registration and procs.is_running(self._zk_proc(spec)):
            registered = self._registered_ids(spec, zk_timeout_s)
        return self._status(spec, registered=registered)

    def down(self, timeout_s: float = DEFAULT_STOP_TIMEOUT_S, purge: bool = False) -> ClusterStatus | None:
        """Stop brokers (SIGTERM, then SIGKILL at the deadline), then ZooKeeper.

        Idempotent. With purge, also deletes the directory, but only if it
        holds our cluster.json (or is empty). Returns the final status, or
        None when there was no cluster.
        """
        if not self.root.exists():
            return None
        if not self.exists():
            return self._down_foreign(purge)
        with self._locked():
            spec = self.spec()
            procs.stop_all([self._broker_proc(b) for b in spec.brokers], timeout_s)
            procs.stop_all([self._zk_proc(spec)], ZOOKEEPER_STOP_TIMEOUT_S)
            for broker in spec.brokers:
                broker.pid = None
            spec.zookeeper.pid = None
            state.save(self.layout, spec)
            final = self._status(spec, registered=None)
            if purge:
                shutil.rmtree(self.root)
        return final

    def stop_broker(self, broker_id: int, timeout_s: float = DEFAULT_STOP_TIMEOUT_S) -> None:
        """Clean shutdown of one broker (SIGTERM); up() starts it again."""
        procs.stop_all([self._broker_proc(self._broker_spec(broker_id))], timeout_s)

    def kill_broker(self, broker_id: int, sig: int = signal.SIGKILL) -> None:
        """Crash one broker (SIGKILL by default) and wait until it is gone."""
        proc = self._broker_proc(self._broker_spec(broker_id))
        if procs.signal_proc(proc, sig):
            procs.wait_gone([proc], ZOOKEEPER_STOP_TIMEOUT_S)

    @contextmanager
    def running(self, brokers: int | None = None, overrides: Mapping[str, str] | None = None,
                timeout_s: float = DEFAULT_UP_TIMEOUT_S, purge: bool = False) -> Iterator[ClusterStatus]:
        """up() on entry, down() on exit, even when up() or the body fails."""
        try:
            yield self.up(brokers=brokers, overrides=overrides, timeout_s=timeout_s)
        finally:
            self.down(purge=purge)

    # ---- shape ------------------------------------------------------------

    def _load_or_create(self, brokers: int | None, overrides: Mapping[str, str] | None) -> ClusterSpec:
        spec = state.load(self.layout)
        if spec is None:
            return self._create(brokers or DEFAULT_BROKERS, dict(overrides or {}))
        self._add_metrics_ports(spec)
        if brokers is not None and brokers != len(spec.brokers):
            raise ShapeMismatchError(
                f"{self.root} already holds a cluster of {len(spec.brokers)} broker(s); "
                f"it keeps that shape. Omit --brokers, or run "
                f"`kafkactl cluster down --dir {self.root} --purge` first")
        if overrides is not None and dict(overrides) != spec.overrides:
            raise ShapeMismatchError(
                f"{self.root} already holds a cluster with config overrides "
                f"{_fmt_overrides(spec.overrides)}; it keeps them. Omit --config, or run "
                f"`kafkactl cluster down --dir {self.root} --purge` first")
        return spec

    def _create(self, broker_count: int, overrides: dict[str, str]) -> ClusterSpec:
        # Never scatter cluster files over a directory that holds something else.
        foreign = [p.name for p in self.root.iterdir() if p.name != self.layout.lock_file.name]
        if foreign:
            raise NotAClusterDirError(
                f"{self.root} is not empty and holds no kafkactl cluster; use a new or empty --dir")
        ports = free_loopback_ports(2 * broker_count + 1, self.host)
        spec = state.new_spec(self.layout, self.host, broker_count, ports[:broker_count + 1], overrides,
                              metrics_ports=ports[broker_count + 1:])
        state.save(self.layout, spec)
        return spec

    def _add_metrics_ports(self, spec: ClusterSpec) -> None:
        """A cluster created before brokers served metrics gets its ports now."""
        missing = [b for b in spec.brokers if b.metrics_port is None]
        if not missing:
            return
        for broker, port in zip(missing, free_loopback_ports(len(missing), self.host)):
            broker.metrics_port = port
        state.save(self.layout, spec)

    def _write_configs(self, spec: ClusterSpec) -> None:
        zk = spec.zookeeper
        atomic_write_text(Path(zk.config_file), zoo_cfg(Path(zk.data_dir), zk.port, spec.host))
        for broker in spec.brokers:
            text = server_properties(broker, spec.host, zk.port, spec.overrides, len(spec.brokers))
            atomic_write_text(Path(broker.config_file), text)

    # ---- starting ---------------------------------------------------------

    def _ensure_zookeeper(self, spec: ClusterSpec, timeout_s: float) -> None:
        zk = spec.zookeeper
        proc = self._zk_proc(spec)
        log_file = Path(zk.log_file)
        offset = 0
        if not procs.is_running(proc):
            self._check_port_free("ZooKeeper", zk.port, spec.host)
            Path(zk.data_dir).mkdir(parents=True, exist_ok=True)
            argv = self.zookeeper_command.argv(Path(zk.config_file), self.layout.logs_dir)
            launched = self._spawn(argv, log_file)
            zk.pid, offset = launched.pid, launched.log_offset
            state.save(self.layout, spec)
            proc = self._zk_proc(spec)
        wait_ready(spec.host, zk.port, timeout_s, lambda: procs.is_running(proc), log_file, offset)

    def _ensure_brokers(self, spec: ClusterSpec) -> dict[int, int]:
        """Start the brokers that are not running; return their log offsets."""
        offsets = {}
        for broker in spec.brokers:
            if procs.is_running(self._broker_proc(broker)):
                continue
            self._check_port_free(broker.name, broker.port, spec.host)
            if broker.metrics_port is not None:
                self._check_port_free(f"{broker.name} metrics", broker.metrics_port, spec.host)
            for log_dir in broker.log_dirs:
                Path(log_dir.path).mkdir(parents=True, exist_ok=True)
            argv = broker_argv(broker.config_file, self.python, self.broker_module)
            launched = self._spawn(argv, Path(broker.log_file))
            broker.pid = launched.pid
            offsets[broker.id] = launched.log_offset
            state.save(self.layout, spec)
        return offsets

    def _spawn(self, argv: list[str], log_file: Path) -> procs.Launched:
        try:
            return procs.spawn(argv, log_file, cwd=self.root)
        except OSError as exc:
            raise StartupError(f"cannot run {argv[0]}: {exc}") from exc

    def _check_port_free(self, name: str, port: int, host: str) -> None:
        if port_in_use(port, host):
            raise StartupError(
                f"{name}'s port {host}:{port} is taken by another process; stop that process, "
                f"or `kafkactl cluster down --dir {self.root} --purge` to start afresh on new ports")

    def _stale_registrations(self, spec: ClusterSpec, client) -> dict[int, int]:
        """czxid of znodes left by brokers that are not running.

        A crashed broker's ephemeral znode lives until its session expires;
        the restarted broker's registration is a *new* znode (new czxid).
        """
        stale = {}
        for broker in spec.brokers:
            if not procs.is_running(self._broker_proc(broker)):
                stat = client.exists_async(_broker_path(broker.id)).get(timeout=ZK_CALL_TIMEOUT_S)
                if stat is not None:
                    stale[broker.id] = stat.czxid
        return stale

    def _wait_registered(self, spec: ClusterSpec, client, stale: dict[int, int],
                         offsets: dict[int, int], deadline: float, timeout_s: float) -> None:
        pending = list(spec.brokers)
        while True:
            pending = [b for b in pending if not self._is_registered(b, client, stale, deadline)]
            if not pending:
                return
            for broker in pending:
                self._fail_if_exited(broker, offsets.get(broker.id, 0))
            if time.monotonic() >= deadline:
                broker = pending[0]
                ids = ", ".join(str(b.id) for b in pending)
                raise StartupError(
                    f"broker(s) {ids} did not register under /brokers/ids within {timeout_s:g} s "
                    f"(still running; `kafkactl cluster down` stops them); see {broker.log_file}",
                    broker.log_file, procs.log_tail(Path(broker.log_file), offsets.get(broker.id, 0)))
            time.sleep(POLL_INTERVAL_S)

    def _is_registered(self, broker: BrokerSpec, client, stale: dict[int, int], deadline: float) -> bool:
        call_timeout_s = max(min(ZK_CALL_TIMEOUT_S, deadline - time.monotonic()), 0.1)
        stat = client.exists_async(_broker_path(broker.id)).get(timeout=call_timeout_s)
        return stat is not None and stat.czxid != stale.get(broker.id)

    def _fail_if_exited(self, broker: BrokerSpec, offset: int) -> None:
        if procs.is_running(self._broker_proc(broker)):
            return
        code = procs.exit_code(broker.pid) if broker.pid else None
        how = f"exited with status {code}" if code is not None else "exited"
        raise StartupError(f"broker {broker.id} {how} before registering in ZooKeeper; "
                           f"see {broker.log_file}",
                           broker.log_file, procs.log_tail(Path(broker.log_file), offset))

    # ---- inspecting -------------------------------------------------------

    def _registered_ids(self, spec: ClusterSpec, timeout_s: float) -> set[int] | None:
        """Ids under /brokers/ids (empty until the first broker creates the path);
        None when ZooKeeper does not answer."""
        from kazoo.exceptions import NoNodeError

        from kafkactl.cluster.zk import client as zk_client

        try:
            with zk_client.session(self._connect(spec), timeout_s) as client:
                children = client.get_children_async("/brokers/ids").get(timeout=timeout_s)
        except NoNodeError:
            return set()
        except Exception as error:  # status must still answer when ZooKeeper is sick
            fatal.halt_if_fatal(error, "cluster status")
            return None
        return {int(c) for c in children if c.isdigit()}

    def _status(self, spec: ClusterSpec, registered: set[int] | bool | None) -> ClusterStatus:
        zk_proc = self._zk_proc(spec)
        zk_alive = procs.is_running(zk_proc)
        brokers = tuple(self._broker_status(spec, b, registered) for b in spec.brokers)
        return ClusterStatus(
            directory=str(self.root), host=spec.host, zookeeper_port=spec.zookeeper.port,
            zookeeper_pid=spec.zookeeper.pid if zk_alive else None, zookeeper_alive=zk_alive,
            zookeeper_log_file=spec.zookeeper.log_file, brokers=brokers,
            overrides=dict(spec.overrides))

    def _broker_status(self, spec: ClusterSpec, broker: BrokerSpec,
                       registered: set[int] | bool | None) -> BrokerStatus:
        alive = procs.is_running(self._broker_proc(broker))
        if isinstance(registered, set):
            is_registered: bool | None = broker.id in registered
        else:
            is_registered = registered
        return BrokerStatus(
            id=broker.id, host=spec.host, port=broker.port, pid=broker.pid if alive else None,
            alive=alive, log_dirs=tuple(d.path for d in broker.log_dirs),
            log_dir_media={d.path: d.media for d in broker.log_dirs},
            config_file=broker.config_file, log_file=broker.log_file, registered=is_registered,
            metrics_port=broker.metrics_port)

    # ---- helpers ----------------------------------------------------------

    def _broker_spec(self, broker_id: int) -> BrokerSpec:
        try:
            return self.spec().broker(broker_id)
        except KeyError as exc:
            raise LocalClusterUsageError(str(exc.args[0])) from exc

    def _down_foreign(self, purge: bool) -> None:
        if purge and any(self.root.iterdir()):
            raise NotAClusterDirError(
                f"{self.root} does not look like a kafkactl local cluster (no cluster.json); "
                f"not deleting it")
        if purge:
            self.root.rmdir()
        return None

    @staticmethod
    def _connect(spec: ClusterSpec) -> str:
        return f"{spec.host}:{spec.zookeeper.port}"

    @staticmethod
    def _zk_proc(spec: ClusterSpec) -> Proc:
        return Proc(spec.zookeeper.pid, spec.zookeeper.config_file, "ZooKeeper")

    @staticmethod
    def _broker_proc(broker: BrokerSpec) -> Proc:
        return Proc(broker.pid, broker.config_file, broker.name)

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """Serialise up/down on one dir across processes (flock, bounded wait)."""
        with open(self.layout.lock_file, "a") as lock:
            deadline = time.monotonic() + LOCK_TIMEOUT_S
            while True:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise LocalClusterError(
                            f"another kafkactl has held {self.layout.lock_file} for "
                            f"{LOCK_TIMEOUT_S:g} s; try again later") from None
                    time.sleep(POLL_INTERVAL_S)
            yield


def _broker_path(broker_id: int) -> str:
    return f"/brokers/ids/{broker_id}"


def _remaining(deadline: float) -> float:
    # Never hand a zero timeout down: a last short attempt still gets a chance.
    return max(deadline - time.monotonic(), 0.5)


def _fmt_overrides(overrides: Mapping[str, str]) -> str:
    if not overrides:
        return "(none)"
    return " ".join(f"{k}={v}" for k, v in sorted(overrides.items()))
