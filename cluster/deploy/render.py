"""The files the deploy writes on each host, rendered from the inventory (pure).

Every function returns the exact text of one file: the same inventory and
release give the same bytes, so a second `deploy install` finds nothing to
change. The Ansible roles' templates write the same text (tests compare the
two); change both together.

- `server_properties`: the managed keys (config_keys.MANAGED_BROKER_KEYS)
  from the host's variables, then the inventory's `broker_config` in its own
  order. `log.dir.media` holds each log dir's effective media (media.py).
- `zoo_cfg`: the deploy's defaults (Kafka's own zookeeper.properties and
  ZooKeeper's sample config agree on tickTime 2000, initLimit 10, syncLimit
  5), overridden by `zookeeper_config`, then the managed keys and one
  `server.N` line per host of the zookeeper group. `srvr` and `ruok` are
  always in `4lw.commands.whitelist`: the rolling restart asks each server
  whether it leads with `srvr`.
- `myid`: the host's zookeeper_id.
- `broker_service`, `zookeeper_service`: how to run each service, for the
  deploy's own supervisor (JSON, supervisor.py reads it) and as a systemd
  unit (`systemd_unit`), from one `ServiceDefinition`. Its environment
  holds the SHA-256 of the config file the service reads
  (KAFKACTL_CONFIG_SHA256), so a config change is a definition change,
  which `deploy status` shows as a pending restart.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field

from kafkactl.cluster.deploy.inventory import BrokerHost, Inventory, ZooKeeperHost
from kafkactl.cluster.deploy.layout import (
    BROKER, BROKER_PORT, ZOOKEEPER, ZOOKEEPER_CLIENT_PORT, ZOOKEEPER_ELECTION_PORT, ZOOKEEPER_QUORUM_PORT,
    HostLayout,
)

HEADER = "# Managed by kafkactl (deploy, or its Ansible roles): changes made here are overwritten.\n"
ZOOKEEPER_DEFAULTS: Mapping[str, str] = {
    "tickTime": "2000",
    "initLimit": "10",
    "syncLimit": "5",
    "maxClientCnxns": "60",
    "admin.enableServer": "false",        # it would bind port 8080
    "4lw.commands.whitelist": "ruok,srvr,mntr",
    "autopurge.snapRetainCount": "3",
    "autopurge.purgeInterval": "24",
}
REQUIRED_FOUR_LETTER_WORDS = ("ruok", "srvr")
ZOOKEEPER_MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
# Kafka's zookeeper-server-start.sh default heap.
ZOOKEEPER_JVM_OPTIONS = ("-Xms512m", "-Xmx512m")
# A broker's controlled shutdown moves its leaderships away before it stops:
# give it time (the supervisor, or systemd, kills it after this).
BROKER_STOP_TIMEOUT_S = 180
ZOOKEEPER_STOP_TIMEOUT_S = 30
OPEN_FILES_LIMIT = 1_048_576
CONFIG_DIGEST_VARIABLE = "KAFKACTL_CONFIG_SHA256"


def zookeeper_connect(inventory: Inventory) -> str:
    return ",".join(f"{host.connection.address}:{ZOOKEEPER_CLIENT_PORT}" for host in inventory.zookeeper)


def server_properties(inventory: Inventory, broker: BrokerHost, media: Mapping[str, str]) -> str:
    """`media`: each log dir's effective media (ssd or hdd), by path."""
    paths = [log_dir.path for log_dir in broker.log_dirs]
    missing = [path for path in paths if media.get(path) not in ("ssd", "hdd")]
    if missing:
        raise ValueError(f"host {broker.name}: no media decided for log dir {missing[0]}")
    managed = {
        "broker.id": str(broker.broker_id),
        "log.dirs": ",".join(paths),
        "log.dir.media": ",".join(f"{path}:{media[path]}" for path in paths),
        **({"broker.rack": broker.rack} if broker.rack is not None else {}),
        "zookeeper.connect": zookeeper_connect(inventory),
        "listeners": f"PLAINTEXT://:{BROKER_PORT}",
        "advertised.listeners": f"PLAINTEXT://{broker.connection.address}:{BROKER_PORT}",
    }
    return _properties(inventory.source, [("managed by kafkactl deploy", managed),
                                          ("broker_config", broker.broker_config)])


def zoo_cfg(inventory: Inventory, host: ZooKeeperHost, layout: HostLayout) -> str:
    settings = {**ZOOKEEPER_DEFAULTS, **host.zookeeper_config}
    settings["4lw.commands.whitelist"] = _with_required_words(settings["4lw.commands.whitelist"])
    managed = {"dataDir": layout.zookeeper_data_dir, "clientPort": str(ZOOKEEPER_CLIENT_PORT)}
    servers = {
        f"server.{peer.zookeeper_id}":
            f"{peer.connection.address}:{ZOOKEEPER_QUORUM_PORT}:{ZOOKEEPER_ELECTION_PORT}"
        for peer in inventory.zookeeper
    }
    if len(inventory.zookeeper) == 1:
        servers = {}   # a single server runs standalone
    return _properties(inventory.source, [("settings", settings), ("managed by kafkactl deploy", managed),
                                          ("the ensemble: the zookeeper group", servers)])


def myid(host: ZooKeeperHost) -> str:
    return f"{host.zookeeper_id}\n"


def _with_required_words(whitelist: str) -> str:
    words = [word.strip() for word in whitelist.split(",") if word.strip()]
    if "*" in words:
        return whitelist
    return ",".join(words + [word for word in REQUIRED_FOUR_LETTER_WORDS if word not in words])


def _properties(source: str, sections: Sequence[tuple[str, Mapping[str, str]]]) -> str:
    lines = [HEADER.rstrip("\n")]
    for title, settings in sections:
        if settings:
            lines.append(f"\n# {title}")
            lines.extend(f"{key}={value}" for key, value in settings.items())
    return "\n".join(lines) + "\n"


@dataclass(frozen=True, slots=True)
class ServiceDefinition:
    """How to run one service; the supervisor's JSON and the systemd unit say the same."""

    service: str
    description: str
    argv: tuple[str, ...]
    cwd: str
    log_file: str
    stop_timeout_s: int
    release: str
    env: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> str:
        document = asdict(self)
        document["argv"] = list(self.argv)
        document["env"] = dict(self.env)
        return json.dumps(document, indent=2, sort_keys=True) + "\n"


def release_marker(release: str, kafkactl_version: str, wheels: Sequence[str], installed_by: str) -> str:
    """installed.json, written last into a release's directory: its presence
    says the release is complete (host_facts.py); the same fields from
    either tool, `installed_by` naming which."""
    marker = {"release": release, "kafkactl_version": kafkactl_version, "wheels": sorted(wheels),
              "installed_by": installed_by}
    return json.dumps(marker, indent=2, sort_keys=True) + "\n"


def config_env(config_text: str) -> dict[str, str]:
    """The service's environment: the SHA-256 of the config file it reads.

    Only so that a changed config changes the service definition: the
    supervisor (and systemd) tell a pending restart by the definition
    differing from the one the service was started with."""
    return {CONFIG_DIGEST_VARIABLE: hashlib.sha256(config_text.encode()).hexdigest()}


def broker_service(layout: HostLayout, release: str, config_text: str) -> ServiceDefinition:
    """`config_text`: the server.properties the broker will read."""
    return ServiceDefinition(
        service=BROKER, description="kafkactl reference broker",
        argv=(layout.python(release), "-m", "kafkactl.cluster.broker", layout.server_properties),
        cwd=layout.data_root, log_file=layout.service_log(BROKER),
        stop_timeout_s=BROKER_STOP_TIMEOUT_S, release=release, env=config_env(config_text),
    )


def zookeeper_service(layout: HostLayout, release: str, java: str, classpath: Sequence[str],
                      config_text: str) -> ServiceDefinition:
    """`java` and `classpath` as found on the host (host_facts.py); `config_text`: its zoo.cfg."""
    return ServiceDefinition(
        service=ZOOKEEPER, description="ZooKeeper server for kafkactl",
        argv=(java, *ZOOKEEPER_JVM_OPTIONS, "-cp", ":".join(classpath),
              f"-Dzookeeper.log.dir={layout.logs_dir}", ZOOKEEPER_MAIN_CLASS, layout.zoo_cfg),
        cwd=layout.zookeeper_data_dir, log_file=layout.service_log(ZOOKEEPER),
        stop_timeout_s=ZOOKEEPER_STOP_TIMEOUT_S, release=release, env=config_env(config_text),
    )


def systemd_unit_name(service: str) -> str:
    return f"kafkactl-{service}.service"


def systemd_unit(definition: ServiceDefinition) -> str:
    """A unit with the definition's command, output and stop timeout.

    Restart=on-failure with a 5-crashes-in-300-s start limit, as the own
    supervisor does; KillMode=mixed sends SIGTERM to the main process only
    (the broker's controlled shutdown) and SIGKILL to what is left after
    TimeoutStopSec."""
    environment = [f"Environment={_systemd_quote(f'{k}={v}')}" for k, v in sorted(definition.env.items())]
    return "\n".join([
        "# Written by kafkactl deploy; changes made here are overwritten.",
        "[Unit]",
        f"Description={definition.description} ({definition.release})",
        "After=network-online.target",
        "Wants=network-online.target",
        "StartLimitIntervalSec=300",
        "StartLimitBurst=5",
        "",
        "[Service]",
        "Type=simple",
        f"ExecStart={' '.join(_systemd_quote(arg) for arg in definition.argv)}",
        f"WorkingDirectory={definition.cwd}",
        *environment,
        f"StandardOutput=append:{definition.log_file}",
        f"StandardError=append:{definition.log_file}",
        "Restart=on-failure",
        "RestartSec=1",
        "KillMode=mixed",
        f"TimeoutStopSec={definition.stop_timeout_s}",
        f"LimitNOFILE={OPEN_FILES_LIMIT}",
        "",
        "[Install]",
        "WantedBy=multi-user.target",
        "",
    ])


def _systemd_quote(word: str) -> str:
    """systemd's command-line quoting: double quotes, with \\ \" and % escaped
    (% starts a specifier, $ a variable: both doubled)."""
    if word and all(c.isalnum() or c in "/._-:=,+@" for c in word):
        return word
    escaped = word.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%").replace("$", "$$")
    return f'"{escaped}"'
