import fcntl
import json
import os
import subprocess
import sys

import pytest

from kafkactl.cluster.deploy.supervisor_definitions import Paths
from kafkactl.cluster.deploy.supervisor_files import (
    SupervisorError, alive, child_env, log_tail, process_start, read_json, service_lock, write_atomic,
)


def test_write_atomic_replaces_the_whole_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "run" / "broker.pid"
    write_atomic(path, {"state": "starting"})
    write_atomic(path, {"state": "running"})
    assert json.loads(path.read_text()) == {"state": "running"}
    assert [entry.name for entry in path.parent.iterdir()] == ["broker.pid"]


def test_read_json_answers_none_for_missing_torn_and_oversized_files(tmp_path):
    (tmp_path / "torn.json").write_text('{"state": "run')
    (tmp_path / "big.json").write_text(json.dumps({"x": "y" * (1 << 20)}))
    assert [read_json(tmp_path / name) for name in ("missing.json", "torn.json", "big.json")] == [None, None, None]


def test_liveness_needs_the_recorded_start_time(tmp_path):
    ours = process_start(os.getpid())
    assert ours is not None and alive(os.getpid(), ours)
    assert not alive(os.getpid(), ours + 1)   # a recycled pid
    assert not alive(os.getpid(), None) and not alive(0, ours)


def test_a_zombie_is_not_alive():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    started = process_start(child.pid)
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)   # exited, not reaped: a zombie
    try:
        assert started is not None and process_start(child.pid) is None
    finally:
        child.wait()


def test_the_lock_is_exclusive_and_its_wait_bounded(tmp_path):
    paths = Paths(tmp_path)
    with service_lock(paths, "broker", timeout_s=1):
        with open(paths.run("broker", ".lock")) as other:
            with pytest.raises(BlockingIOError):
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
    with open(paths.run("broker", ".lock")) as holder:
        fcntl.flock(holder, fcntl.LOCK_EX)
        with pytest.raises(SupervisorError, match=r"broker\.lock: another start/stop/restart of broker held it "
                                                  r"for more than 0\.2 s"):
            with service_lock(paths, "broker", timeout_s=0.2):
                pass


def test_the_childs_environment_is_minimal_plus_the_definitions(monkeypatch):
    monkeypatch.setenv("CALLER_ONLY", "x")
    env = child_env({"KAFKA_HEAP": "1G", "LANG": "de_DE.UTF-8"})
    assert sorted(env) == ["HOME", "KAFKA_HEAP", "LANG", "PATH"]
    assert env["LANG"] == "de_DE.UTF-8" and env["PATH"].startswith("/usr/local/sbin:")


def test_log_tail_reads_only_the_end(tmp_path):
    log = tmp_path / "broker.log"
    log.write_text("x" * 200_000 + "\n" + "".join(f"line {n}\n" for n in range(25)))
    assert log_tail(str(log)) == [f"line {n}" for n in range(5, 25)]
    assert log_tail(str(tmp_path / "missing.log"))[0].startswith("(cannot read ")
