"""What `deploy install` changes on one host, decided from its facts (pure).

`plan_host` compares what the inventory and the wheelhouse want on a host
(layout.py's files, render.py's contents) with what the host has
(host_facts.py's answer, media.py's detection) and returns a `HostPlan`:

- `problems`: why nothing may be installed on this host. The deploy checks
  every host first and changes no host while any has a problem, so a bad
  host never leaves the cluster half rolled out. They are: no python3 with
  the venv module, a python or machine the wheelhouse's wheels do not fit,
  no java or no ZooKeeper jar on a ZooKeeper host, a log dir that is not a
  directory or cannot be written (read-only file system, no permission), a
  log dir whose media cannot be decided.
- `warnings`: a log dir on the root file system; inventory media that
  disagrees with the detected media.
- `steps`, in the order the shell runs them: the release (when not
  complete on the host), the directories, each file that is new or
  changed, the `current` link, the systemd units, and the old releases to
  remove (all but the new one and the one before it: layout.KEPT_RELEASES).

No step means the host already is as the inventory says: a second
`deploy install` of the same release changes nothing.
"""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafkactl.cluster.deploy import render
from kafkactl.cluster.deploy.inventory import BrokerHost, Inventory, ZooKeeperHost
from kafkactl.cluster.deploy.layout import BROKER, ZOOKEEPER, HostLayout
from kafkactl.cluster.deploy.media import Decided, DetectedMedia, effective_media, root_fs_warning
from kafkactl.cluster.deploy.releases import releases_to_remove

MIN_PYTHON = (3, 11)
ZOOKEEPER_JAR = "/usr/share/java/zookeeper.jar"
# ZooKeeper's classpath on a host with Debian's `zookeeper` package: its conf
# dir (log4j settings), the jar (whose manifest names its dependencies) and,
# when present, an SLF4J binding, without which ZooKeeper logs nothing.
ZOOKEEPER_CONF_DIR = "/etc/zookeeper/conf"
SLF4J_BINDING = "/usr/share/java/slf4j-simple.jar"
ZOOKEEPER_JARS = (ZOOKEEPER_JAR, SLF4J_BINDING)
SYSTEMD_UNIT_DIR = "/etc/systemd/system"
PRIVATE, SHARED = 0o640, 0o644


@dataclass(frozen=True, slots=True)
class Release:
    """The wheelhouse to install: its release name and files (name, sha256, size)."""

    name: str
    files: tuple[tuple[str, str, int], ...]
    manifest: str                                  # SHA256SUMS: "sha256  name" lines
    compatible: Callable[[str, str, str | None], str | None]   # (python, machine, glibc) -> problem or None


@dataclass(frozen=True, slots=True)
class InstallRelease:
    release: str
    wheel_count: int
    size_bytes: int

    def describe(self) -> str:
        return f"install release {self.release} ({self.wheel_count} wheels, {self.size_bytes / 1e6:.1f} MB)"


@dataclass(frozen=True, slots=True)
class MakeDirs:
    paths: tuple[str, ...]

    def describe(self) -> str:
        return "create " + ", ".join(self.paths)


@dataclass(frozen=True, slots=True)
class WriteFile:
    path: str
    content: bytes
    mode: int
    new: bool

    def describe(self) -> str:
        return f"{'write' if self.new else 'update'} {self.path}"


@dataclass(frozen=True, slots=True)
class PointCurrent:
    release: str

    def describe(self) -> str:
        return f"point current at {self.release}"


@dataclass(frozen=True, slots=True)
class ReloadSystemd:
    units: tuple[str, ...]

    def describe(self) -> str:
        return f"systemctl daemon-reload; enable {' '.join(self.units)}"


@dataclass(frozen=True, slots=True)
class RemoveReleases:
    releases: tuple[str, ...]

    def describe(self) -> str:
        return "remove old releases " + ", ".join(self.releases)


Step = InstallRelease | MakeDirs | WriteFile | PointCurrent | ReloadSystemd | RemoveReleases


@dataclass(frozen=True, slots=True)
class HostPlan:
    name: str
    roles: tuple[str, ...]
    problems: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    media: Mapping[str, Decided] = field(default_factory=dict)
    steps: tuple[Step, ...] = ()
    systemd: bool = False


def facts_request(inventory: Inventory, name: str, layout: HostLayout) -> dict[str, Any]:
    """What host_facts.py is asked on host `name`: the files to compare, the dirs to check."""
    broker, zookeeper = _roles_of(inventory, name)
    files = [path for path, _, _ in _desired_files(inventory, broker, zookeeper, layout, None, "0.0.0-000000000000",
                                                   java="java", media=None, systemd=True)]
    dirs = [log_dir.path for log_dir in broker.log_dirs] if broker else []
    return {"install_root": layout.install_root, "files": files, "dirs": dirs,
            "jars": list(ZOOKEEPER_JARS) if zookeeper else []}


def plan_host(inventory: Inventory, name: str, facts: Mapping[str, Any],
              detected: Mapping[str, DetectedMedia], release: Release, layout: HostLayout) -> HostPlan:
    broker, zookeeper = _roles_of(inventory, name)
    roles = tuple(role for role, host in ((ZOOKEEPER, zookeeper), (BROKER, broker)) if host)
    problems = _prerequisite_problems(name, facts, release, zookeeper is not None)
    warnings: list[str] = []
    media: dict[str, Decided] = {}
    if broker is not None:
        problems += _log_dir_problems(name, broker, facts)
        for log_dir in broker.log_dirs:
            found = detected.get(log_dir.path)
            decision = effective_media(name, log_dir, found)
            if isinstance(decision, Decided):
                media[log_dir.path] = decision
                if decision.disagrees:
                    warnings.append(f"host {name}: log dir {log_dir.path}: {decision.why}")
            else:
                problems.append(decision.error)
            warning = root_fs_warning(name, found) if found is not None else None
            if warning:
                warnings.append(warning)
    if problems:
        return HostPlan(name, roles, tuple(problems), tuple(warnings), media)
    steps = _steps(inventory, name, broker, zookeeper, facts, media, release, layout)
    return HostPlan(name, roles, (), tuple(warnings), media, tuple(steps), bool(facts.get("systemd")))


def _roles_of(inventory: Inventory, name: str) -> tuple[BrokerHost | None, ZooKeeperHost | None]:
    broker = next((host for host in inventory.brokers if host.name == name), None)
    zookeeper = next((host for host in inventory.zookeeper if host.name == name), None)
    if broker is None and zookeeper is None:
        raise ValueError(f"host {name} is in neither the brokers nor the zookeeper group")
    return broker, zookeeper


def _prerequisite_problems(name: str, facts: Mapping[str, Any], release: Release, zookeeper: bool) -> list[str]:
    python = facts.get("python") or {}
    version = python.get("version")
    if not python.get("executable"):
        return [f"host {name}: no python3 on the PATH (kafkactl needs Python "
                f"{'.'.join(map(str, MIN_PYTHON))} or later with the venv module)"]
    if not version:
        return [f"host {name}: {python['executable']} does not run"]
    problems = []
    if tuple(int(part) for part in version.split(".")[:2]) < MIN_PYTHON:
        problems.append(f"host {name}: python3 is {version}; kafkactl needs "
                        f"{'.'.join(map(str, MIN_PYTHON))} or later")
    elif not python.get("venv"):
        problems.append(f"host {name}: python3 {version} has no venv module (Debian: apt install python3-venv)")
    else:
        mismatch = release.compatible(version, str(facts.get("machine")), facts.get("glibc"))
        if mismatch:
            problems.append(f"host {name}: {mismatch}")
    if zookeeper:
        if not facts.get("java"):
            problems.append(f"host {name}: no java on the PATH, which ZooKeeper needs "
                            "(Debian: apt install default-jre-headless zookeeper)")
        if not (facts.get("jars") or {}).get(ZOOKEEPER_JAR):
            problems.append(f"host {name}: no {ZOOKEEPER_JAR} (Debian: apt install zookeeper)")
    return problems


def _log_dir_problems(name: str, broker: BrokerHost, facts: Mapping[str, Any]) -> list[str]:
    problems = []
    for entry in facts.get("dirs") or []:
        path = entry["path"]
        if entry["exists"] and not entry["is_dir"]:
            problems.append(f"host {name}: log dir {path} exists and is not a directory")
        elif entry["read_only"]:
            problems.append(f"host {name}: log dir {path} is on a read-only file system")
        elif not entry["writable"]:
            where = path if entry["exists"] else f"the parent of {path}"
            problems.append(f"host {name}: log dir {path}: cannot write to {where}")
    return problems


def _steps(inventory: Inventory, name: str, broker: BrokerHost | None, zookeeper: ZooKeeperHost | None,
           facts: Mapping[str, Any], media: Mapping[str, Decided], release: Release,
           layout: HostLayout) -> list[Step]:
    steps: list[Step] = []
    installed = facts.get("releases") or {}
    if not installed.get(release.name):
        steps.append(InstallRelease(release.name, len(release.files), sum(size for _, _, size in release.files)))
    dirs = [layout.etc_dir, posixpath.join(layout.etc_dir, "services"), layout.run_dir, layout.logs_dir]
    if zookeeper is not None:
        dirs.append(layout.zookeeper_data_dir)
    missing_log_dirs = [entry["path"] for entry in facts.get("dirs") or [] if not entry["exists"]]
    steps.append(MakeDirs((*dirs, *missing_log_dirs)))   # mkdir -p: cheap, and never "a change" alone
    systemd = bool(facts.get("systemd"))
    files = facts.get("files") or {}
    units = []
    for path, content, mode in _desired_files(inventory, broker, zookeeper, layout, facts, release.name,
                                              java=str(facts.get("java") or "java"),
                                              media={p: d.media for p, d in media.items()}, systemd=systemd):
        if files.get(path) != hashlib.sha256(content).hexdigest():
            steps.append(WriteFile(path, content, mode, new=files.get(path) is None))
            if path.startswith(SYSTEMD_UNIT_DIR):
                units.append(posixpath.basename(path))
    if facts.get("current") != release.name:
        steps.append(PointCurrent(release.name))
    if units:
        steps.append(ReloadSystemd(tuple(units)))
    old = releases_to_remove(installed, facts.get("current"), release.name, facts.get("in_use") or ())
    if old:
        steps.append(RemoveReleases(old))
    return steps


def has_changes(plan: HostPlan) -> bool:
    return any(not isinstance(step, MakeDirs) for step in plan.steps)


def _desired_files(inventory: Inventory, broker: BrokerHost | None, zookeeper: ZooKeeperHost | None,
                   layout: HostLayout, facts: Mapping[str, Any] | None, release: str, *, java: str,
                   media: Mapping[str, str] | None, systemd: bool) -> list[tuple[str, bytes, int]]:
    """(path, content, mode) of every file of this host. With media None (the
    facts request) contents are not rendered, only paths matter."""
    files: list[tuple[str, bytes, int]] = []
    definitions: list[render.ServiceDefinition] = []
    if zookeeper is not None:
        jars = (facts or {}).get("jars") or {}
        classpath = [ZOOKEEPER_CONF_DIR, ZOOKEEPER_JAR, *([SLF4J_BINDING] if jars.get(SLF4J_BINDING) else [])]
        zoo_cfg = render.zoo_cfg(inventory, zookeeper, layout)
        files.append((layout.zoo_cfg, zoo_cfg.encode(), SHARED))
        files.append((layout.myid, render.myid(zookeeper).encode(), SHARED))
        definitions.append(render.zookeeper_service(layout, release, java, classpath, zoo_cfg))
    if broker is not None:
        properties = render.server_properties(inventory, broker, media) if media is not None else ""
        files.append((layout.server_properties, properties.encode(), PRIVATE))
        definitions.append(render.broker_service(layout, release, properties))
    for definition in definitions:
        files.append((layout.service_definition(definition.service), definition.to_json().encode(), SHARED))
        if systemd:
            unit = posixpath.join(SYSTEMD_UNIT_DIR, render.systemd_unit_name(definition.service))
            files.append((unit, render.systemd_unit(definition).encode(), SHARED))
    return files


def sorted_steps(steps: Sequence[Step]) -> list[str]:
    return [step.describe() for step in steps]
