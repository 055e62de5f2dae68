"""What the host-side supervisor reads and writes, parsed and checked (pure).

supervisor.py runs services from these files under its root directory
(default /opt/kafkactl); this module turns their text into typed values and
refuses what it cannot use, with one line naming the file and the field.

`etc/services/<service>.json`, the definition, written by the deployer:

    {"argv": ["/opt/kafkactl/versions/R/venv/bin/python", "-m", "kafkactl.cluster.broker", "..."],
     "cwd": "/var/lib/kafkactl", "env": {"KEY": "VALUE"},
     "log_file": "/var/lib/kafkactl/logs/broker.log", "stop_timeout_s": 120,
     "release": "0.1.0-abcdef012345",
     "restart": {"initial_backoff_s": 1, "max_backoff_s": 30, "reset_after_s": 60,
                 "max_crashes": 5, "window_s": 300}}

- argv: a non-empty list of strings; argv[0] an absolute path (no PATH
  search: the child's PATH is a fixed minimal one, and which program runs
  must not depend on it).
- cwd, log_file: absolute paths (the supervisor runs in /).
- env: optional; names as a shell writes them, string values. They are added
  to PATH, LANG and HOME; the caller's environment is never passed on.
- stop_timeout_s: how long a stopping child may take after SIGTERM (a broker's
  controlled shutdown), more than 0, at most 3600.
- release: the installed release, letters, digits and `._+-`.
- restart: optional; any of the RestartPolicy numbers (restart_policy.py has
  the defaults, shown above).
- service, description: optional (render.py writes them); `service`, when
  given, must be the file's own service name.

Unknown fields are refused: a misspelt one would otherwise be ignored.

`run/<service>.pid`, the supervisor's record (`Record`): supervisor_pid,
supervisor_start (field 22 of /proc/PID/stat), child_pid, child_start,
release, started_at (unix s the current child started), restarts, state. A
pid counts as alive only with the recorded start time: pids are recycled.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafkactl.cluster.deploy.restart_policy import HISTORY_LIMIT, RestartPolicy

SERVICE_NAME = re.compile(r"[a-z][a-z0-9-]{0,30}")
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
RELEASE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,127}")
# The record's states; FAILED and STOPPED are only reported by `status`.
STARTING, RUNNING, BACKOFF, STOPPING = "starting", "running", "backoff", "stopping"
FAILED, STOPPED = "failed", "stopped"
FIELDS = ("service", "description", "argv", "cwd", "env", "log_file", "stop_timeout_s", "release", "restart")
REQUIRED = ("argv", "cwd", "log_file", "stop_timeout_s", "release")
RESTART_LIMITS = {   # field: (smallest, largest)
    "initial_backoff_s": (0.01, 3600.0), "max_backoff_s": (0.01, 3600.0), "reset_after_s": (0.01, 86400.0),
    "max_crashes": (1, HISTORY_LIMIT), "window_s": (0.01, 86400.0),
}
MAX_STOP_TIMEOUT_S = 3600.0
LOG_TAIL_LINES = 20


class DefinitionError(ValueError):
    """A definition or a command line cannot be used; one line naming the file and field."""


@dataclass(frozen=True, slots=True)
class Definition:
    argv: tuple[str, ...]
    cwd: str
    env: Mapping[str, str]
    log_file: str
    stop_timeout_s: float
    release: str
    restart: RestartPolicy


@dataclass(frozen=True, slots=True)
class Record:
    supervisor_pid: int
    supervisor_start: int
    child_pid: int | None      # None in backoff: no child between two runs
    child_start: int | None
    release: str
    started_at: float | None   # unix s, when the current child started
    restarts: int
    state: str


@dataclass(frozen=True, slots=True)
class Paths:
    """The supervisor's files under its root (supervisor.py's module doc lists them)."""

    root: Path

    def definition(self, service: str) -> Path:
        return self.root / "etc" / "services" / f"{service}.json"

    def run(self, service: str, suffix: str) -> Path:
        return self.root / "run" / f"{service}{suffix}"


def check_service(name: str) -> str:
    if not SERVICE_NAME.fullmatch(name):
        raise DefinitionError(f"service name {name!r}: must match {SERVICE_NAME.pattern}")
    return name


def parse_definition(text: str, source: str, service: str | None = None) -> Definition:
    """`service`: the name the file is for, checked against its "service" field."""
    try:
        data = json.loads(text)
    except ValueError as error:
        raise DefinitionError(f"{source}: not valid JSON: {error}") from None
    if not isinstance(data, dict):
        raise DefinitionError(f"{source}: must be a JSON object")
    for key in data:
        if key not in FIELDS:
            raise DefinitionError(f"{source}: {key}: unknown field (known: {', '.join(FIELDS)})")
    for key in REQUIRED:
        if key not in data:
            raise DefinitionError(f"{source}: {key}: missing")
    if service is not None and data.get("service", service) != service:
        raise DefinitionError(f"{source}: service: {data['service']!r} in the definition of {service!r}")
    _text(data.get("description", ""), source, "description")
    return Definition(argv=_argv(data["argv"], source), cwd=_absolute(data["cwd"], source, "cwd"),
                      env=_env(data.get("env", {}), source),
                      log_file=_absolute(data["log_file"], source, "log_file"),
                      stop_timeout_s=_number(data["stop_timeout_s"], source, "stop_timeout_s", 0.001,
                                             MAX_STOP_TIMEOUT_S),
                      release=_release(data["release"], source), restart=_restart(data.get("restart", {}), source))


def _text(value: Any, source: str, name: str) -> str:
    if not isinstance(value, str) or "\0" in value:
        raise DefinitionError(f"{source}: {name}: must be a string without NUL, got {value!r}")
    return value


def _absolute(value: Any, source: str, name: str) -> str:
    if not _text(value, source, name).startswith("/"):
        raise DefinitionError(f"{source}: {name}: must be an absolute path, got {value!r}")
    return value


def _argv(value: Any, source: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not value:
        raise DefinitionError(f"{source}: argv: must be a non-empty list of strings, got {value!r}")
    _absolute(value[0], source, "argv[0]")
    return tuple(_text(item, source, f"argv[{index}]") for index, item in enumerate(value))


def _env(value: Any, source: str) -> Mapping[str, str]:
    if not isinstance(value, dict):
        raise DefinitionError(f"{source}: env: must be an object of strings, got {value!r}")
    for key, item in value.items():
        if not ENV_NAME.fullmatch(key):
            raise DefinitionError(f"{source}: env: {key!r} is not a variable name")
        _text(item, source, f"env.{key}")
    return dict(value)


def _number(value: Any, source: str, name: str, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
            or not low <= value <= high:
        raise DefinitionError(f"{source}: {name}: must be a number from {low:g} to {high:g}, got {value!r}")
    return value


def _release(value: Any, source: str) -> str:
    if not isinstance(value, str) or not RELEASE.fullmatch(value):
        raise DefinitionError(f"{source}: release: must be a version such as 0.1.0-abcdef012345, got {value!r}")
    return value


def _restart(value: Any, source: str) -> RestartPolicy:
    if not isinstance(value, dict):
        raise DefinitionError(f"{source}: restart: must be an object, got {value!r}")
    numbers: dict[str, Any] = {}
    for key, item in value.items():
        if key not in RESTART_LIMITS:
            raise DefinitionError(f"{source}: restart.{key}: unknown field (known: {', '.join(RESTART_LIMITS)})")
        if key == "max_crashes" and (isinstance(item, bool) or not isinstance(item, int)):
            raise DefinitionError(f"{source}: restart.max_crashes: must be an integer, got {item!r}")
        numbers[key] = _number(item, source, f"restart.{key}", *RESTART_LIMITS[key])
    default = RestartPolicy()
    initial_s = numbers.get("initial_backoff_s", default.initial_backoff_s)
    if initial_s > numbers.get("max_backoff_s", default.max_backoff_s):
        raise DefinitionError(f"{source}: restart.initial_backoff_s: must not exceed restart.max_backoff_s")
    return RestartPolicy(**numbers)


RECORD_TYPES = {"supervisor_pid": int, "supervisor_start": int, "child_pid": int | None, "child_start": int | None,
                "release": str, "started_at": int | float | None, "restarts": int, "state": str}


def parse_record(text: str, source: str) -> Record:
    """The pid file's record; ValueError if it is not one (torn, foreign, hand-edited)."""
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError(f"{source}: not a supervisor record")
    for key, kind in RECORD_TYPES.items():
        if not isinstance(data.get(key), kind) or isinstance(data.get(key), bool):
            raise ValueError(f"{source}: {key}: not a supervisor record's value: {data.get(key)!r}")
    return Record(**{key: data[key] for key in RECORD_TYPES})


def parse_proc_stat(text: str) -> tuple[str, int, int]:
    """(state, pgrp, starttime) of /proc/PID/stat: fields 3, 5 and 22, counted
    after the command name, which is in parentheses and may hold anything."""
    rest = text[text.rindex(")") + 2:].split()
    return rest[0], int(rest[2]), int(rest[19])


def pending_restart(current: Any, running: Any) -> bool:
    """Whether the definition changed since the supervisor started: compared as
    parsed JSON, so a change of layout or key order is none."""
    return current != running


def describe_exit(code: int) -> str:
    return f"killed by signal {-code}" if code < 0 else f"exited with status {code}"


def tail_lines(data: bytes, lines: int = LOG_TAIL_LINES) -> list[str]:
    return data.decode("utf-8", "replace").splitlines()[-lines:]
