"""The host-side supervisor's files and processes: reading, atomic writing, liveness, the lock.

supervisor.py's building blocks on the host (standard library and kafkactl
only), each bounded:

- files are read up to MAX_FILE_BYTES (definitions and records are small: a
  bigger file is not ours), logs' tails from their last LOG_TAIL_BYTES;
- a record is written atomically: a temporary file, fsync, rename, fsync of
  the directory, so a reader sees the old record or the new, never a part,
  also after a power loss;
- a pid is alive only if /proc/PID/stat exists, is no zombie and has the
  recorded start time (field 22): a recycled pid is somebody else;
- `service_lock` takes the service's flock, waiting at most its timeout.
"""

from __future__ import annotations

import fcntl
import json
import os
import pwd
import signal
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kafkactl.cluster.deploy.supervisor_definitions import (
    Definition, DefinitionError, Paths, Record, parse_definition, parse_proc_stat, parse_record, tail_lines,
)

BASE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
MAX_FILE_BYTES = 1 << 20
LOG_TAIL_BYTES = 64 * 1024
POLL_S = 0.05


class SupervisorError(RuntimeError):
    """An operation on the host failed (the lock was held too long)."""


def read_small(path: Path) -> str:
    with open(path, "rb") as file:
        data = file.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise ValueError(f"{path}: larger than {MAX_FILE_BYTES} bytes")
    return data.decode("utf-8")


def read_json(path: Path) -> Any:
    """The parsed file, or None if it is missing or unreadable."""
    try:
        return loads(read_small(path))
    except (OSError, ValueError):
        return None


def loads(text: str | bytes) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def write_atomic(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(temporary, "w") as file:
        json.dump(data, file, sort_keys=True)
        file.flush()
        os.fsync(file.fileno())
    os.replace(temporary, path)
    _sync_dir(path.parent)


def remove(*paths: Path) -> None:
    for path in paths:
        path.unlink(missing_ok=True)
    if paths:
        _sync_dir(paths[0].parent)


def _sync_dir(directory: Path) -> None:
    descriptor = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def log_tail(log_file: str) -> list[str]:
    try:
        with open(log_file, "rb") as file:
            file.seek(max(file.seek(0, os.SEEK_END) - LOG_TAIL_BYTES, 0))
            return tail_lines(file.read(LOG_TAIL_BYTES))
    except OSError as error:
        return [f"(cannot read {log_file}: {error.strerror})"]


def append_log(log_file: str, event: str, detail: str) -> None:
    with open(log_file, "a") as file:
        file.write(f"--- {event} {time.strftime('%Y-%m-%dT%H:%M:%S%z')} {detail}\n")


def process_start(pid: int) -> int | None:
    """The pid's start time (clock ticks after boot), None if gone or a zombie."""
    try:
        state, _, start = parse_proc_stat(read_small(Path(f"/proc/{pid}/stat")))
    except (OSError, ValueError, IndexError):
        return None
    return None if state in ("Z", "X") else start


def alive(pid: int | None, start: int | None) -> bool:
    return pid is not None and pid > 0 and start is not None and process_start(pid) == start


def wait_gone(pid: int, start: int | None, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while alive(pid, start):
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_S)
    return True


def kill(pid: int, start: int | None) -> None:
    if alive(pid, start):
        os.kill(pid, signal.SIGKILL)


def kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def read_record(paths: Paths, service: str) -> Record | None:
    path = paths.run(service, ".pid")
    try:
        return parse_record(read_small(path), str(path))
    except (OSError, ValueError):   # none, or foreign: nothing is alive by it, a new supervisor overwrites it
        return None


def load_definition(paths: Paths, service: str) -> tuple[Definition, Any]:
    path = paths.definition(service)
    try:
        text = read_small(path)
    except FileNotFoundError:
        raise DefinitionError(f"{path}: no such file: service {service} is not defined") from None
    except (OSError, ValueError) as error:
        raise DefinitionError(f"{path}: cannot read: {error}") from None
    return parse_definition(text, str(path), service), json.loads(text)


def child_env(extra: Mapping[str, str]) -> dict[str, str]:
    try:
        home = pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        home = "/"
    return {"PATH": BASE_PATH, "LANG": "C.UTF-8", "HOME": home, **extra}


@contextmanager
def service_lock(paths: Paths, service: str, timeout_s: float) -> Iterator[None]:
    path = paths.run(service, ".lock")
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise SupervisorError(f"{path}: another start/stop/restart of {service} "
                                          f"held it for more than {timeout_s:g} s") from None
                time.sleep(POLL_S)
        yield
    finally:
        os.close(descriptor)
