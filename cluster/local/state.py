"""The shape of a local cluster as persisted in DIR/cluster.json.

Everything needed to restart the same cluster lives here: ports, broker ids,
directories, config overrides and the pids of the running processes. The
file is rewritten atomically after every change, so a crash mid-`up` leaves
either the old or the new shape, never a torn one.
"""

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kafkactl.cluster.local.errors import LocalClusterError
from kafkactl.cluster.local.files import atomic_write_text

KIND = "kafkactl-local-cluster"
STATE_VERSION = 1
STATE_FILE = "cluster.json"
# Media of the two log dirs every broker gets, in log.dirs order.
LOG_DIR_MEDIA = (("ssd0", "ssd"), ("hdd0", "hdd"))


@dataclass(frozen=True, slots=True)
class Layout:
    """Where things go under a cluster directory."""

    root: Path

    @property
    def state_file(self) -> Path:
        return self.root / STATE_FILE

    @property
    def lock_file(self) -> Path:
        return self.root / ".lock"

    @property
    def logs_dir(self) -> Path:
        return self.root / "logs"

    @property
    def zookeeper_dir(self) -> Path:
        return self.root / "zookeeper"

    def log_file(self, name: str) -> Path:
        return self.logs_dir / f"{name}.log"

    def broker_dir(self, broker_id: int) -> Path:
        return self.root / f"broker-{broker_id}"


@dataclass(slots=True)
class LogDirSpec:
    path: str
    media: str


@dataclass(slots=True)
class BrokerSpec:
    id: int
    port: int
    config_file: str
    log_file: str
    log_dirs: list[LogDirSpec]
    pid: int | None = None
    # GET /metrics (metrics.port); None in a cluster.json written before
    # brokers had one: `up` then picks a free port and saves it.
    metrics_port: int | None = None

    @property
    def name(self) -> str:
        return f"broker-{self.id}"


@dataclass(slots=True)
class ZooKeeperSpec:
    port: int
    config_file: str
    data_dir: str
    log_file: str
    pid: int | None = None


@dataclass(slots=True)
class ClusterSpec:
    host: str
    zookeeper: ZooKeeperSpec
    brokers: list[BrokerSpec]
    overrides: dict[str, str] = field(default_factory=dict)

    def broker(self, broker_id: int) -> BrokerSpec:
        for broker in self.brokers:
            if broker.id == broker_id:
                return broker
        known = ", ".join(str(b.id) for b in self.brokers)
        raise KeyError(f"no broker {broker_id} in this cluster (ids: {known})")

    def to_json(self) -> dict:
        body = asdict(self)
        return {"kind": KIND, "version": STATE_VERSION,
                "broker_count": len(self.brokers), **body}

    @classmethod
    def from_json(cls, data: dict) -> "ClusterSpec":
        zk = ZooKeeperSpec(**data["zookeeper"])
        brokers = [
            BrokerSpec(**{**b, "log_dirs": [LogDirSpec(**d) for d in b["log_dirs"]]})
            for b in data["brokers"]
        ]
        return cls(host=data["host"], zookeeper=zk, brokers=brokers,
                   overrides={str(k): str(v) for k, v in data.get("overrides", {}).items()})


def new_spec(layout: Layout, host: str, broker_count: int, ports: list[int],
             overrides: dict[str, str], metrics_ports: list[int] | None = None) -> ClusterSpec:
    """A fresh cluster: ports[0] for ZooKeeper, the rest for brokers 1..N;
    metrics_ports[i] for broker i+1's GET /metrics (none when not given)."""
    zk_dir = layout.zookeeper_dir
    zk = ZooKeeperSpec(port=ports[0], config_file=str(zk_dir / "zoo.cfg"),
                       data_dir=str(zk_dir / "data"),
                       log_file=str(layout.log_file("zookeeper")))
    metrics_ports = list(metrics_ports or [])
    brokers = [_new_broker(layout, broker_id, port, metrics_ports[broker_id - 1] if metrics_ports else None)
               for broker_id, port in enumerate(ports[1:broker_count + 1], start=1)]
    return ClusterSpec(host=host, zookeeper=zk, brokers=brokers, overrides=dict(overrides))


def _new_broker(layout: Layout, broker_id: int, port: int, metrics_port: int | None = None) -> BrokerSpec:
    home = layout.broker_dir(broker_id)
    log_dirs = [LogDirSpec(str(home / name), media) for name, media in LOG_DIR_MEDIA]
    return BrokerSpec(id=broker_id, port=port, config_file=str(home / "server.properties"),
                      log_file=str(layout.log_file(f"broker-{broker_id}")), log_dirs=log_dirs,
                      metrics_port=metrics_port)


def is_cluster_dir(root: Path) -> bool:
    """True when root holds a cluster.json written by us."""
    try:
        return json.loads((root / STATE_FILE).read_text()).get("kind") == KIND
    except (OSError, ValueError, AttributeError):
        return False


def load(layout: Layout) -> ClusterSpec | None:
    """The persisted spec, or None when the directory holds no cluster."""
    path = layout.state_file
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise LocalClusterError(f"cannot read {path}: {exc}") from exc
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise LocalClusterError(f"{path} was not written by kafkactl; refusing to use it")
    if data.get("version") != STATE_VERSION:
        raise LocalClusterError(
            f"{path} has state version {data.get('version')!r}; this kafkactl reads {STATE_VERSION}")
    try:
        return ClusterSpec.from_json(data)
    except (KeyError, TypeError) as exc:
        raise LocalClusterError(f"{path} is malformed ({exc!r}); fix or purge it") from exc


def save(layout: Layout, spec: ClusterSpec) -> None:
    atomic_write_text(layout.state_file, json.dumps(spec.to_json(), indent=2) + "\n")
