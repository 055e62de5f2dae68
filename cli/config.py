"""The user's kafkactl config file: named contexts and the current one.

    {"current_context": "local",
     "contexts": {"local": {"zookeeper": "127.0.0.1:41234",
                            "cluster_dir": "/home/u/.local/state/kafkactl/local"}}}

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


def resolve_zookeeper(options: SharedOptions, config: Config | None = None,
                      env: Mapping[str, str] = os.environ) -> Resolved:
    """--zookeeper, then $KAFKACTL_ZOOKEEPER, then --context, then the current context."""
    if options.zookeeper:
        return Resolved(check_zookeeper(options.zookeeper), "--zookeeper")
    if env.get(ENV_ZOOKEEPER):
        return Resolved(check_zookeeper(env[ENV_ZOOKEEPER]), f"${ENV_ZOOKEEPER}")
    config = config if config is not None else load_config(config_path(env))
    if options.context:
        return _from_context(config, options.context, "--context")
    if config.current_context:
        return _from_context(config, config.current_context, "current context")
    raise CliUsageError("no ZooKeeper address: run `kafkactl cluster up` to start a local cluster, "
                        "or pass --zookeeper HOST:PORT (or set a context with `kafkactl context set`)")


def context_entry(config: Config, name: str) -> dict:
    try:
        return config.contexts[name]
    except KeyError:
        known = ", ".join(sorted(config.contexts)) or "none defined"
        raise CliUsageError(f"no context named {name!r} in {config.path} (known: {known})") from None


def _from_context(config: Config, name: str, how: str) -> Resolved:
    entry = context_entry(config, name)
    address = entry.get("zookeeper")
    if not address:
        raise CliUsageError(f"context {name!r} has no zookeeper address; "
                            f"set one with `kafkactl context set {name} --zookeeper HOST:PORT`")
    return Resolved(check_zookeeper(str(address)), f"{how} {name!r}")
