"""A Spark standalone cluster for tests: a master and workers as separate
processes (JVMs) started with the installed pyspark's `spark-class`, and
Spark applications run against it as subprocesses.

Rules:
- Everything binds 127.0.0.1 (SPARK_LOCAL_IP) on ports the daemons pick
  themselves (port 0) and name in their logs, so parallel runs never race
  for a port; the master's REST submission server (fixed port 6066) is off.
- Each daemon's log and each worker's work dir (SPARK_WORKER_DIR: one dir
  per application and executor) are under the cluster's directory; nothing
  is written under SPARK_HOME.
- Small, for a shared 2-core CI machine: daemon heaps of 256 MB; each worker
  offers 1 core and 1 GB.
- Bounded: every wait has a deadline and fails with the log's tail; every
  process runs in a session of its own and is stopped through its process
  group by its pid (SIGTERM, then SIGKILL), also after a failed start, so
  the executors a worker forked go with it. Output goes to files, read back
  only up to a bound.
- Applications read their settings from a SPARK_CONF_DIR of their own
  (spark-defaults.conf), which both spark-submit and a PySpark session
  started by `kafkactl plan` honour; the event log it enables tells which
  executor ran each task (event_log_tasks).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pyspark

from support.waiting import wait_for

SPARK_HOME = Path(pyspark.__file__).parent
SPARK_CLASS = SPARK_HOME / "bin" / "spark-class"
START_TIMEOUT_S = 120.0     # a JVM daemon takes ~10 s here; CI may run other tests beside it
STOP_TIMEOUT_S = 20.0
DAEMON_MEMORY = "256m"
TAIL_BYTES = 4000
MAX_READ_BYTES = 20_000_000  # what read_bounded returns at most (a report.json is far smaller)

_MASTER_URL = re.compile(r"Starting Spark master at (spark://\S+)")
_ALIVE = "I have been elected leader! New state: ALIVE"
_REGISTERED = "Successfully registered with master"


class SparkClusterError(Exception):
    """A daemon exited or did not become ready in time; the message has its log's tail."""


@dataclass
class Daemon:
    name: str
    process: subprocess.Popen
    log: Path

    def text(self) -> str:
        return read_bounded(self.log)

    def tail(self) -> str:
        return tail(self.log)


def base_env(directory: Path) -> dict[str, str]:
    """The environment of every daemon and application: loopback only, logs and work under `directory`."""
    env = dict(os.environ, SPARK_HOME=str(SPARK_HOME), SPARK_LOCAL_IP="127.0.0.1",
               SPARK_LOG_DIR=str(directory / "logs"), SPARK_DAEMON_MEMORY=DAEMON_MEMORY)
    for name in ("SPARK_CONF_DIR", "PYSPARK_SUBMIT_ARGS", "SPARK_WORKER_DIR"):
        env.pop(name, None)
    return env


def spark_conf_dir(directory: Path, settings: dict[str, str]) -> Path:
    """A SPARK_CONF_DIR whose spark-defaults.conf holds `settings`."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "spark-defaults.conf").write_text("".join(f"{k} {v}\n" for k, v in sorted(settings.items())))
    return directory


class SparkStandalone:
    """A master and `workers` workers of `cores` cores and `memory` each, under `directory`."""

    def __init__(self, directory: Path, workers: int = 2, cores: int = 1, memory: str = "1g") -> None:
        self.directory = directory
        self.worker_count, self.cores, self.memory = workers, cores, memory
        self.daemons: list[Daemon] = []
        self.master_url = ""
        self.worker_dirs = [directory / f"worker-{i}" for i in range(1, workers + 1)]

    def __enter__(self) -> SparkStandalone:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        conf = spark_conf_dir(self.directory / "daemon-conf", {"spark.master.rest.enabled": "false"})
        master = self._spawn("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                        "--port", "0", "--webui-port", "0", "--properties-file",
                                        str(conf / "spark-defaults.conf")])
        self._wait(master, _ALIVE)
        found = _MASTER_URL.search(master.text())
        if found is None:
            raise SparkClusterError(f"the master is alive but did not log its URL:\n{master.tail()}")
        self.master_url = found.group(1)
        for index, work in enumerate(self.worker_dirs, 1):
            work.mkdir(parents=True, exist_ok=True)
            worker = self._spawn(f"worker-{index}", [
                "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores", str(self.cores),
                "--memory", self.memory, "--webui-port", "0", "--work-dir", str(work),
                "--properties-file", str(conf / "spark-defaults.conf"), self.master_url])
            self._wait(worker, _REGISTERED)

    def _spawn(self, name: str, arguments: list[str]) -> Daemon:
        log = self.directory / f"{name}.log"
        with open(log, "wb") as out:
            process = subprocess.Popen([str(SPARK_CLASS), *arguments], stdin=subprocess.DEVNULL, stdout=out,
                                       stderr=subprocess.STDOUT, env=base_env(self.directory),
                                       start_new_session=True)
        daemon = Daemon(name, process, log)
        self.daemons.append(daemon)
        return daemon

    def _wait(self, daemon: Daemon, line: str) -> None:
        def ready() -> bool:
            if daemon.process.poll() is not None:
                raise SparkClusterError(f"the {daemon.name} exited with {daemon.process.returncode}:\n"
                                        f"{daemon.tail()}")
            return line in daemon.text()

        wait_for(ready, START_TIMEOUT_S, f"the Spark {daemon.name} to log {line!r}", interval_s=0.5,
                 diagnose=daemon.tail)

    def stop(self) -> None:
        """Workers first (they end their executors), then the master; each by its process group."""
        for daemon in reversed(self.daemons):
            stop_group(daemon.process, STOP_TIMEOUT_S)
        self.daemons.clear()

    def pids(self) -> list[int]:
        return [d.process.pid for d in self.daemons]


def stop_group(process: subprocess.Popen, timeout_s: float) -> None:
    """SIGTERM to the process's group (it was started in a session of its own), SIGKILL after timeout_s."""
    if process.poll() is None:
        _signal_group(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            pass
    # Children that outlive the leader (an executor, a Python worker) are still in the group.
    _signal_group(process.pid, signal.SIGKILL)
    process.wait(timeout=timeout_s)


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


@dataclass
class Finished:
    """An application's exit code and output (stdout whole up to MAX_READ_BYTES, stderr's tail)."""
    returncode: int
    stdout: str
    stderr_tail: str


def run_application(command: list[str], env: dict[str, str], directory: Path, timeout_s: float) -> Finished:
    """Run a driver (spark-submit, kafkactl plan) to its end, its output in files
    under `directory`; on timeout its whole process group is killed and the test fails."""
    directory.mkdir(parents=True, exist_ok=True)
    out, err = directory / "stdout", directory / "stderr"
    with open(out, "wb") as stdout, open(err, "wb") as stderr:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, env=env,
                                   start_new_session=True)
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        stop_group(process, STOP_TIMEOUT_S)
        raise AssertionError(f"{command[0]} did not finish within {timeout_s:g} s:\n{tail(err)}") from None
    finally:
        stop_group(process, STOP_TIMEOUT_S)  # its Python or JVM children, if any outlived it
    return Finished(process.returncode, read_bounded(out), tail(err))


def read_bounded(path: Path) -> str:
    with open(path, "rb") as f:
        return f.read(MAX_READ_BYTES).decode(errors="replace")


def tail(path: Path) -> str:
    with open(path, "rb") as f:
        f.seek(max(0, f.seek(0, os.SEEK_END) - TAIL_BYTES))
        return f.read().decode(errors="replace")


# --- what ran where, from an application's event log (spark.eventLog.enabled)

@dataclass
class EventLog:
    app_id: str
    master: str
    tasks: Counter              # executor id -> tasks that ended in success
    failed_tasks: int


def event_log_files(path: Path) -> list[Path]:
    """The files of one application's event log: the file itself, or, when
    rolling (Spark 4's default), the dir's events_N_APP files in N order."""
    if not path.is_dir():
        return [path]
    parts = [(int(f.name.split("_")[1]), f) for f in path.iterdir() if f.name.startswith("events_")]
    return [f for _, f in sorted(parts)]


# Only these events are parsed: the others (SQL plans among them) make up most of the log's bytes.
_WANTED = tuple(f'{{"Event":"{kind}"' for kind in ("SparkListenerApplicationStart", "SparkListenerEnvironmentUpdate",
                                                     "SparkListenerTaskEnd"))


def read_event_log(path: Path) -> EventLog:
    """The application's id and master, and its successful tasks per executor id ("driver" for the driver)."""
    tasks: Counter = Counter()
    failed = 0
    app_id = master = ""
    for part in event_log_files(path):
        with open(part) as lines:
            for line in lines:
                if not line.startswith(_WANTED):
                    continue
                event = json.loads(line)
                kind = event["Event"]
                if kind == "SparkListenerApplicationStart":
                    app_id = event["App ID"]
                elif kind == "SparkListenerEnvironmentUpdate":
                    master = event["Spark Properties"].get("spark.master", "")
                elif event["Task End Reason"]["Reason"] == "Success":
                    tasks[event["Task Info"]["Executor ID"]] += 1
                else:
                    failed += 1
    return EventLog(app_id, master, tasks, failed)


def executors_by_worker(worker_dirs: list[Path], app_id: str) -> dict[str, int]:
    """Executor id -> the index (0-based) of the worker that ran it, from the
    workers' work dirs (WORKER_DIR/APP_ID/EXECUTOR_ID/, where the worker
    keeps each executor's stdout and stderr)."""
    found = {}
    for index, work in enumerate(worker_dirs):
        app = work / app_id
        if app.is_dir():
            found.update({executor.name: index for executor in app.iterdir() if executor.is_dir()})
    return found
