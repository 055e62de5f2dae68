"""`kafkactl cluster up/status/down` on real ZooKeeper and real processes."""

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from kafkactl.cluster.local.zookeeper import four_letter
from kafkactl.cluster.zk.client import session as zk_session

# The shortest session ZooKeeper grants (2 ticks): a killed broker's znode
# then expires quickly, so a restart does not wait long for it.
FAST_SESSIONS = "zookeeper.session.timeout.ms=4000"


def cmdline(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")


def pid_gone(pid: int) -> bool:
    try:
        return cmdline(pid) == [""]  # a zombie, waiting for its parent
    except FileNotFoundError:
        return True


def crash(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while not pid_gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)


def registered_ids(zookeeper: str) -> list[str]:
    with zk_session(zookeeper, 5) as client:
        return sorted(client.get_children_async("/brokers/ids").get(timeout=5))


def assert_one_line_error(result, *fragments):
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kafkactl: error: "), result.err
    for fragment in fragments:
        assert fragment in lines[0]


def test_up_status_down(cli, cluster_dir, home):
    up = cli.ok("cluster", "up", "--brokers", "1", "--dir", str(cluster_dir), "-o", "json").json()

    zk_port = int(up["zookeeper"].rsplit(":", 1)[1])
    assert up["zookeeper"] == f"127.0.0.1:{zk_port}"
    [broker] = up["brokers"]
    assert {k: broker[k] for k in ("id", "host", "alive")} == {"id": 1, "host": "127.0.0.1", "alive": True}
    assert up["bootstrap_servers"] == f"127.0.0.1:{broker['port']}"
    assert broker["log_dirs"] == [str(cluster_dir / "broker-1" / "ssd0"), str(cluster_dir / "broker-1" / "hdd0")]
    assert all(Path(d).is_dir() for d in broker["log_dirs"])
    assert str(cluster_dir / "broker-1" / "server.properties") in cmdline(broker["pid"])
    assert four_letter("127.0.0.1", zk_port, "ruok") == "imok"
    assert registered_ids(up["zookeeper"]) == ["1"]

    # The cluster became the current context.
    config = json.loads((home / "config.json").read_text())
    assert config["contexts"][config["current_context"]] == {
        "zookeeper": up["zookeeper"], "cluster_dir": str(cluster_dir)}
    current = cli.ok("context", "current", "-o", "json").json()
    assert current["zookeeper"] == up["zookeeper"]

    # Shared options before or after the subcommand; table output is readable.
    before = cli.ok("-o", "json", "cluster", "status", "--dir", str(cluster_dir)).json()
    after = cli.ok("cluster", "status", "--dir", str(cluster_dir), "--output=json").json()
    assert before == after
    assert before["brokers"][0]["alive"] and before["brokers"][0]["registered"]
    assert before["zookeeper_alive"] and before["zookeeper_pid"] == up["zookeeper_pid"]
    table = cli.ok("cluster", "status", "--dir", str(cluster_dir)).out
    assert up["bootstrap_servers"] in table and "running" in table

    # A different shape is refused, and nothing changes.
    refused = cli("cluster", "up", "--brokers", "2", "--dir", str(cluster_dir))
    assert refused.code == 2
    assert_one_line_error(refused, "1 broker(s)")

    cli.ok("cluster", "down", "--dir", str(cluster_dir))
    assert pid_gone(broker["pid"]) and pid_gone(up["zookeeper_pid"])
    stopped = cli("cluster", "status", "--dir", str(cluster_dir), "-o", "json")
    assert stopped.code == 1, "status of a stopped cluster must say so in its exit code"
    down = stopped.json()
    assert not down["zookeeper_alive"] and not down["brokers"][0]["alive"]
    again = cli.ok("cluster", "down", "--dir", str(cluster_dir), "-o", "json").json()
    assert again["existed"] and again["stopped"]


def test_up_again_restarts_only_what_died_with_its_port_and_data(cli, cluster_dir):
    first = cli.ok("cluster", "up", "-n", "2", "--dir", str(cluster_dir),
                   "--config", FAST_SESSIONS, "-o", "json").json()
    killed, survivor = first["brokers"][1], first["brokers"][0]
    crash(killed["pid"])

    one_down = cli("cluster", "status", "--dir", str(cluster_dir), "-o", "json")
    assert one_down.code == 1
    assert [b["alive"] for b in one_down.json()["brokers"]] == [True, False]

    second = cli.ok("cluster", "up", "--dir", str(cluster_dir), "-o", "json").json()
    restarted = second["brokers"][1]
    assert restarted["alive"] and restarted["pid"] != killed["pid"]
    assert (restarted["port"], restarted["log_dirs"]) == (killed["port"], killed["log_dirs"])
    assert second["brokers"][0]["pid"] == survivor["pid"]  # untouched
    assert second["zookeeper_pid"] == first["zookeeper_pid"]
    assert second["config_overrides"] == {"zookeeper.session.timeout.ms": "4000"}
    # Same data dir: the stand-in broker logged both of its starts there.
    starts = Path(restarted["log_dirs"][0], "starts.log").read_text().splitlines()
    assert len(starts) == 2
    assert registered_ids(second["zookeeper"]) == ["1", "2"]


def test_purge_deletes_only_our_directory(cli, cluster_dir, tmp_path, home):
    cli.ok("cluster", "up", "-n", "1", "--dir", str(cluster_dir))
    cli.ok("cluster", "down", "--dir", str(cluster_dir), "--purge")
    assert not cluster_dir.exists()
    assert json.loads((home / "config.json").read_text())["current_context"] is None
    assert cli.ok("cluster", "down", "--dir", str(cluster_dir), "--purge").code == 0

    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "precious.txt").write_text("keep me")
    refused = cli("cluster", "down", "--dir", str(foreign), "--purge")
    assert refused.code == 2
    assert_one_line_error(refused, "does not look like a kafkactl local cluster")
    assert (foreign / "precious.txt").exists()


def test_a_broker_that_dies_at_start_shows_its_log(cli, cluster_dir):
    result = cli("cluster", "up", "-n", "1", "--dir", str(cluster_dir),
                 extra_env={"KAFKACTL_BROKER_MODULE": "no_such_broker_module"})
    assert result.code == 1
    first, *rest = result.err.strip().splitlines()
    assert first.startswith("kafkactl: error: broker 1 exited")
    assert str(cluster_dir / "logs" / "broker-1.log") in first
    assert any("No module named no_such_broker_module" in line for line in rest)
    assert "Traceback" not in result.err


def test_a_broker_that_never_registers_times_out(cli, cluster_dir):
    started = time.monotonic()
    result = cli("cluster", "up", "-n", "1", "--dir", str(cluster_dir),
                 "--config", "fake.hang=true", "--timeout", "3")
    assert result.code == 1
    assert time.monotonic() - started < 20
    first = result.err.strip().splitlines()[0]
    assert "did not register under /brokers/ids within 3 s" in first
    assert "broker-1.log" in first


def up_json(real_cli, *args):
    result = real_cli(*args)
    assert result.code == 0, result.err
    return result.json()


def test_real_broker_registers_and_stops(real_cli, cluster_dir):
    up = up_json(real_cli, "cluster", "up", "-n", "1", "--dir", str(cluster_dir), "-o", "json")
    assert registered_ids(up["zookeeper"]) == ["1"]
    metadata = subprocess.run(["kcat", "-b", up["bootstrap_servers"], "-L", "-m", "10"],
                              capture_output=True, text=True, timeout=30).stdout
    assert f"broker 1 at {up['bootstrap_servers']}" in metadata

    pid = up["brokers"][0]["pid"]
    real_cli.ok("cluster", "down", "--dir", str(cluster_dir))
    assert pid_gone(pid)


def test_real_broker_restarts_after_a_crash(real_cli, cluster_dir):
    first = up_json(real_cli, "cluster", "up", "-n", "1", "--dir", str(cluster_dir),
                       "--config", FAST_SESSIONS, "-o", "json")["brokers"][0]
    crash(first["pid"])
    second = real_cli.ok("cluster", "up", "--dir", str(cluster_dir), "-o", "json").json()["brokers"][0]
    assert second["alive"] and second["registered"] and second["pid"] != first["pid"]
    assert (second["port"], second["log_dirs"]) == (first["port"], first["log_dirs"])
