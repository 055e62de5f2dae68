"""The host-side supervisor of a service (broker, zookeeper) where there is no systemd.

Run on the host as `python -m kafkactl.cluster.deploy.supervisor [--root R]
COMMAND ...` (standard library and kafkactl only). Its files, under the root
(default /opt/kafkactl); supervisor_definitions.py has their formats:

    etc/services/<service>.json   the definition, written by the deployer
    run/<service>.pid             the supervisor's record, rewritten atomically
                                  (temporary file, rename, fsync of the directory)
                                  whenever it changes; state starting (the first
                                  child has not yet stayed up --settle-s),
                                  running, backoff or stopping
    run/<service>.running.json    the definition the supervisor runs with: when
                                  it differs, a restart is pending
    run/<service>.failed.json     why the supervisor gave up, with the log's
                                  tail; `status` shows it, `start` clears it
    run/<service>.lock            flock'd by start, stop and restart: one at a time

A pid is alive only if /proc/PID/stat exists, is no zombie and has the
recorded start time: a recycled pid is not the supervisor.

Commands print one JSON object on stdout and exit 0 (done), 1 (failed) or 2
(bad usage or definition):

- `start SERVICE [--wait-s 10] [--settle-s 2]`: nothing if running.
  Otherwise a double fork (setsid in between; stdin /dev/null, output to
  log_file, cwd /) makes the supervisor, which starts the child in its own
  process group, output appended to log_file after a "--- started" line.
  `start` waits up to --wait-s for the child to stay up --settle-s. A child
  that ends sooner is not restarted: the supervisor writes failed.json and
  exits, and `start` exits 1 with the log's tail. A service that cannot
  start is never left restarting in the background.
- `stop SERVICE [--timeout-s N]`: SIGTERM to the supervisor, which passes it
  to the child and SIGKILLs the child's process group after stop_timeout_s.
  `stop` waits N s (default stop_timeout_s + STOP_MARGIN_S), then SIGKILLs
  the supervisor and the group itself and says so.
- `restart SERVICE`: stop, then start, under one lock; a broken definition
  is refused before anything is stopped.
- `status [SERVICE...]`: every service asked (default: all found).
- `supervise SERVICE [--fork]`: the supervisor itself (`start` runs it).

In the supervisor: SIGTERM and SIGINT stop, SIGHUP is ignored. A child that
exits unasked is restarted when restart_policy.decide says, or given up on
(failed.json). The child gets SIGTERM when the supervisor dies
(PR_SET_PDEATHSIG), so it never runs on unsupervised; what remains of its
process group when it exits is SIGKILLed, so no stray process keeps its
ports. Every wait has a bound (constants below).
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import fcntl
import json
import os
import pwd
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from kafkactl.cluster.deploy.restart_policy import HISTORY_LIMIT, GiveUp, decide
from kafkactl.cluster.deploy.supervisor_definitions import (
    BACKOFF, FAILED, RUNNING, SERVICE_NAME, STARTING, STOPPED, STOPPING, Definition, DefinitionError, Record,
    check_service, describe_exit, parse_definition, parse_proc_stat, parse_record, pending_restart, tail_lines,
)

MODULE = "kafkactl.cluster.deploy.supervisor"
DEFAULT_ROOT = "/opt/kafkactl"
BASE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
MAX_FILE_BYTES = 1 << 20          # definitions and records are small: a bigger file is not ours
LOG_TAIL_BYTES = 64 * 1024
STOP_MARGIN_S = 10.0              # beyond stop_timeout_s: the supervisor's own SIGKILL and exit
KILL_WAIT_S = 10.0                # for the kernel to end a SIGKILLed process
SPAWN_TIMEOUT_S = 30.0            # for the forking process to report the supervisor's pid
LOCK_TIMEOUT_S = 300.0            # default wait for another start/stop/restart of the service
FALLBACK_STOP_TIMEOUT_S = 120.0   # when no definition can be read
POLL_S = 0.05
PR_SET_PDEATHSIG = 1


class SupervisorError(RuntimeError):
    """An operation on the host failed (lock held too long, no supervisor pid)."""


# ---- files and processes ----

@dataclass(frozen=True, slots=True)
class Paths:
    root: Path

    def definition(self, service: str) -> Path:
        return self.root / "etc" / "services" / f"{service}.json"

    def run(self, service: str, suffix: str) -> Path:
        return self.root / "run" / f"{service}{suffix}"


def read_small(path: Path) -> str:
    with open(path, "rb") as file:
        data = file.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise ValueError(f"{path}: larger than {MAX_FILE_BYTES} bytes")
    return data.decode("utf-8")


def read_json(path: Path) -> Any:
    """The parsed file, or None if it is missing or unreadable."""
    try:
        return json.loads(read_small(path))
    except (OSError, ValueError):
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


def kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def read_record(paths: Paths, service: str) -> Record | None:
    path = paths.run(service, ".pid")
    try:
        return parse_record(read_small(path), str(path))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):   # torn or foreign: nothing is alive by it, a new supervisor overwrites it
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


# ---- the supervisor process ----

def _die_with_parent(parent_pid: int) -> Callable[[], None]:
    libc = ctypes.CDLL(None, use_errno=True)   # loaded before the fork, called in the child

    def before_exec() -> None:
        if libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0 or os.getppid() != parent_pid:
            os._exit(127)   # cannot be tied to the supervisor, or it died already: do not run unsupervised
    return before_exec


@dataclass
class Supervisor:
    paths: Paths
    service: str
    definition: Definition
    settle_s: float
    monotonic: Callable[[], float] = time.monotonic
    wall: Callable[[], float] = time.time
    state: str = STARTING
    restarts: int = 0
    stop_requested: bool = False
    own_start: int = 0
    child_start: int | None = None
    started_at: float | None = None
    before_exec: Callable[[], None] | None = None
    history: collections.deque[tuple[float, float]] = field(default_factory=lambda: collections.deque(maxlen=HISTORY_LIMIT))

    def run(self, running_copy: Any) -> int:
        for number in (signal.SIGTERM, signal.SIGINT):
            signal.signal(number, self._on_stop)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        self.own_start = process_start(os.getpid()) or 0
        self.before_exec = _die_with_parent(os.getpid())
        write_atomic(self.paths.run(self.service, ".running.json"), running_copy)
        try:
            return self._supervise()
        finally:
            remove(self.paths.run(self.service, ".running.json"), self.paths.run(self.service, ".pid"))

    def _on_stop(self, number: int, frame: object) -> None:
        self.stop_requested = True

    def _supervise(self) -> int:
        while True:
            started = self.monotonic()
            child, outcome = self._launch()
            if child is not None:
                code = self._watch(child, started)
                if code is None:
                    self._stop_child(child)
                    return 0
                outcome = describe_exit(code)
            if self.state == STARTING:
                return self._give_up(f"{outcome} before it stayed up {self.settle_s:g} s")
            self.history.append((started, self.monotonic()))
            decision = decide(self.history, self.monotonic(), self.definition.restart)
            if isinstance(decision, GiveUp):
                return self._give_up(f"{outcome}; {decision.reason}")
            self._log("crashed", f"{outcome}; restarting in {decision.after_s:g} s")
            self._publish(BACKOFF, None)
            if not self._sleep(decision.after_s):
                return 0
            self.restarts += 1
            self.state = RUNNING

    def _launch(self) -> tuple[subprocess.Popen[bytes] | None, str]:
        argv = self.definition.argv
        self._log("started", shlex.join(argv))
        try:
            with open(self.definition.log_file, "ab") as log:
                child = subprocess.Popen(argv, cwd=self.definition.cwd, env=child_env(self.definition.env),
                                         stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                         process_group=0, preexec_fn=self.before_exec)
        except (OSError, subprocess.SubprocessError) as error:
            self._log("failed", f"cannot start: {error}")
            return None, f"cannot start: {error}"
        self.child_start, self.started_at = process_start(child.pid), self.wall()
        self._publish(self.state, child)
        return child, ""

    def _watch(self, child: subprocess.Popen[bytes], started: float) -> int | None:
        """The child's exit status, or None when asked to stop."""
        while not self.stop_requested:
            code = self._exited(child)
            if code is not None:
                return code
            if self.state == STARTING and self.monotonic() - started >= self.settle_s:
                self._publish(RUNNING, child)
            time.sleep(POLL_S)
        return None

    @staticmethod
    def _exited(child: subprocess.Popen[bytes]) -> int | None:
        # WNOWAIT: the exited child stays a zombie, so its pid, the process
        # group's id, cannot be reused while the group's leftovers are killed.
        if os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
            return None
        kill_group(child.pid)
        return child.wait(timeout=KILL_WAIT_S)

    def _stop_child(self, child: subprocess.Popen[bytes]) -> None:
        self._publish(STOPPING, child)
        self._log("stopping", f"SIGTERM to pid {child.pid}")
        os.kill(child.pid, signal.SIGTERM)   # not send_signal: it would reap the child (see _exited)
        deadline = self.monotonic() + self.definition.stop_timeout_s
        while self.monotonic() < deadline:
            code = self._exited(child)
            if code is not None:
                self._log("stopped", describe_exit(code))
                return
            time.sleep(POLL_S)
        self._log("killed", f"still running {self.definition.stop_timeout_s:g} s after SIGTERM: "
                            "SIGKILL to its process group")
        kill_group(child.pid)
        try:
            child.wait(timeout=KILL_WAIT_S)
        except subprocess.TimeoutExpired:   # stuck in the kernel: nothing more a supervisor can do
            self._log("killed", f"pid {child.pid} still there {KILL_WAIT_S:g} s after SIGKILL")

    def _sleep(self, seconds: float) -> bool:
        """False if asked to stop meanwhile."""
        deadline = self.monotonic() + seconds
        while not self.stop_requested:
            left = deadline - self.monotonic()
            if left <= 0:
                return True
            time.sleep(min(left, POLL_S))
        return False

    def _give_up(self, reason: str) -> int:
        self._log("failed", f"giving up: {reason}")
        write_atomic(self.paths.run(self.service, ".failed.json"), {
            "service": self.service, "reason": reason, "release": self.definition.release,
            "failed_at": self.wall(), "restarts": self.restarts, "supervisor_pid": os.getpid(),
            "log_tail": log_tail(self.definition.log_file)})
        return 1

    def _publish(self, state: str, child: subprocess.Popen[bytes] | None) -> None:
        self.state = state
        record = Record(os.getpid(), self.own_start, child.pid if child else None,
                        self.child_start if child else None, self.definition.release,
                        self.started_at if child else None, self.restarts, state)
        write_atomic(self.paths.run(self.service, ".pid"), asdict(record))

    def _log(self, event: str, detail: str) -> None:
        append_log(self.definition.log_file, event, detail)


def supervise(paths: Paths, service: str, settle_s: float, fork: bool) -> int:
    definition, document = load_definition(paths, service)
    if fork:
        _daemonize()
    return Supervisor(paths, service, definition, settle_s).run(document)


def _daemonize() -> None:
    """The second fork (`start` made this process a session leader): the parent
    reports the supervisor's pid on stdout and exits; the supervisor, no
    session leader, can never get a controlling terminal."""
    pid = os.fork()
    if pid > 0:
        _emit({"supervisor_pid": pid})
        os._exit(0)
    os.dup2(2, 1)   # stdout to the log as stderr is: this releases `start`'s pipe
    os.chdir("/")
    os.umask(0o022)


# ---- commands ----

def status(paths: Paths, service: str) -> dict[str, Any]:
    defined = paths.definition(service).exists()
    record = read_record(paths, service)
    running = record is not None and alive(record.supervisor_pid, record.supervisor_start)
    failed = None if running else read_json(paths.run(service, ".failed.json"))
    result: dict[str, Any] = {
        "defined": defined, "running": running, "pid": None, "child_pid": None, "release": None,
        "uptime_s": None, "restarts": None, "state": FAILED if failed else STOPPED, "pending_restart": False}
    if defined:
        try:
            load_definition(paths, service)
        except DefinitionError as error:
            result["definition_error"] = str(error)
    if failed:
        result["failure"] = failed
    if running and record is not None:
        result.update(pid=record.supervisor_pid, child_pid=record.child_pid, release=record.release,
                      restarts=record.restarts, state=record.state,
                      uptime_s=None if record.started_at is None else round(time.time() - record.started_at, 3),
                      pending_restart=pending_restart(read_json(paths.definition(service)),
                                                      read_json(paths.run(service, ".running.json"))))
    return result


def all_services(paths: Paths) -> list[str]:
    """Those defined, and those with a record or a failure report."""
    names = {path.stem for path in (paths.root / "etc" / "services").glob("*.json")}
    for suffix in (".pid", ".failed.json"):
        names |= {path.name.removesuffix(suffix) for path in (paths.root / "run").glob(f"*{suffix}")}
    return sorted(name for name in names if SERVICE_NAME.fullmatch(name))


def start(paths: Paths, service: str, definition: Definition, wait_s: float, settle_s: float) -> tuple[dict[str, Any], int]:
    """With the service's lock held."""
    record = read_record(paths, service)
    if record is not None and alive(record.supervisor_pid, record.supervisor_start):
        return {"service": service, "action": "none", "status": status(paths, service)}, 0
    if record is not None:
        _clear_stale(paths, service, record)
    remove(paths.run(service, ".failed.json"))
    Path(definition.log_file).parent.mkdir(parents=True, exist_ok=True)
    pid, reason = _spawn_supervisor(paths, service, settle_s, definition.log_file)
    if pid is not None:
        reason = _await_settled(paths, service, definition, pid, wait_s, settle_s)
        if reason is None:
            return {"service": service, "action": "started", "status": status(paths, service)}, 0
    remove(paths.run(service, ".pid"), paths.run(service, ".running.json"))
    return {"service": service, "action": "failed", "error": reason, "log_tail": log_tail(definition.log_file)}, 1


def _await_settled(paths: Paths, service: str, definition: Definition, pid: int, wait_s: float,
                   settle_s: float) -> str | None:
    """None once the supervisor `pid` reports its child settled; else why not,
    with that supervisor gone."""
    supervisor_start = process_start(pid)
    deadline = time.monotonic() + wait_s
    while True:
        failed = read_json(paths.run(service, ".failed.json"))
        if isinstance(failed, dict) and failed.get("supervisor_pid") == pid:
            if not wait_gone(pid, supervisor_start, STOP_MARGIN_S):
                _stop_running(paths, service, Record(pid, supervisor_start or 0, None, None, "", None, 0, FAILED), 0)
            return str(failed.get("reason"))
        record = read_record(paths, service)
        ours = record is not None and record.supervisor_pid == pid
        if ours and record is not None and record.state != STARTING:
            return None
        if not alive(pid, supervisor_start):
            return "the supervisor ended without a report (see log_tail)"
        if time.monotonic() >= deadline:
            mine = record if ours and record is not None else Record(pid, supervisor_start or 0, None, None, "", None,
                                                                     0, STARTING)
            _stop_running(paths, service, mine, definition.stop_timeout_s + STOP_MARGIN_S)
            return f"did not stay up {settle_s:g} s within {wait_s:g} s (--wait-s); stopped it"
        time.sleep(POLL_S)


def _spawn_supervisor(paths: Paths, service: str, settle_s: float, log_file: str) -> tuple[int | None, str]:
    """The supervisor's pid, or None and why there is none."""
    argv = [sys.executable, "-m", MODULE, "--root", str(paths.root), "supervise", service,
            "--settle-s", repr(settle_s), "--fork"]
    with open(log_file, "ab") as log:
        forker = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log,
                                  start_new_session=True, cwd="/", env=child_env({}))
    try:
        output, _ = forker.communicate(timeout=SPAWN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        forker.kill()
        forker.wait()
        return None, f"the supervisor did not report its pid within {SPAWN_TIMEOUT_S:g} s"
    try:
        reported = json.loads(output[:MAX_FILE_BYTES])
    except ValueError:
        reported = None
    if isinstance(reported, dict) and isinstance(reported.get("supervisor_pid"), int):
        return reported["supervisor_pid"], ""
    error = reported.get("error") if isinstance(reported, dict) else None
    return None, f"the supervisor did not start: {error or 'see log_tail'}"


def stop(paths: Paths, service: str, timeout_s: float | None) -> tuple[dict[str, Any], int]:
    """With the service's lock held."""
    record = read_record(paths, service)
    if record is None or not alive(record.supervisor_pid, record.supervisor_start):
        if record is not None:
            _clear_stale(paths, service, record)
        return {"service": service, "action": "none"}, 0
    if timeout_s is None:
        timeout_s = _running_stop_timeout_s(paths, service) + STOP_MARGIN_S
    return {"service": service, **_stop_running(paths, service, record, timeout_s)}, 0


def _stop_running(paths: Paths, service: str, record: Record, timeout_s: float) -> dict[str, Any]:
    if alive(record.supervisor_pid, record.supervisor_start):
        os.kill(record.supervisor_pid, signal.SIGTERM)
    if wait_gone(record.supervisor_pid, record.supervisor_start, timeout_s):
        return {"action": "stopped"}
    latest = read_record(paths, service) or record   # its child may have been restarted since
    if alive(record.supervisor_pid, record.supervisor_start):
        os.kill(record.supervisor_pid, signal.SIGKILL)
    if latest.child_pid is not None and alive(latest.child_pid, latest.child_start):
        kill_group(latest.child_pid)
    wait_gone(record.supervisor_pid, record.supervisor_start, KILL_WAIT_S)
    remove(paths.run(service, ".pid"), paths.run(service, ".running.json"))
    return {"action": "killed", "reason": f"still running {timeout_s:g} s after SIGTERM: SIGKILL sent "
                                          "to the supervisor and the service's process group"}


def _clear_stale(paths: Paths, service: str, record: Record) -> None:
    """The supervisor is gone. Its child got SIGTERM by PR_SET_PDEATHSIG: give
    it its stop_timeout_s to finish, as a stop would, before another starts."""
    if record.child_pid is not None and not wait_gone(record.child_pid, record.child_start,
                                                      _running_stop_timeout_s(paths, service)):
        kill_group(record.child_pid)
        wait_gone(record.child_pid, record.child_start, KILL_WAIT_S)
    remove(paths.run(service, ".pid"), paths.run(service, ".running.json"))


def _running_stop_timeout_s(paths: Paths, service: str) -> float:
    for path in (paths.run(service, ".running.json"), paths.definition(service)):
        try:
            return parse_definition(read_small(path), str(path)).stop_timeout_s
        except (OSError, ValueError):
            continue
    return FALLBACK_STOP_TIMEOUT_S


def _emit(result: Mapping[str, Any]) -> None:
    sys.stdout.write(json.dumps(result, sort_keys=True) + "\n")
    sys.stdout.flush()


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise DefinitionError(f"{self.prog}: {message}")


def seconds(text: str) -> float:
    value = float(text)
    if not 0 < value <= 86400:
        raise ValueError(text)
    return value


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="kafkactl-supervisor", description="Run services on a host without systemd.")
    parser.add_argument("--root", default=DEFAULT_ROOT)
    parser.add_argument("--lock-timeout-s", type=seconds, default=LOCK_TIMEOUT_S)
    commands = parser.add_subparsers(dest="command", required=True)
    named = {name: commands.add_parser(name) for name in ("start", "stop", "restart", "supervise")}
    for command in named.values():
        command.add_argument("service")
    for name in ("start", "restart", "supervise"):
        named[name].add_argument("--settle-s", type=seconds, default=2.0)
    for name in ("start", "restart"):
        named[name].add_argument("--wait-s", type=seconds, default=10.0)
    for name in ("stop", "restart"):
        named[name].add_argument("--timeout-s", type=seconds, default=None)
    named["supervise"].add_argument("--fork", action="store_true")
    commands.add_parser("status").add_argument("services", nargs="*")
    return parser


def run(args: argparse.Namespace) -> tuple[dict[str, Any] | None, int]:
    paths = Paths(Path(os.path.abspath(args.root)))
    if args.command == "status":
        names = [check_service(name) for name in args.services] or all_services(paths)
        return {"services": {name: status(paths, name) for name in names}}, 0
    service = check_service(args.service)
    if args.command == "supervise":
        code = supervise(paths, service, args.settle_s, args.fork)
        return None if args.fork else {"service": service, "exit_status": code}, code   # forked: stdout is the log
    if args.command == "stop":
        with service_lock(paths, service, args.lock_timeout_s):
            return stop(paths, service, args.timeout_s)
    if args.settle_s >= args.wait_s:
        raise DefinitionError(f"--settle-s {args.settle_s:g}: must be less than --wait-s {args.wait_s:g}")
    definition, _ = load_definition(paths, service)   # a broken definition stops nothing
    with service_lock(paths, service, args.lock_timeout_s):
        if args.command == "start":
            return start(paths, service, definition, args.wait_s, args.settle_s)
        stopped, _ = stop(paths, service, args.timeout_s)
        started, code = start(paths, service, definition, args.wait_s, args.settle_s)
        return {"service": service, "action": "restarted" if code == 0 else "failed",
                "stop": stopped, "start": started}, code


def main(argv: list[str] | None = None) -> int:
    result: dict[str, Any] | None
    try:
        result, code = run(_parser().parse_args(argv))
    except DefinitionError as error:
        result, code = {"error": str(error)}, 2
    except (SupervisorError, OSError) as error:
        result, code = {"error": str(error)}, 1
    if result is not None:
        _emit(result)
    return code


if __name__ == "__main__":
    sys.exit(main())
