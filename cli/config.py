"""The user's kafkactl config file: named contexts and the current one.

    {"current_context": "local",
     "contexts": {"local": {"zookeeper": "127.0.0.1:41234",
                            "cluster_dir": "/home/u/.local/state/kafkactl/local"},
                  "kraft": {"bootstrap_servers": "k1:9092,k2:9092"}}}

A context holds one way to its cluster: a ZooKeeper address, or bootstrap
servers for the Kafka Admin API.

Location: $KAFKACTL_CONFIG, else $XDG_CONFIG_HOME/kafkactl/config.json, else
~/.config/kafkactl/config.json. Unknown keys are kept on rewrite, so a newer
kafkactl's additions survive an older one. Writes are atomic.
"""

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kafkactl.cluster.local.files import atomic_write_text

from kafkactl.cli.errors import CliError, CliUsageError
from kafkactl.cli.options import SharedOptions

ENV_CONFIG = "KAFKACTL_CONFIG"
ENV_ZOOKEEPER = "KAFKACTL_ZOOKEEPER"
ENV_BOOTSTRAP = "KAFKACTL_BOOTSTRAP_SERVERS"
ZOOKEEPER = "zookeeper"            # the back ends, as Target.backend names them
ADMIN_API = "admin-api"
BOOTSTRAP_KEY = "bootstrap_servers"  # a context's key for the Admin API's addresses
_CONTEXT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_HOST_PORT = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+)(:(\d{1,5}))?$")


@dataclass(slots=True)
class Config:
    path: Path
    contexts: dict[str, dict] = field(default_factory=dict)
    current_context: str | None = None
    extra: dict = field(default_factory=dict)  # unknown top-level keys, kept as is

    def to_json(self) -> dict:
        return {**self.extra, "current_context": self.current_context, "contexts": self.contexts}


@dataclass(frozen=True, slots=True)
class Resolved:
    """A ZooKeeper address and where it came from (for messages)."""

    zookeeper: str
    source: str


@dataclass(frozen=True, slots=True)
class Target:
    """How a command reaches the cluster: a back end, its address, and where that came from."""

    backend: str        # ZOOKEEPER or ADMIN_API
    address: str
    source: str


def _xdg_dir(env: Mapping[str, str], var: str, fallback: str) -> Path:
    # The XDG spec says relative values are invalid and must be ignored.
    value = env.get(var, "")
    if value and os.path.isabs(value):
        return Path(value)
    return Path(env.get("HOME") or Path.home()) / fallback


def config_path(env: Mapping[str, str] = os.environ) -> Path:
    if env.get(ENV_CONFIG):
        return Path(env[ENV_CONFIG]).expanduser()
    return _xdg_dir(env, "XDG_CONFIG_HOME", ".config") / "kafkactl" / "config.json"


def default_cluster_dir(env: Mapping[str, str] = os.environ) -> Path:
    return _xdg_dir(env, "XDG_STATE_HOME", ".local/state") / "kafkactl" / "local"


def load_config(path: Path | None = None) -> Config:
    path = path or config_path()
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return Config(path)
    except (OSError, ValueError) as exc:
        raise CliError(f"cannot read config file {path}: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("contexts", {}), dict):
        raise CliError(f"config file {path} is malformed: expected an object with 'contexts'")
    contexts = {str(k): dict(v) for k, v in data.get("contexts", {}).items() if isinstance(v, dict)}
    extra = {k: v for k, v in data.items() if k not in ("contexts", "current_context")}
    return Config(path, contexts, data.get("current_context"), extra)


def save_config(config: Config) -> None:
    try:
        atomic_write_text(config.path, json.dumps(config.to_json(), indent=2) + "\n", mode=0o600)
    except OSError as exc:
        raise CliError(f"cannot write config file {config.path}: {exc}") from exc


def check_context_name(name: str) -> str:
    if not _CONTEXT_NAME.match(name):
        raise CliUsageError(f"invalid context name {name!r}: use letters, digits, '.', '_' or '-'")
    return name


def check_zookeeper(address: str) -> str:
    """Validate HOST:PORT[,HOST:PORT...][/chroot]; return it stripped."""
    address = address.strip()
    hosts, slash, chroot = address.partition("/")
    bad = f"invalid ZooKeeper address {address!r}: expected HOST:PORT[,HOST:PORT...][/chroot]"
    if not hosts:
        raise CliUsageError(bad)
    for host in hosts.split(","):
        match = _HOST_PORT.match(host.strip())
        if not match or (match.group(3) and not 0 < int(match.group(3)) < 65536):
            raise CliUsageError(bad)
    if slash and (not chroot or chroot.endswith("/") or "//" in chroot):
        raise CliUsageError(f"invalid ZooKeeper chroot in {address!r}: expected /path")
    return address


def check_bootstrap(address: str) -> str:
    """Validate HOST:PORT[,HOST:PORT...] (a port on each, as Kafka's clients need); return it stripped."""
    address = address.strip()
    bad = f"invalid bootstrap servers {address!r}: expected HOST:PORT[,HOST:PORT...]"
    hosts = [h.strip() for h in address.split(",")]
    if not address or "/" in address:
        raise CliUsageError(bad)
    for host in hosts:
        match = _HOST_PORT.match(host)
        if not match or not match.group(3) or not 0 < int(match.group(3)) < 65536:
            raise CliUsageError(bad)
    return ",".join(hosts)


def resolve_target(options: SharedOptions, config: Config | None = None,
                   env: Mapping[str, str] = os.environ) -> Target:
    """-z or -b, then $KAFKACTL_ZOOKEEPER or $KAFKACTL_BOOTSTRAP_SERVERS, then
    --context, then the current context: the first that is given wins."""
    if options.zookeeper:
        return Target(ZOOKEEPER, check_zookeeper(options.zookeeper), "--zookeeper")
    if options.bootstrap_server:
        return Target(ADMIN_API, check_bootstrap(options.bootstrap_server), "--bootstrap-server")
    from_env = _from_env(env)
    if from_env is not None:
        return from_env
    config = config if config is not None else load_config(config_path(env))
    if options.context:
        return _from_context(config, options.context, "--context")
    if config.current_context:
        return _from_context(config, config.current_context, "current context")
    raise CliUsageError("no cluster address: run `kafkactl cluster up` to start a local cluster, "
                        "or pass --zookeeper HOST:PORT or --bootstrap-server HOST:PORT "
                        "(or set a context with `kafkactl context set`)")


def _from_env(env: Mapping[str, str]) -> Target | None:
    zookeeper, bootstrap = env.get(ENV_ZOOKEEPER), env.get(ENV_BOOTSTRAP)
    if zookeeper and bootstrap:
        raise CliUsageError(f"both ${ENV_ZOOKEEPER} and ${ENV_BOOTSTRAP} are set: unset one "
                            f"(or override both with -z or -b)")
    if zookeeper:
        return Target(ZOOKEEPER, check_zookeeper(zookeeper), f"${ENV_ZOOKEEPER}")
    if bootstrap:
        return Target(ADMIN_API, check_bootstrap(bootstrap), f"${ENV_BOOTSTRAP}")
    return None


def resolve_zookeeper(options: SharedOptions, config: Config | None = None,
                      env: Mapping[str, str] = os.environ) -> Resolved:
    """The ZooKeeper address, for commands only ZooKeeper can serve: exit 2
    when the cluster was given by its bootstrap servers."""
    target = resolve_target(options, config, env)
    if target.backend != ZOOKEEPER:
        raise CliUsageError(f"this command works through ZooKeeper only, and the cluster is given by "
                            f"bootstrap servers (from {target.source}): give -z/--zookeeper HOST:PORT")
    return Resolved(target.address, target.source)


def context_entry(config: Config, name: str) -> dict:
    try:
        return config.contexts[name]
    except KeyError:
        known = ", ".join(sorted(config.contexts)) or "none defined"
        raise CliUsageError(f"no context named {name!r} in {config.path} (known: {known})") from None


def _from_context(config: Config, name: str, how: str) -> Target:
    entry = context_entry(config, name)
    zookeeper, bootstrap = entry.get("zookeeper"), entry.get(BOOTSTRAP_KEY)
    if zookeeper and bootstrap:
        raise CliUsageError(f"context {name!r} has both a zookeeper address and bootstrap servers; "
                            f"keep one with `kafkactl context set {name} -z ...` or `-b ...`")
    if bootstrap:
        return Target(ADMIN_API, check_bootstrap(str(bootstrap)), f"{how} {name!r}")
    if not zookeeper:
        raise CliUsageError(f"context {name!r} has no address; set one with `kafkactl context set {name} "
                            f"--zookeeper HOST:PORT` or `--bootstrap-server HOST:PORT`")
    return Target(ZOOKEEPER, check_zookeeper(str(zookeeper)), f"{how} {name!r}")
