"""Background processes: start detached, recognise by pid, stop gracefully.

A pid alone is not an identity: after a reboot or a long time the kernel may
give it to an unrelated process. Each process we start has a unique config
file path in its argv (zoo.cfg or server.properties under the cluster dir),
so "alive" means: the pid exists, is not a zombie, and that path is one of
its argv elements.
"""

import os
import shlex
import signal
import subprocess
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kafkactl.cluster.local.errors import LocalClusterError

POLL_INTERVAL_S = 0.05
CMDLINE_RETRIES = 50
CMDLINE_RETRY_S = 0.01
# Bytes read from the end of a log file when showing its last lines.
TAIL_WINDOW_BYTES = 64 * 1024

# Popen handles of the children this Python process started: polling them
# reaps exited children, so a long-lived caller (a test session) does not
# accumulate zombies that would still look alive to kill(pid, 0).
_children: dict[int, subprocess.Popen] = {}


@dataclass(frozen=True, slots=True)
class Proc:
    """A process we started: its pid and the argv element that identifies it."""

    pid: int | None
    marker: str
    name: str = "process"


@dataclass(frozen=True, slots=True)
class Launched:
    pid: int
    log_offset: int  # where this run's output starts in the log file


def spawn(argv: Sequence[str], log_file: Path, cwd: Path) -> Launched:
    """Start argv in its own session (it survives our exit), output to log_file."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with open(log_file, "ab") as log:
        offset = log.tell()
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        log.write(f"--- kafkactl {stamp}: {shlex.join(argv)}\n".encode())
        log.flush()
        child = subprocess.Popen(
            list(argv), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            cwd=cwd, start_new_session=True, close_fds=True,
        )
    _children[child.pid] = child
    return Launched(child.pid, offset)


def exit_code(pid: int) -> int | None:
    """The exit status of a child we started and that has exited, else None."""
    child = _children.get(pid)
    return None if child is None else child.poll()


def is_running(proc: Proc) -> bool:
    if not proc.pid:
        return False
    exit_code(proc.pid)  # reap it if it is our exited child
    argv = _argv(proc.pid)
    return argv is not None and os.fsencode(proc.marker) in argv


def _argv(pid: int) -> list[bytes] | None:
    """pid's argv, or None if it does not exist or is a zombie.

    While a process is in execve its cmdline reads empty for a moment, so an
    empty answer from a live process is retried briefly rather than taken
    to mean "not ours".
    """
    for _ in range(CMDLINE_RETRIES):
        try:
            raw = Path(f"/proc/{pid}/cmdline").read_bytes()
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return None
        # The state letter follows the command name, which may hold spaces
        # or parentheses itself, so split after the last ")".
        if stat.rpartition(")")[2].split()[:1] in (["Z"], ["X"]):
            return None
        if raw:
            return raw.split(b"\0")
        time.sleep(CMDLINE_RETRY_S)
    return None


def signal_proc(proc: Proc, sig: int) -> bool:
    """Send sig to proc's process group (it leads one); False if not running."""
    if not is_running(proc):
        return False
    try:
        if os.getpgid(proc.pid) == proc.pid:
            os.killpg(proc.pid, sig)
        else:
            os.kill(proc.pid, sig)
    except ProcessLookupError:
        return False
    return True


def wait_gone(procs: Iterable[Proc], timeout_s: float) -> list[Proc]:
    """Wait until none of procs runs or timeout_s passes; return those left."""
    deadline = time.monotonic() + timeout_s
    left = [p for p in procs if is_running(p)]
    while left and time.monotonic() < deadline:
        time.sleep(POLL_INTERVAL_S)
        left = [p for p in left if is_running(p)]
    return left


def stop_all(procs: Sequence[Proc], timeout_s: float, kill_timeout_s: float = 5.0) -> None:
    """SIGTERM every proc at once, then SIGKILL those still running at the deadline."""
    for proc in procs:
        signal_proc(proc, signal.SIGTERM)
    stubborn = wait_gone(procs, timeout_s)
    for proc in stubborn:
        signal_proc(proc, signal.SIGKILL)
    undead = wait_gone(stubborn, kill_timeout_s)
    if undead:
        names = ", ".join(f"{p.name} (pid {p.pid})" for p in undead)
        raise LocalClusterError(f"could not stop {names}, even with SIGKILL")


def log_tail(log_file: Path, offset: int = 0, lines: int = 20) -> str:
    """The last `lines` lines of log_file written after byte `offset`."""
    try:
        with open(log_file, "rb") as log:
            size = log.seek(0, os.SEEK_END)
            log.seek(max(offset, size - TAIL_WINDOW_BYTES))
            text = log.read().decode(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])
