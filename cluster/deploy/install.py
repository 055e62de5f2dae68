"""The shell of `deploy plan` and `deploy install`: facts in, steps out, over SSH.

1. `gather`: on each host, host_facts.py and (brokers) media_probe.py, each
   one command whose script goes as standard input (`python3 - ...`).
2. `host_plan.plan_host` decides, purely, from what was gathered.
3. `apply` runs one host's steps in order. Each step is safe to repeat, and
   the order makes a crash at any point leave the host either as it was or
   on the way to the new state, never broken:
   - a release is complete only once `installed.json` exists, which is
     written last; an incomplete one is rebuilt from scratch next time
     (its venv removed first), and no service names it until step 3;
   - wheels arrive as `.part` files, checked by sha256, then renamed
     (ssh.HostSession.upload), and the whole wheelhouse is checked again
     with `sha256sum -c` before pip reads it;
   - every file is written to a `.part` and renamed;
   - `current` is switched by renaming a new link over it.
   A running service is not touched: new definitions take effect at its
   next restart (layout.py).
"""

from __future__ import annotations

import json
import posixpath
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from kafkactl.cluster.deploy import host_plan, render
from kafkactl.cluster.deploy.host_plan import (
    HostPlan, InstallRelease, MakeDirs, PointCurrent, ReloadSystemd, Release, RemoveReleases, Step, WriteFile,
)
from kafkactl.cluster.deploy.inventory import Inventory
from kafkactl.cluster.deploy.layout import HostLayout
from kafkactl.cluster.deploy.media import DetectedMedia, parse_probe_output, probe_command, probe_source
from kafkactl.cluster.deploy.ssh import HostSession

FACTS_VERSION = 1
FACTS_TIMEOUT_S = 60.0
PIP_TIMEOUT_S = 600.0      # a venv and ~20 wheels on a slow disk
COMMAND_TIMEOUT_S = 60.0
INSTALLED_BY = "kafkactl deploy"     # installed.json's installed_by (the Ansible role writes "ansible")


class DeployError(RuntimeError):
    """An operating error on one host; the message names the host."""


@dataclass(frozen=True, slots=True)
class Gathered:
    facts: Mapping[str, Any]
    detected: Mapping[str, DetectedMedia]


def facts_source() -> str:
    return resources.files("kafkactl.cluster.deploy").joinpath("host_facts.py").read_text(encoding="utf-8")


def gather(session: HostSession, inventory: Inventory, layout: HostLayout) -> Gathered:
    request = host_plan.facts_request(inventory, session.name, layout)
    answer = session.run(f"python3 - {shlex.quote(json.dumps(request))}", input=facts_source(),
                         timeout_s=FACTS_TIMEOUT_S)
    try:
        facts = json.loads(answer.stdout)
    except ValueError:
        raise DeployError(f"host {session.name}: the facts script did not print JSON: "
                          f"{answer.stdout[:120]!r}") from None
    if not isinstance(facts, dict) or facts.get("version") != FACTS_VERSION:
        raise DeployError(f"host {session.name}: the facts script answered in another version")
    paths = request["dirs"]
    detected: Mapping[str, DetectedMedia] = {}
    if paths:
        probe = session.run(probe_command(paths), input=probe_source(), timeout_s=FACTS_TIMEOUT_S)
        detected = parse_probe_output(session.name, probe.stdout, paths)
    return Gathered(facts, detected)


def plan(session: HostSession, inventory: Inventory, release: Release, layout: HostLayout) -> HostPlan:
    gathered = gather(session, inventory, layout)
    return host_plan.plan_host(inventory, session.name, gathered.facts, gathered.detected, release, layout)


def apply(session: HostSession, host: HostPlan, release: Release, wheelhouse_dir: Path,
          layout: HostLayout) -> list[str]:
    """Runs `host.steps`; returns what was done, one line per step."""
    if host.problems:
        raise DeployError(host.problems[0])
    done = []
    for step in host.steps:
        _run_step(session, step, release, wheelhouse_dir, layout)
        if not isinstance(step, MakeDirs):
            done.append(step.describe())
    return done


def _run_step(session: HostSession, step: Step, release: Release, wheelhouse_dir: Path, layout: HostLayout) -> None:
    if isinstance(step, InstallRelease):
        install_release(session, release, wheelhouse_dir, layout)
    elif isinstance(step, MakeDirs):
        session.run(f"mkdir -p -- {' '.join(shlex.quote(path) for path in step.paths)}", timeout_s=COMMAND_TIMEOUT_S)
    elif isinstance(step, WriteFile):
        session.write_file(step.path, step.content, step.mode)
    elif isinstance(step, PointCurrent):
        target = posixpath.join("versions", step.release)
        link = layout.current_link
        session.run(f"ln -sfn {shlex.quote(target)} {shlex.quote(link + '.part')} && "
                    f"mv -T {shlex.quote(link + '.part')} {shlex.quote(link)}", timeout_s=COMMAND_TIMEOUT_S)
    elif isinstance(step, ReloadSystemd):
        units = " ".join(shlex.quote(unit) for unit in step.units)
        session.run(f"systemctl daemon-reload && systemctl enable {units}", timeout_s=COMMAND_TIMEOUT_S)
    elif isinstance(step, RemoveReleases):
        paths = " ".join(shlex.quote(layout.release_dir(name)) for name in step.releases)
        session.run(f"rm -rf -- {paths}", timeout_s=COMMAND_TIMEOUT_S)
    else:
        raise TypeError(f"unknown step {step!r}")


def install_release(session: HostSession, release: Release, wheelhouse_dir: Path, layout: HostLayout) -> None:
    name = release.name
    remote = layout.wheelhouse_dir(name)
    session.run(f"rm -f -- {shlex.quote(layout.release_marker(name))} && mkdir -p -- {shlex.quote(remote)}",
                timeout_s=COMMAND_TIMEOUT_S)
    for wheel, sha256, _ in release.files:
        session.upload(wheelhouse_dir / wheel, posixpath.join(remote, wheel), sha256)
    session.write_file(posixpath.join(remote, "SHA256SUMS"), release.manifest.encode())
    session.run(f"cd {shlex.quote(remote)} && sha256sum --check --quiet --strict SHA256SUMS",
                timeout_s=COMMAND_TIMEOUT_S)
    venv = layout.venv_dir(name)
    version = name.rsplit("-", 1)[0]
    session.run(
        f"rm -rf -- {shlex.quote(venv)} && python3 -m venv {shlex.quote(venv)} && "
        f"{shlex.quote(posixpath.join(venv, 'bin', 'pip'))} install --quiet --disable-pip-version-check "
        f"--no-index --find-links {shlex.quote(remote)} {shlex.quote('kafkactl==' + version)}",
        timeout_s=PIP_TIMEOUT_S)
    marker = render.release_marker(name, version, [wheel for wheel, _, _ in release.files], INSTALLED_BY)
    session.write_file(layout.release_marker(name), marker.encode())
