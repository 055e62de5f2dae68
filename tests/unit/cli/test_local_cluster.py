"""cluster/local without real servers: config files, cluster.json, shape rules, pids."""

import json
import sys
import time

import pytest

from kafkactl.cluster.local import (LocalCluster, LocalClusterUsageError, NotAClusterDirError,
                                    ShapeMismatchError, parse_overrides, procs, state)
from kafkactl.cluster.local.brokers import broker_argv, server_properties
from kafkactl.cluster.local.state import Layout
from kafkactl.cluster.local.zookeeper import zoo_cfg


def make_spec(root, brokers=2, overrides=None):
    layout = Layout(root)
    spec = state.new_spec(layout, "127.0.0.1", brokers, [2181 + i for i in range(brokers + 1)],
                          overrides or {})
    root.mkdir(parents=True, exist_ok=True)
    state.save(layout, spec)
    return spec


def props(text):
    return dict(line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#"))


def test_server_properties(tmp_path):
    spec = make_spec(tmp_path, overrides={"log.segment.bytes": "1048576"})
    broker = spec.broker(2)
    got = props(server_properties(broker, "127.0.0.1", 2181, {"log.segment.bytes": "1048576"}, cluster_size=2))
    ssd, hdd = tmp_path / "broker-2" / "ssd0", tmp_path / "broker-2" / "hdd0"
    assert got == {
        "broker.id": "2",
        "listeners": "PLAINTEXT://127.0.0.1:2183",
        "advertised.listeners": "PLAINTEXT://127.0.0.1:2183",
        "log.dirs": f"{ssd},{hdd}",
        "log.dir.media": f"{ssd}:ssd,{hdd}:hdd",
        "zookeeper.connect": "127.0.0.1:2181",
        "log.segment.bytes": "1048576",
        "controlled.shutdown.max.retries": "1",
        "controlled.shutdown.retry.backoff.ms": "500",
        "offsets.topic.replication.factor": "2",
        "group.initial.rebalance.delay.ms": "0",
    }
    big = props(server_properties(broker, "127.0.0.1", 2181, {}, cluster_size=5))
    assert big["offsets.topic.replication.factor"] == "3"
    overridden = props(server_properties(broker, "127.0.0.1", 2181, {"controlled.shutdown.max.retries": "3"}))
    assert overridden["controlled.shutdown.max.retries"] == "3"
    assert broker.config_file == str(tmp_path / "broker-2" / "server.properties")
    assert broker.log_file == str(tmp_path / "logs" / "broker-2.log")


def test_zoo_cfg(tmp_path):
    got = props(zoo_cfg(tmp_path / "data", 4321))
    assert got["clientPort"] == "4321"
    assert got["clientPortAddress"] == "127.0.0.1"
    assert got["admin.enableServer"] == "false"
    assert got["4lw.commands.whitelist"] == "ruok,srvr,mntr"
    assert int(got["maxSessionTimeout"]) >= 60000


def test_broker_command_uses_this_python():
    assert broker_argv("/d/server.properties") == [
        sys.executable, "-m", "kafkactl.cluster.broker", "/d/server.properties"]


def test_cluster_json_shape_and_round_trip(tmp_path):
    make_spec(tmp_path, brokers=2, overrides={"a.b": "1"})
    data = json.loads((tmp_path / "cluster.json").read_text())
    assert data["kind"] == "kafkactl-local-cluster" and data["version"] == 1
    assert data["broker_count"] == 2
    assert data["zookeeper"]["port"] == 2181
    assert [(b["id"], b["port"]) for b in data["brokers"]] == [(1, 2182), (2, 2183)]
    assert data["brokers"][0]["log_dirs"] == [
        {"path": str(tmp_path / "broker-1" / "ssd0"), "media": "ssd"},
        {"path": str(tmp_path / "broker-1" / "hdd0"), "media": "hdd"}]
    assert data["overrides"] == {"a.b": "1"}
    assert state.load(Layout(tmp_path)) == state.ClusterSpec.from_json(data)


def test_status_of_a_stopped_cluster(tmp_path):
    make_spec(tmp_path, brokers=2)
    status = LocalCluster(tmp_path).status()
    assert not status.all_alive and status.zookeeper_pid is None
    assert status.bootstrap_servers == "127.0.0.1:2182,127.0.0.1:2183"
    broker = status.to_dict()["brokers"][1]
    assert {k: broker[k] for k in ("id", "host", "port", "alive", "pid")} == {
        "id": 2, "host": "127.0.0.1", "port": 2183, "alive": False, "pid": None}
    assert broker["log_dirs"] == [str(tmp_path / "broker-2" / "ssd0"), str(tmp_path / "broker-2" / "hdd0")]


def test_a_different_broker_count_is_refused_before_starting_anything(tmp_path):
    make_spec(tmp_path, brokers=2)
    with pytest.raises(ShapeMismatchError, match="2 broker"):
        LocalCluster(tmp_path).up(brokers=3)
    with pytest.raises(ShapeMismatchError, match="overrides"):
        LocalCluster(tmp_path).up(overrides={"x.y": "1"})
    assert not (tmp_path / "logs").exists()  # nothing was launched


def test_a_foreign_directory_is_neither_used_nor_purged(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(NotAClusterDirError):
        LocalCluster(tmp_path).up(brokers=1)
    with pytest.raises(NotAClusterDirError):
        LocalCluster(tmp_path).down(purge=True)
    assert (tmp_path / "notes.txt").exists()


def test_down_is_idempotent_and_purges_only_ours(tmp_path):
    assert LocalCluster(tmp_path / "missing").down(purge=True) is None
    root = tmp_path / "c"
    make_spec(root)
    assert LocalCluster(root).down() is not None
    assert LocalCluster(root).down(purge=True) is not None
    assert not root.exists()


@pytest.mark.parametrize("items, expected", [
    (["a.b=1", "c=x=y", "d= spaced "], {"a.b": "1", "c": "x=y", "d": "spaced"}),
    ([], {}),
])
def test_parse_overrides(items, expected):
    assert parse_overrides(items) == expected


@pytest.mark.parametrize("bad", ["novalue", "=1", "bad key=1", "broker.id=3", "listeners=x"])
def test_bad_overrides_name_the_argument(bad):
    with pytest.raises(LocalClusterUsageError) as caught:
        parse_overrides(["ok=1", bad])
    assert bad.split("=")[0] in str(caught.value)


def test_liveness_checks_the_command_line_not_just_the_pid(tmp_path):
    marker = str(tmp_path / "marker.cfg")
    sleeper = [sys.executable, "-c", "import time; time.sleep(30)", marker]
    launched = procs.spawn(sleeper, tmp_path / "x.log", tmp_path)
    try:
        assert procs.is_running(procs.Proc(launched.pid, marker))
        # Same pid, different identity: a recycled pid must not count as ours.
        assert not procs.is_running(procs.Proc(launched.pid, str(tmp_path / "other.cfg")))
        procs.stop_all([procs.Proc(launched.pid, marker)], timeout_s=5)
        assert not procs.is_running(procs.Proc(launched.pid, marker))
    finally:
        procs.signal_proc(procs.Proc(launched.pid, marker), 9)
    assert (tmp_path / "x.log").read_text().startswith("--- kafkactl")


def test_stop_escalates_to_sigkill(tmp_path):
    marker = str(tmp_path / "stubborn.cfg")
    code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('READY'.lower(), flush=True); time.sleep(60)"
    launched = procs.spawn([sys.executable, "-c", code, marker], tmp_path / "s.log", tmp_path)
    proc = procs.Proc(launched.pid, marker)
    deadline = time.monotonic() + 10
    while "ready" not in (tmp_path / "s.log").read_text().splitlines() and time.monotonic() < deadline:
        time.sleep(0.05)
    started = time.monotonic()
    procs.stop_all([proc], timeout_s=0.5)
    assert not procs.is_running(proc)
    assert time.monotonic() - started < 5
    assert procs.exit_code(launched.pid) == -9


def test_log_tail_reads_only_this_run(tmp_path):
    log = tmp_path / "b.log"
    log.write_text("old 1\nold 2\n")
    offset = log.stat().st_size
    with open(log, "a") as out:
        out.write("".join(f"new {i}\n" for i in range(30)))
    tail = procs.log_tail(log, offset, lines=3)
    assert tail.splitlines() == ["new 27", "new 28", "new 29"]
    assert procs.log_tail(log, offset, lines=100).splitlines()[0] == "new 0"
