"""The host-side supervisor with real processes on this machine (no SSH needed).

Each test gets its own root under tmp_path and runs the supervisor's commands
as the deployer does, `python -m kafkactl.cluster.deploy.supervisor --root R
...`, supervising small Python scripts written here. A finalizer SIGKILLs, by
pid, every process whose command line names the test's directory (the
supervisor's --root, the scripts' paths), so a failing test leaves nothing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

from support.waiting import wait_for

MODULE = "kafkactl.cluster.deploy.supervisor"
COMMAND_TIMEOUT_S = 60.0
WAIT_S = 15.0
SETTLE_S = "0.5"
FAST_RESTART = {"initial_backoff_s": 0.1, "max_backoff_s": 0.2}

SLEEPER = """
import os, signal, sys, time
def on_sigterm(number, frame):
    open(os.path.join(sys.argv[1], f"terminated-{os.getpid()}"), "w").close()
    sys.exit(0)
signal.signal(signal.SIGTERM, on_sigterm)
print(f"child {os.getpid()} up: A={os.environ.get('A')} CALLER_ONLY={os.environ.get('CALLER_ONLY')} "
      f"cwd={os.getcwd()}", flush=True)
while True:
    time.sleep(1)
"""
CRASH_AT_ONCE = """
import sys
print("boom: cannot bind port 9092", file=sys.stderr)
sys.exit(3)
"""
CRASH_LATER = """
import sys, time
print("up for a while", flush=True)
time.sleep(float(sys.argv[2]))
sys.exit(4)
"""
# Ignores SIGTERM, as does its own child; both pids go to a file.
STUBBORN = """
import os, signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
code = "import signal, time\\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\\nwhile True: time.sleep(1)"
grandchild = subprocess.Popen([sys.executable, "-c", code, sys.argv[1]])
with open(os.path.join(sys.argv[1], "pids.tmp"), "w") as file:
    file.write(f"{os.getpid()} {grandchild.pid}")
os.rename(os.path.join(sys.argv[1], "pids.tmp"), os.path.join(sys.argv[1], "pids"))
while True:
    time.sleep(1)
"""


def processes_naming(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if text.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def pid_alive(pid: int) -> bool:
    try:
        return (Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]) not in ("Z", "X")
    except OSError:
        return False


def starttime(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])


class Host:
    """A supervisor root and the scripts it runs, under one test's directory."""

    def __init__(self, base: Path):
        self.base = base
        self.root = base / "root"
        self.markers = base / "markers"
        self.markers.mkdir()
        (self.base / "work").mkdir()

    def define(self, service: str, script: str, *args: str, stop_timeout_s: float = 5,
               restart: dict[str, Any] | None = None, env: dict[str, str] | None = None) -> Path:
        path = self.base / f"{service}.py"
        path.write_text(script)
        definition: dict[str, Any] = {
            "argv": [sys.executable, str(path), str(self.markers), *args], "cwd": str(self.base / "work"),
            "env": env or {}, "log_file": str(self.base / "logs" / f"{service}.log"),
            "stop_timeout_s": stop_timeout_s, "release": "0.1.0-abcdef012345"}
        if restart is not None:
            definition["restart"] = restart
        target = self.root / "etc" / "services" / f"{service}.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(definition, indent=2))
        return target

    def popen(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen([sys.executable, "-m", MODULE, "--root", str(self.root), *args],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env={**os.environ, "CALLER_ONLY": "leaked"})

    def run(self, *args: str) -> tuple[dict[str, Any], int]:
        process = self.popen(*args)
        stdout, stderr = process.communicate(timeout=COMMAND_TIMEOUT_S)
        assert stdout.count("\n") == 1, f"one JSON line expected; stdout={stdout!r} stderr={stderr!r}"
        return json.loads(stdout), process.returncode

    def start(self, service: str = "broker") -> dict[str, Any]:
        answer, code = self.run("start", service, "--settle-s", SETTLE_S, "--wait-s", str(WAIT_S))
        assert code == 0 and answer["action"] in ("started", "none"), answer
        return answer

    def status(self, service: str = "broker") -> dict[str, Any]:
        answer, code = self.run("status", service)
        assert code == 0, answer
        return answer["services"][service]

    def record(self, service: str = "broker") -> dict[str, Any] | None:
        path = self.root / "run" / f"{service}.pid"
        return json.loads(path.read_text()) if path.exists() else None

    def log(self, service: str = "broker") -> str:
        return (self.base / "logs" / f"{service}.log").read_text()

    def running(self) -> list[int]:
        return processes_naming(str(self.base))


@pytest.fixture
def host(tmp_path: Path) -> Iterator[Host]:
    host = Host(tmp_path)
    yield host
    for pid in host.running():
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_start_runs_the_child_daemonized_and_a_second_start_does_nothing(host):
    host.define("broker", SLEEPER, env={"A": "1"})
    started = host.start()
    assert started["action"] == "started"
    status = started["status"]
    assert status["running"] and status["state"] == "running" and status["restarts"] == 0
    record = host.record()
    supervisor, child = record["supervisor_pid"], record["child_pid"]
    assert (status["pid"], status["child_pid"], status["release"]) == (supervisor, child, "0.1.0-abcdef012345")
    assert record["supervisor_start"] == starttime(supervisor) and record["child_start"] == starttime(child)
    # Double fork: neither our child nor a session leader; the child leads its own process group.
    assert os.getsid(supervisor) != os.getsid(0) and os.getsid(supervisor) != supervisor
    assert os.getpgid(child) == child
    wait_for(lambda: f"child {child} up" in host.log(), 10, "the child's output in its log")
    log = host.log()
    assert "--- started " in log and f"child {child} up: A=1 CALLER_ONLY=None cwd={host.base / 'work'}" in log

    os.kill(supervisor, signal.SIGHUP)   # ignored
    again = host.start()
    assert again["action"] == "none"
    assert (again["status"]["pid"], again["status"]["child_pid"]) == (supervisor, child)
    assert pid_alive(supervisor) and pid_alive(child)


def test_a_child_killed_with_sigkill_is_restarted(host):
    host.define("broker", SLEEPER, restart=FAST_RESTART)
    host.start()
    first = host.record()
    os.kill(first["child_pid"], signal.SIGKILL)
    second = wait_for(lambda: (r := host.record()) and r["child_pid"] not in (None, first["child_pid"]) and r,
                      10, "a new child")
    assert second["supervisor_pid"] == first["supervisor_pid"] and second["restarts"] == 1
    assert pid_alive(second["child_pid"]) and not pid_alive(first["child_pid"])
    assert "killed by signal 9; restarting in 0.1 s" in host.log()
    assert host.status()["restarts"] == 1


def test_a_child_that_crashes_at_start_fails_the_start_and_leaves_nothing_running(host):
    host.define("broker", CRASH_AT_ONCE)
    answer, code = host.run("start", "broker", "--settle-s", SETTLE_S)
    assert code == 1 and answer["action"] == "failed", answer
    assert "exited with status 3 before it stayed up 0.5 s" in answer["error"]
    assert "boom: cannot bind port 9092" in answer["log_tail"] and len(answer["log_tail"]) <= 20
    assert host.running() == [] and host.record() is None
    status = host.status()
    assert not status["running"] and status["state"] == "failed"
    assert "exited with status 3" in status["failure"]["reason"]

    host.define("broker", SLEEPER)   # fixed: the next start clears the failure
    assert host.start()["action"] == "started"
    assert "failure" not in host.status()


def test_a_program_that_cannot_be_run_fails_the_start(host):
    path = host.define("broker", SLEEPER)
    path.write_text(json.dumps({**json.loads(path.read_text()), "argv": [str(host.base / "no-such-program")]}))
    answer, code = host.run("start", "broker", "--settle-s", SETTLE_S)
    assert code == 1 and "cannot start: [Errno 2] No such file or directory" in answer["error"], answer
    assert host.running() == [] and host.record() is None


def test_a_child_that_keeps_crashing_after_settling_is_given_up(host):
    host.define("broker", CRASH_LATER, "1.0", restart={**FAST_RESTART, "max_crashes": 3, "window_s": 60})
    assert host.start()["action"] == "started"
    failed = host.root / "run" / "broker.failed.json"
    wait_for(failed.exists, 30, "the supervisor to give up")
    wait_for(lambda: host.running() == [], 10, "the supervisor to exit")
    assert host.record() is None
    status = host.status()
    assert not status["running"] and status["state"] == "failed"
    assert status["failure"]["reason"] == "exited with status 4; 3 crashes within 60 s (max_crashes 3)"
    assert status["failure"]["restarts"] == 2
    assert host.log().count("--- started ") == 3


def test_stop_passes_sigterm_to_the_child_and_removes_the_pid_file(host):
    host.define("broker", SLEEPER)
    host.start()
    child = host.record()["child_pid"]
    assert host.run("stop", "broker") == ({"service": "broker", "action": "stopped"}, 0)
    assert (host.markers / f"terminated-{child}").exists()
    assert host.running() == []
    assert not (host.root / "run" / "broker.pid").exists()
    assert not (host.root / "run" / "broker.running.json").exists()
    assert "--- stopped " in host.log() and "exited with status 0" in host.log()
    assert host.run("stop", "broker") == ({"service": "broker", "action": "none"}, 0)
    host.define("zookeeper", SLEEPER)
    everything, code = host.run("status")
    assert code == 0 and sorted(everything["services"]) == ["broker", "zookeeper"]
    assert [entry["state"] for entry in everything["services"].values()] == ["stopped", "stopped"]


def test_a_child_ignoring_sigterm_is_killed_with_its_own_child_after_stop_timeout_s(host):
    host.define("broker", STUBBORN, stop_timeout_s=1)
    host.start()
    child, grandchild = map(int, wait_for(lambda: (host.markers / "pids").exists() and
                                          (host.markers / "pids").read_text().split(), 10, "the pids"))
    assert host.run("stop", "broker") == ({"service": "broker", "action": "stopped"}, 0)
    assert not pid_alive(child) and not pid_alive(grandchild)
    assert host.running() == []
    assert "still running 1 s after SIGTERM: SIGKILL to its process group" in host.log()


def test_stop_kills_the_supervisor_and_the_group_itself_after_its_timeout(host):
    host.define("broker", STUBBORN, stop_timeout_s=60)
    host.start()
    child, grandchild = map(int, wait_for(lambda: (host.markers / "pids").exists() and
                                          (host.markers / "pids").read_text().split(), 10, "the pids"))
    answer, code = host.run("stop", "broker", "--timeout-s", "1")
    assert code == 0 and answer["action"] == "killed" and "SIGKILL" in answer["reason"], answer
    assert not pid_alive(child) and not pid_alive(grandchild)
    assert host.running() == [] and host.record() is None


def test_a_pid_file_naming_a_recycled_pid_is_not_running(host):
    host.define("broker", SLEEPER)
    ours = os.getpid()
    stale = {"supervisor_pid": ours, "supervisor_start": starttime(ours) + 1, "child_pid": ours,
             "child_start": starttime(ours) + 1, "release": "0.0.1", "started_at": 1.0, "restarts": 0,
             "state": "running"}
    (host.root / "run").mkdir(parents=True)
    (host.root / "run" / "broker.pid").write_text(json.dumps(stale))
    assert host.status()["running"] is False
    assert host.run("stop", "broker") == ({"service": "broker", "action": "none"}, 0)
    assert pid_alive(ours)
    (host.root / "run" / "broker.pid").write_text(json.dumps(stale))
    started = host.start()
    assert started["action"] == "started" and started["status"]["pid"] != ours


def test_status_shows_a_pending_restart_once_the_definition_changes(host):
    path = host.define("broker", SLEEPER, env={"A": "1"})
    host.start()
    assert host.status()["pending_restart"] is False
    definition = json.loads(path.read_text())
    path.write_text(json.dumps(definition, sort_keys=True))   # the same definition, written differently
    assert host.status()["pending_restart"] is False
    path.write_text(json.dumps({**definition, "env": {"A": "2"}}))
    assert host.status()["pending_restart"] is True
    old_child = host.record()["child_pid"]
    answer, code = host.run("restart", "broker", "--settle-s", SETTLE_S)
    assert code == 0 and answer["action"] == "restarted", answer
    assert answer["stop"]["action"] == "stopped" and answer["start"] == "started"
    status = host.status()
    assert status["pending_restart"] is False and status["child_pid"] != old_child
    assert f"child {status['child_pid']} up: A=2" in wait_for(lambda: f"child {status['child_pid']} up" in host.log()
                                                               and host.log(), 10, "the new child's output")


def test_concurrent_starts_make_one_supervisor(host):
    host.define("broker", SLEEPER)
    starts = [host.popen("start", "broker", "--settle-s", SETTLE_S) for _ in range(2)]
    answers = [json.loads(process.communicate(timeout=COMMAND_TIMEOUT_S)[0]) for process in starts]
    assert [process.returncode for process in starts] == [0, 0]
    assert sorted(answer["action"] for answer in answers) == ["none", "started"]
    assert answers[0]["status"]["pid"] == answers[1]["status"]["pid"]
    supervisors = [pid for pid in host.running() if b"supervise" in Path(f"/proc/{pid}/cmdline").read_bytes()]
    assert supervisors == [answers[0]["status"]["pid"]]


def test_the_child_gets_sigterm_when_the_supervisor_is_killed(host):
    host.define("broker", SLEEPER)
    host.start()
    record = host.record()
    os.kill(record["supervisor_pid"], signal.SIGKILL)
    wait_for((host.markers / f"terminated-{record['child_pid']}").exists, 10, "SIGTERM to reach the orphaned child")
    wait_for(lambda: host.running() == [], 10, "the child to exit")
    assert host.status()["running"] is False
    assert host.start()["action"] == "started"   # the stale record is cleared


@pytest.mark.parametrize("args, message", [
    (("start", "Broker"), "service name 'Broker': must match"),
    (("start", "zookeeper"), "zookeeper.json: no such file: service zookeeper is not defined"),
    (("start", "broker", "--settle-s", "5", "--wait-s", "2"), "--settle-s 5: must be less than --wait-s 2"),
    (("frobnicate", "broker"), "invalid choice: 'frobnicate'"),
])
def test_bad_usage_exits_2_with_one_line(host, args, message):
    host.define("broker", SLEEPER)
    answer, code = host.run(*args)
    assert code == 2 and message in answer["error"] and "\n" not in answer["error"], answer


def test_a_bad_definition_stops_nothing(host):
    path = host.define("broker", SLEEPER)
    host.start()
    path.write_text(json.dumps({**json.loads(path.read_text()), "log_file": "logs/broker.log"}))
    answer, code = host.run("restart", "broker")
    assert code == 2 and answer["error"] == f"{path}: log_file: must be an absolute path, got 'logs/broker.log'"
    assert host.status()["running"] is True
