"""The cluster's inventory: an Ansible YAML inventory, read and validated.

One file describes the cluster for `kafkactl deploy` and for
`ansible-playbook` alike (docs/deploy.md is the operator's reference;
ansible/inventory.example.yml shows every field). `load_inventory(path)`
returns a frozen `Inventory` or raises `InventoryError`, whose text is one
line naming the file, the host (or group) and the field; the CLI prints it
and exits 2. Everything is checked here, before any host is contacted.

Groups: `zookeeper` (the ensemble) and `brokers`. A host may be in both: a
ZooKeeper node that also runs a broker is one host, one SSH connection.
Groups and variables are read as Ansible reads them (ansible_inventory.py:
group nesting, host > child group > `all` precedence), so both tools see the
same values.

Host variables:

- connection: `ansible_host` (the address; default the inventory name, which
  must then be a host name or an IP address), `ansible_port` (22),
  `ansible_user` (root), `ansible_ssh_private_key_file` (none: the SSH
  agent's keys). Ansible's older spellings `ansible_ssh_host`,
  `ansible_ssh_port`, `ansible_ssh_user` and `ansible_private_key_file` are
  read too, since Ansible would connect with them; set both spellings only
  with one value. A key file is checked to be a readable file here. Other
  `ansible_*` variables are Ansible's own and ignored.
- `zookeeper_id` on each ZooKeeper host: its myid, 1..255, unique.
- `broker_id` on each broker: its broker.id, 0..2^31-1, unique.
- `rack` (a broker's broker.rack): on every broker or on none, as Kafka's
  rack-aware replica assignment refuses a cluster where only some have one.
- `log_dirs` on each broker: a non-empty list of `{path, media}`; `path`
  absolute, in normal form, not `/`, without commas (log.dirs is a comma
  list); no two on one host equal or nested; `media` ssd, hdd or auto
  (default: auto, detected on the host, see media.py).
- `broker_config`, `zookeeper_config`: the programs' own properties
  (config_keys.py says which keys are refused: unknown ones, and those the
  deploy sets itself). Usually group variables; a host's own replaces the
  group's whole, as in Ansible.

Any other variable is the operator's (a playbook may use it), unless its
name is a close misspelling of one of the above (`brokerid`, `log_dir`):
then it is refused with the right name, since the misspelt value would be
silently ignored.

The ensemble: 1 host, or an odd number. An even ensemble of 2k hosts needs
k+1 to agree, so it tolerates k-1 failures, no more than 2k-1 hosts: the
extra host adds a failure point and nothing else.
"""

from __future__ import annotations

import ipaddress
import os
import posixpath
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import yaml

from kafkactl.cluster.deploy import config_keys
from kafkactl.cluster.deploy.ansible_inventory import (
    AnsibleInventory, AnsibleInventoryError, Var, closest, did_you_mean, read_inventory,
)

ZOOKEEPER_GROUP = "zookeeper"
BROKERS_GROUP = "brokers"
AUTO, SSD, HDD = "auto", "ssd", "hdd"
MEDIA = (SSD, HDD, AUTO)
DEFAULT_PORT = 22
DEFAULT_USER = "root"
MAX_MYID = 255
MAX_BROKER_ID = 2**31 - 1   # broker ids are int32 on the wire

# Connection variables, each with Ansible's older spelling.
CONNECTION_VARS = {
    "ansible_host": "ansible_ssh_host",
    "ansible_port": "ansible_ssh_port",
    "ansible_user": "ansible_ssh_user",
    "ansible_ssh_private_key_file": "ansible_private_key_file",
}
KNOWN_VARS = ("zookeeper_id", "broker_id", "rack", "log_dirs", "broker_config", "zookeeper_config")
LOG_DIR_KEYS = ("path", "media")

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOST_NAME = re.compile(rf"^{_LABEL}(?:\.{_LABEL})*\.?$")
_USER = re.compile(r"^[A-Za-z0-9_.][A-Za-z0-9_.-]*\$?$")


class InventoryError(ValueError):
    """The inventory cannot be used; str() is one line naming the file, the host
    (or group: `where`) and the `field`, the ones known."""

    def __init__(self, source: str, where: str, field: str, problem: str):
        self.source, self.where, self.field, self.problem = source, where, field, problem
        super().__init__(": ".join(part for part in (source, where, field, problem) if part))


@dataclass(frozen=True, slots=True)
class LogDir:
    path: str
    media: str = AUTO   # ssd, hdd, or auto: detected on the host


@dataclass(frozen=True, slots=True)
class Connection:
    address: str
    port: int = DEFAULT_PORT
    user: str = DEFAULT_USER
    key_file: str | None = None   # None: the SSH agent's keys


@dataclass(frozen=True, slots=True)
class ZooKeeperHost:
    name: str
    connection: Connection
    zookeeper_id: int
    zookeeper_config: Mapping[str, str]   # zoo.cfg lines, values as written


@dataclass(frozen=True, slots=True)
class BrokerHost:
    name: str
    connection: Connection
    broker_id: int
    rack: str | None
    log_dirs: tuple[LogDir, ...]
    broker_config: Mapping[str, str]   # server.properties lines, values as written


@dataclass(frozen=True, slots=True)
class Inventory:
    source: str
    zookeeper: tuple[ZooKeeperHost, ...]   # in the inventory's order
    brokers: tuple[BrokerHost, ...]

    def connections(self) -> dict[str, Connection]:
        """Every host to connect to, once, by inventory name."""
        hosts: list[ZooKeeperHost | BrokerHost] = [*self.zookeeper, *self.brokers]
        return {h.name: h.connection for h in hosts}

    @property
    def zookeeper_config(self) -> Mapping[str, str]:
        """The ensemble's zoo.cfg settings (the first host's, when hosts set their own)."""
        return self.zookeeper[0].zookeeper_config

    @property
    def broker_config(self) -> Mapping[str, str]:
        """The brokers' settings (the first broker's, when hosts set their own)."""
        return self.brokers[0].broker_config


def load_inventory(path: str, readable: Callable[[str], bool] | None = None) -> Inventory:
    """Read and validate the inventory at `path`; InventoryError if it cannot be used."""
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read()
    except OSError as error:
        raise InventoryError(path, "", "", f"cannot read the inventory: {error.strerror}") from None
    except UnicodeDecodeError:
        raise InventoryError(path, "", "", "cannot read the inventory: not UTF-8 text") from None
    return parse_inventory(text, path, readable or _readable_file)


def parse_inventory(text: str, source: str, readable: Callable[[str], bool]) -> Inventory:
    """The inventory in `text`; `readable(path)` says whether a key file can be read."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise InventoryError(source, "", "", f"not YAML{where}: {problem}") from None
    try:
        return _Reader(source, read_inventory(data), readable).inventory()
    except AnsibleInventoryError as error:
        raise InventoryError(source, error.where, error.field, error.problem) from None


def _readable_file(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.R_OK)


class _Reader:
    """Turns Ansible's hosts and variables into the typed inventory, checking as it goes."""

    def __init__(self, source: str, ansible: AnsibleInventory, readable: Callable[[str], bool]):
        self.source, self.ansible, self.readable = source, ansible, readable

    def fail(self, where: str, field: str, problem: str) -> InventoryError:
        return InventoryError(self.source, where, field, problem)

    def inventory(self) -> Inventory:
        zookeeper_names = self._group(ZOOKEEPER_GROUP)
        broker_names = self._group(BROKERS_GROUP)
        every_host = tuple(dict.fromkeys((*zookeeper_names, *broker_names)))
        for name in every_host:
            self._check_var_names(name)
        connections = {name: self._connection(name) for name in every_host}
        self._check_distinct_machines(connections)
        zookeeper = tuple(self._zookeeper_host(name, connections[name]) for name in zookeeper_names)
        self._check_ensemble(zookeeper)
        brokers = tuple(self._broker_host(name, connections[name]) for name in broker_names)
        self._check_unique_ids([(b.name, b.broker_id) for b in brokers], "broker_id")
        self._check_racks(brokers)
        return Inventory(self.source, zookeeper, brokers)

    # --- groups and variables

    def _group(self, name: str) -> tuple[str, ...]:
        hosts = self.ansible.group(name)
        if name not in self.ansible.members:
            other = closest(name, self.ansible.members, cutoff=0.6)
            hint = f" (is {other!r} meant to be {name!r}?)" if other else ""
            raise self.fail(f"group {name}", "", f"missing: the inventory needs groups "
                            f"{ZOOKEEPER_GROUP!r} and {BROKERS_GROUP!r}{hint}")
        if not hosts:
            raise self.fail(f"group {name}", "hosts", "no hosts")
        return hosts

    def _vars(self, host: str) -> Mapping[str, Var]:
        return self.ansible.host_vars[host]

    def _check_var_names(self, host: str) -> None:
        for name, var in self._vars(host).items():
            if name in KNOWN_VARS or name.startswith("ansible_"):
                continue
            match = closest(name, KNOWN_VARS)
            if match:
                raise self.fail(var.origin, name, f"unknown variable (did you mean {match!r}?)")

    # --- connection

    def _connection(self, host: str) -> Connection:
        address_var = self._connection_var(host, "ansible_host")
        if address_var is None:
            address = host
            if not _addressable(host):
                raise self.fail(f"host {host}", "ansible_host", f"not set, and {host!r} is not a host name "
                                "or an IP address (set ansible_host to the host's address)")
        else:
            address = address_var.value if isinstance(address_var.value, str) else ""
            if not _addressable(address):
                raise self.fail(address_var.origin, "ansible_host",
                                f"{address_var.value!r} is not a host name or an IP address")
        port_var = self._connection_var(host, "ansible_port")
        port = DEFAULT_PORT if port_var is None else _integer(port_var.value)
        if port is None or not 1 <= port <= 65535:
            assert port_var is not None
            raise self.fail(port_var.origin, "ansible_port", f"{port_var.value!r} is not a port (1..65535)")
        user_var = self._connection_var(host, "ansible_user")
        user = DEFAULT_USER if user_var is None else user_var.value
        if not isinstance(user, str) or not _USER.match(user):
            assert user_var is not None
            raise self.fail(user_var.origin, "ansible_user", f"{user_var.value!r} is not a user name")
        return Connection(address, port, user, self._key_file(host))

    def _connection_var(self, host: str, name: str) -> Var | None:
        current, older = self._vars(host).get(name), self._vars(host).get(CONNECTION_VARS[name])
        if current is not None and older is not None and current.value != older.value:
            raise self.fail(f"host {host}", name, f"{current.value!r} ({current.origin}) but "
                            f"{CONNECTION_VARS[name]} is {older.value!r} ({older.origin}); set one")
        return current or older

    def _key_file(self, host: str) -> str | None:
        var = self._connection_var(host, "ansible_ssh_private_key_file")
        if var is None:
            return None
        if not isinstance(var.value, str) or not var.value.strip():
            raise self.fail(var.origin, "ansible_ssh_private_key_file", f"{var.value!r} is not a file path")
        # As ssh reads `-i`: ~ is the local home, a relative path is from the current directory.
        path = os.path.expanduser(var.value)
        if not self.readable(path):
            raise self.fail(var.origin, "ansible_ssh_private_key_file", f"{path} is not a readable file here")
        return path

    def _check_distinct_machines(self, connections: Mapping[str, Connection]) -> None:
        # One machine is one inventory host, in as many groups as it serves: two
        # entries reaching the same sshd would deploy twice onto one machine.
        seen: dict[tuple[str, int], str] = {}
        for name, connection in connections.items():
            key = (connection.address.lower(), connection.port)
            if key in seen:
                raise self.fail(f"host {name}", "ansible_host", f"{connection.address}:{connection.port} is "
                                f"also host {seen[key]}; a machine running ZooKeeper and a broker is one host "
                                "in both groups")
            seen[key] = name

    # --- ZooKeeper

    def _zookeeper_host(self, host: str, connection: Connection) -> ZooKeeperHost:
        myid = self._id(host, "zookeeper_id", 1, MAX_MYID)
        return ZooKeeperHost(host, connection, myid, self._zookeeper_config(host))

    def _zookeeper_config(self, host: str) -> Mapping[str, str]:
        var = self._vars(host).get("zookeeper_config")
        settings = self._config_mapping(var, "zookeeper_config")
        config = {}
        for key, value in settings.items():
            problem = config_keys.zookeeper_key_problem(key)
            if problem is None:
                try:
                    config[key] = config_keys.zookeeper_value(key, value)
                except ValueError as error:
                    problem = f"{key}: {error}"
            if problem is not None:
                assert var is not None
                raise self.fail(var.origin, "zookeeper_config", problem)
        return MappingProxyType(config)

    def _check_ensemble(self, zookeeper: tuple[ZooKeeperHost, ...]) -> None:
        self._check_unique_ids([(z.name, z.zookeeper_id) for z in zookeeper], "zookeeper_id")
        size = len(zookeeper)
        if size % 2 == 0:
            tolerated = size // 2 - 1
            raise self.fail(f"group {ZOOKEEPER_GROUP}", "hosts", f"{size} hosts form an even ensemble, which "
                            f"tolerates {tolerated} failed host{'s' if tolerated != 1 else ''}, as {size - 1} "
                            f"would: use {size - 1} or {size + 1}")

    # --- brokers

    def _broker_host(self, host: str, connection: Connection) -> BrokerHost:
        broker_id = self._id(host, "broker_id", 0, MAX_BROKER_ID)
        log_dirs = self._log_dirs(host)
        config = self._broker_config(host, broker_id, log_dirs)
        return BrokerHost(host, connection, broker_id, self._rack(host), log_dirs, config)

    def _rack(self, host: str) -> str | None:
        var = self._vars(host).get("rack")
        if var is None:
            return None
        value = var.value
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str) or not value.strip() or value != value.strip() or "\n" in value:
            raise self.fail(var.origin, "rack", f"{var.value!r} is not a rack name")
        return value

    def _check_racks(self, brokers: tuple[BrokerHost, ...]) -> None:
        with_rack = [b.name for b in brokers if b.rack is not None]
        without = [b.name for b in brokers if b.rack is None]
        if with_rack and without:
            raise self.fail(f"host {without[0]}", "rack", f"not set, but set on {', '.join(with_rack)}: set it on "
                            "every broker or on none (Kafka's rack-aware assignment needs all)")

    def _log_dirs(self, host: str) -> tuple[LogDir, ...]:
        var = self._vars(host).get("log_dirs")
        if var is None or var.value is None or var.value == []:
            raise self.fail(f"host {host}", "log_dirs", "a broker needs at least one log dir")
        if not isinstance(var.value, list):
            raise self.fail(var.origin, "log_dirs", "must be a list of {path, media}")
        log_dirs: list[LogDir] = []
        for index, entry in enumerate(var.value):
            field = f"log_dirs[{index}]"
            log_dir = self._log_dir(var.origin, field, entry)
            for other in log_dirs:
                problem = _overlap(log_dir.path, other.path)
                if problem:
                    raise self.fail(var.origin, f"{field}.path", problem)
            log_dirs.append(log_dir)
        return tuple(log_dirs)

    def _log_dir(self, origin: str, field: str, entry: Any) -> LogDir:
        if not isinstance(entry, Mapping):
            raise self.fail(origin, field, f"expected {{path: ..., media: ssd|hdd|auto}}, found {entry!r}")
        for key in entry:
            if key not in LOG_DIR_KEYS:
                raise self.fail(origin, f"{field}.{key}", f"not a log dir key: a log dir has only path "
                                f"and media{did_you_mean(str(key), LOG_DIR_KEYS)}")
        path = entry.get("path")
        problem = _path_problem(path)
        if problem or not isinstance(path, str):
            raise self.fail(origin, f"{field}.path", problem or "not a path")
        media = entry.get("media", AUTO)
        if media not in MEDIA:
            raise self.fail(origin, f"{field}.media", f"{media!r} is not one of ssd, hdd, auto")
        return LogDir(path, media)

    def _broker_config(self, host: str, broker_id: int, log_dirs: tuple[LogDir, ...]) -> Mapping[str, str]:
        var = self._vars(host).get("broker_config")
        settings = self._config_mapping(var, "broker_config")
        config = {}
        for key, value in settings.items():
            problem = config_keys.broker_key_problem(key)
            if problem is None:
                try:
                    config[key] = config_keys.property_value(value)
                except ValueError as error:
                    problem = f"{key}: {error}"
            if problem is not None:
                assert var is not None
                raise self.fail(var.origin, "broker_config", problem)
        problem = config_keys.broker_values_problem(config, broker_id, [d.path for d in log_dirs])
        if problem is not None:
            assert var is not None   # without broker_config, every value is the broker's default
            raise self.fail(var.origin, "broker_config", problem)
        return MappingProxyType(config)

    # --- shared

    def _config_mapping(self, var: Var | None, field: str) -> Mapping[str, Any]:
        if var is None or var.value is None:
            return {}
        if not isinstance(var.value, Mapping):
            raise self.fail(var.origin, field, "must be a mapping of property names to values")
        for key in var.value:
            if not isinstance(key, str):
                raise self.fail(var.origin, field, f"the key {key!r} is not a property name")
        return var.value

    def _id(self, host: str, field: str, low: int, high: int) -> int:
        var = self._vars(host).get(field)
        if var is None:
            group = ZOOKEEPER_GROUP if field == "zookeeper_id" else BROKERS_GROUP
            raise self.fail(f"host {host}", field, f"not set (every host of group {group} needs one)")
        value = var.value
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(var.origin, field, f"{value!r} is not an integer")
        if not low <= value <= high:
            raise self.fail(var.origin, field, f"{value} is out of range ({low}..{high})")
        return value

    def _check_unique_ids(self, ids: list[tuple[str, int]], field: str) -> None:
        seen: dict[int, str] = {}
        for name, value in ids:
            if value in seen:
                raise self.fail(f"host {name}", field, f"{value} is also the {field} of {seen[value]}")
            seen[value] = name


def _addressable(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        return len(name) <= 253 and bool(_HOST_NAME.match(name))


def _integer(value: Any) -> int | None:
    # Ansible accepts a port written as a string, as YAML gives it when quoted.
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


def _path_problem(path: Any) -> str | None:
    if not isinstance(path, str) or not path:
        return "missing" if path is None else f"{path!r} is not a path"
    if not path.startswith("/"):
        return f"{path} is not absolute"
    if path == "/":
        return "/ cannot be a log dir"
    if "," in path:
        return f"{path} contains a comma, which separates log.dirs"
    if any(ch in path for ch in "\n\r\t") or path != path.strip():
        return f"{path!r} contains white space at its ends or a control character"
    normal = posixpath.normpath(path)
    if normal.startswith("//"):   # normpath keeps a leading // (POSIX allows it a meaning)
        normal = "/" + normal.lstrip("/")
    if normal != path:
        return f"{path} is not in normal form (write {normal})"
    return None


def _overlap(path: str, other: str) -> str:
    # Nested log dirs: the outer one would hold the inner one's partition
    # directories as entries of its own, and the two would share one disk's space.
    if path == other:
        return f"{path} is listed twice"
    if path.startswith(other + "/"):
        return f"{path} is inside {other}, another log dir of this broker"
    if other.startswith(path + "/"):
        return f"{path} contains {other}, another log dir of this broker"
    return ""
