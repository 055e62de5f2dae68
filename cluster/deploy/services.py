"""Starting, stopping and asking after a host's services, over its SSH session.

Two service managers, chosen per host by host_facts' `systemd`:

- the deploy's own supervisor (supervisor.py), on hosts whose init is not
  systemd: `<current>/venv/bin/python -m kafkactl.cluster.deploy.supervisor
  --root <install root> ACTION SERVICE`, which prints one JSON object;
- systemd, where it is the init: the units host_plan installs
  (`kafkactl-<service>.service`), driven with systemctl.

Either way a service runs the command of its definition
(etc/services/<service>.json): its release's own venv, so a restart is
what switches a service to a newly installed release.

`start` and `stop` are idempotent; `restart` of a broker stops it by
SIGTERM, which runs its controlled shutdown, waits for it to exit (bounded
by the definition's stop_timeout_s) and starts it again.
"""

from __future__ import annotations

import json
import posixpath
import shlex
from dataclasses import dataclass
from typing import Any

from kafkactl.cluster.deploy.layout import HostLayout
from kafkactl.cluster.deploy.render import BROKER_STOP_TIMEOUT_S, systemd_unit_name
from kafkactl.cluster.deploy.ssh import HostSession

# A broker's stop may take its whole controlled shutdown; then the start waits
# for the new process to settle.
LOCK_TIMEOUT_S = 60.0       # another deploy working the same service on the host
SERVICE_COMMAND_TIMEOUT_S = LOCK_TIMEOUT_S + BROKER_STOP_TIMEOUT_S + 60.0
STATUS_TIMEOUT_S = 30.0
NOT_FOUND = 127       # the shell's exit status for a command it cannot find


class ServiceError(RuntimeError):
    """A service command failed on a host; the message names the host and service."""


@dataclass(frozen=True, slots=True)
class ServiceStatus:
    service: str
    defined: bool
    running: bool
    pid: int | None = None
    release: str | None = None
    uptime_s: float | None = None
    restarts: int | None = None
    state: str | None = None
    pending_restart: bool | None = None   # None: cannot tell (systemd)

    def to_dict(self) -> dict[str, Any]:
        return {"service": self.service, "defined": self.defined, "running": self.running, "pid": self.pid,
                "release": self.release, "uptime_s": self.uptime_s, "restarts": self.restarts,
                "state": self.state, "pending_restart": self.pending_restart}


class HostServices:
    def __init__(self, session: HostSession, layout: HostLayout, systemd: bool):
        self.session = session
        self.layout = layout
        self.systemd = systemd

    def start(self, service: str) -> str:
        """What was done: "started" or "none" (it was running)."""
        return self._act("start", service)

    def stop(self, service: str) -> str:
        return self._act("stop", service)

    def restart(self, service: str) -> str:
        return self._act("restart", service)

    def status(self, services: list[str]) -> dict[str, ServiceStatus]:
        if self.systemd:
            return {service: self._systemd_status(service) for service in services}
        answer = self._supervisor("status", services, STATUS_TIMEOUT_S, check=False)
        statuses = answer.get("services") if isinstance(answer.get("services"), dict) else {}
        return {service: _supervisor_status(service, statuses.get(service) or {}) for service in services}

    def _act(self, action: str, service: str) -> str:
        if self.systemd:
            return self._systemd_act(action, service)
        answer = self._supervisor(action, [service], SERVICE_COMMAND_TIMEOUT_S, check=True)
        return str(answer.get("action", action))

    def _supervisor(self, action: str, services: list[str], timeout_s: float, check: bool) -> dict[str, Any]:
        python = posixpath.join(self.layout.current_link, "venv", "bin", "python")
        command = shlex.join([python, "-m", "kafkactl.cluster.deploy.supervisor", "--root",
                              self.layout.install_root, "--lock-timeout-s", f"{LOCK_TIMEOUT_S:g}", action,
                              *services])
        result = self.session.run(command, timeout_s=timeout_s, check=False)
        if result.exit_status == NOT_FOUND:   # no release installed: nothing runs, nothing can start
            if action in ("stop", "status"):
                return {"action": "none", "services": {}}
            raise ServiceError(f"host {self.session.name}: kafkactl is not installed there "
                               f"(no {python}): run `kafkactl deploy install` first")
        try:
            answer = json.loads(result.stdout) if result.stdout.strip() else {}
        except ValueError:
            answer = {}
        if check and result.exit_status != 0:
            raise ServiceError(f"host {self.session.name}: {action} {' '.join(services)} failed: "
                               f"{_failure_text(answer, result.stderr)}")
        return answer if isinstance(answer, dict) else {}

    def _systemd_act(self, action: str, service: str) -> str:
        unit = shlex.quote(systemd_unit_name(service))
        active = self.session.run(f"systemctl is-active --quiet {unit}", check=False,
                                  timeout_s=STATUS_TIMEOUT_S).exit_status == 0
        if (action == "start" and active) or (action == "stop" and not active):
            return "none"
        result = self.session.run(f"systemctl {action} {unit}", check=False, timeout_s=SERVICE_COMMAND_TIMEOUT_S)
        if result.exit_status != 0:
            raise ServiceError(f"host {self.session.name}: systemctl {action} {systemd_unit_name(service)} "
                               f"failed: {' '.join(result.stderr.split())[-300:]}")
        return {"start": "started", "stop": "stopped", "restart": "restarted"}[action]

    def _systemd_status(self, service: str) -> ServiceStatus:
        unit = shlex.quote(systemd_unit_name(service))
        result = self.session.run(f"systemctl show {unit} -p LoadState -p ActiveState -p MainPID -p NRestarts",
                                  check=False, timeout_s=STATUS_TIMEOUT_S)
        fields = dict(line.split("=", 1) for line in result.stdout.splitlines() if "=" in line)
        pid = int(fields.get("MainPID", "0") or 0)
        return ServiceStatus(service, defined=fields.get("LoadState") == "loaded",
                             running=fields.get("ActiveState") == "active", pid=pid or None,
                             restarts=int(fields["NRestarts"]) if fields.get("NRestarts", "").isdigit() else None,
                             state=fields.get("ActiveState"))


def _supervisor_status(service: str, entry: dict[str, Any]) -> ServiceStatus:
    return ServiceStatus(
        service, defined=bool(entry.get("defined")), running=bool(entry.get("running")),
        pid=entry.get("child_pid") or entry.get("pid"), release=entry.get("release"),
        uptime_s=entry.get("uptime_s"), restarts=entry.get("restarts"), state=entry.get("state"),
        pending_restart=entry.get("pending_restart"),
    )


def _failure_text(answer: dict[str, Any], stderr: str) -> str:
    text = answer.get("error") or answer.get("message") or stderr or "no output"
    tail = answer.get("log_tail")
    if isinstance(tail, list) and tail:
        text = f"{text}; log: {' | '.join(str(line) for line in tail[-5:])}"
    elif isinstance(tail, str) and tail:
        text = f"{text}; log: {' | '.join(tail.splitlines()[-5:])}"
    return " ".join(str(text).split())
