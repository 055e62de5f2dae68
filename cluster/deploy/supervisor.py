"""The host-side supervisor of a service (broker, zookeeper) where there is no systemd.

Run on the host as `python -m kafkactl.cluster.deploy.supervisor [--root R]
COMMAND ...` (standard library and kafkactl only). Its files, under the root
(default /opt/kafkactl; supervisor_definitions.py has the formats):

    etc/services/<service>.json   the definition, written by the deployer
    run/<service>.pid             the record, rewritten atomically (temporary file,
                                  rename, fsync of the directory) on every change;
                                  state: starting (the first child has not yet
                                  stayed up --settle-s), running, backoff, stopping
    run/<service>.running.json    the definition it runs with: a changed one is a
                                  pending restart
    run/<service>.failed.json     why it gave up, with the log's tail (`start` clears it)
    run/<service>.lock            flock'd by start, stop and restart: one at a time

A pid is alive only if /proc/PID/stat exists, is no zombie and has the
recorded start time: a recycled pid is not the supervisor
(supervisor_files.py: reading, atomic writing, liveness, the lock).

Commands print one JSON object on stdout and exit 0 (done), 1 (failed) or 2
(bad usage or definition):

- `start SERVICE [--wait-s 10] [--settle-s 2]`: nothing if running. Else a
  double fork (setsid between; stdin /dev/null, output to log_file, cwd /)
  makes the supervisor, which runs the child in its own process group with
  its output appended to log_file after a "--- started" line; `start` waits
  up to --wait-s for the child to stay up --settle-s. A child that ends
  sooner is not restarted: the supervisor writes failed.json and exits, and
  `start` exits 1 with the log's tail, leaving nothing running.
- `stop SERVICE [--timeout-s N]`: SIGTERM to the supervisor, which passes it
  to the child and SIGKILLs the child's process group after stop_timeout_s;
  after N s (default stop_timeout_s + STOP_MARGIN_S) `stop` SIGKILLs both.
- `restart SERVICE`: stop and start under one lock; a broken definition is
  refused before anything stops. `status [SERVICE...]`: default all found.
- `supervise SERVICE [--fork]`: the supervisor itself (`start` runs it).

In the supervisor: SIGTERM and SIGINT stop, SIGHUP is ignored. A child that
exits unasked is restarted when restart_policy.decide says so, or given up
on (failed.json). The child gets SIGTERM when the supervisor dies
(PR_SET_PDEATHSIG): it never runs on unsupervised. What remains of its
process group when it exits is SIGKILLed: no stray process keeps its ports.
Every wait has a bound (the constants below).
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from kafkactl.cluster.deploy.restart_policy import HISTORY_LIMIT, GiveUp, decide
from kafkactl.cluster.deploy.supervisor_definitions import (
    BACKOFF, FAILED, RUNNING, SERVICE_NAME, STARTING, STOPPED, STOPPING, Definition, DefinitionError, Paths,
    Record, check_service, describe_exit, parse_definition, pending_restart,
)
from kafkactl.cluster.deploy.supervisor_files import (
    MAX_FILE_BYTES, POLL_S, SupervisorError, alive, append_log, child_env, kill, kill_group, load_definition, loads,
    log_tail, process_start, read_json, read_record, read_small, remove, service_lock, wait_gone, write_atomic,
)

MODULE = "kafkactl.cluster.deploy.supervisor"
DEFAULT_ROOT = "/opt/kafkactl"
STOP_MARGIN_S = 10.0              # beyond stop_timeout_s: the supervisor's own SIGKILL and exit
KILL_WAIT_S = 10.0                # for the kernel to end a SIGKILLed process
SPAWN_TIMEOUT_S = 30.0            # for the forking process to report the supervisor's pid
LOCK_TIMEOUT_S = 300.0            # default wait for another start/stop/restart of the service
FALLBACK_STOP_TIMEOUT_S = 120.0   # when no definition can be read
PR_SET_PDEATHSIG = 1


# ---- the supervisor process ----

def _die_with_parent(parent_pid: int) -> Callable[[], None]:
    libc = ctypes.CDLL(None, use_errno=True)   # loaded before the fork, called in the child

    def before_exec() -> None:
        if libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0 or os.getppid() != parent_pid:
            os._exit(127)   # cannot be tied to the supervisor, or it died already: do not run unsupervised
    return before_exec


@dataclass
class Supervisor:
    """The running supervisor of one service. `monotonic` times the runs for
    restart_policy; `wall` stamps the records (started_at, failed_at)."""

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
    history: collections.deque[tuple[float, float]] = field(
        default_factory=lambda: collections.deque(maxlen=HISTORY_LIMIT))   # crashed runs: (started, exited)

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
    Path(definition.log_file).parent.mkdir(parents=True, exist_ok=True)
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
        uptime_s = None if record.started_at is None else round(max(time.time() - record.started_at, 0.0), 3)
        result.update(pid=record.supervisor_pid, child_pid=record.child_pid, release=record.release,
                      restarts=record.restarts, state=record.state, uptime_s=uptime_s,
                      pending_restart=pending_restart(read_json(paths.definition(service)),
                                                      read_json(paths.run(service, ".running.json"))))
    return result


def all_services(paths: Paths) -> list[str]:
    """Those defined, and those with a record or a failure report."""
    names = {path.stem for path in (paths.root / "etc" / "services").glob("*.json")}
    for suffix in (".pid", ".failed.json"):
        names |= {path.name.removesuffix(suffix) for path in (paths.root / "run").glob(f"*{suffix}")}
    return sorted(name for name in names if SERVICE_NAME.fullmatch(name))


def start(paths: Paths, service: str, definition: Definition, wait_s: float,
          settle_s: float) -> tuple[dict[str, Any], int]:
    """With the service's lock held."""
    record = read_record(paths, service)
    if record is not None and alive(record.supervisor_pid, record.supervisor_start):
        return {"service": service, "action": "none", "status": status(paths, service)}, 0
    if record is not None:
        _clear_stale(paths, service, record)
    remove(paths.run(service, ".failed.json"))
    Path(definition.log_file).parent.mkdir(parents=True, exist_ok=True)
    pid, reason = _spawn_supervisor(paths, service, settle_s, definition.log_file)
    failure = reason if pid is None else _await_settled(paths, service, definition, pid, wait_s, settle_s)
    if failure is None:
        return {"service": service, "action": "started", "status": status(paths, service)}, 0
    remove(paths.run(service, ".pid"), paths.run(service, ".running.json"))
    return {"service": service, "action": "failed", "error": failure, "log_tail": log_tail(definition.log_file)}, 1


def _await_settled(paths: Paths, service: str, definition: Definition, pid: int, wait_s: float,
                   settle_s: float) -> str | None:
    """None once the supervisor `pid` reports its child settled; else why not,
    with that supervisor gone."""
    supervisor_start = process_start(pid)
    deadline = time.monotonic() + wait_s
    while True:
        failed = read_json(paths.run(service, ".failed.json"))
        if isinstance(failed, dict) and failed.get("supervisor_pid") == pid:
            if not wait_gone(pid, supervisor_start, STOP_MARGIN_S):   # its child has exited already
                kill(pid, supervisor_start)
            return str(failed.get("reason"))
        record = read_record(paths, service)
        if record is not None and record.supervisor_pid != pid:
            record = None
        if record is not None and record.state != STARTING:
            return None
        if not alive(pid, supervisor_start):
            return "the supervisor ended without a report (see log_tail)"
        if time.monotonic() >= deadline:
            starting = Record(pid, supervisor_start or 0, None, None, "", None, 0, STARTING)
            _stop_running(paths, service, record or starting, definition.stop_timeout_s + STOP_MARGIN_S)
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
    reported = loads(output[:MAX_FILE_BYTES])
    if not isinstance(reported, dict):
        return None, "the supervisor did not start (see log_tail)"
    if isinstance(reported.get("supervisor_pid"), int):
        return reported["supervisor_pid"], ""
    return None, f"the supervisor did not start: {reported.get('error')}"


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
    kill(record.supervisor_pid, record.supervisor_start)
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
        return {**started, "action": "restarted" if code == 0 else "failed", "stop": stopped,
                "start": started["action"]}, code


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
