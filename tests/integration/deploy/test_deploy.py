"""`kafkactl deploy` against three real SSH hosts (tests/support/ssh_hosts.py).

Each host runs a ZooKeeper server and a broker, installed from the
wheelhouse of this checkout. The tests run in file order and share the
cluster: bad input first (nothing is installed yet), then plan, install,
start, produce and consume, a second install, the rolling restart under
load, a log dir that cannot be written, and uninstall.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kafkactl.cluster.deploy import render
from kafkactl.cluster.deploy.layout import HostLayout
from kafkactl.cluster.zk.client import session
from support.acked_check import assert_check
from support.load_producer import LoadProducer
from support.offline_observer import OfflineObserver, assert_never_offline
from support.ssh_hosts import SshHosts
from support.waiting import wait_for

KAFKACTL = str(Path(sys.executable).with_name("kafkactl"))
COMMAND_TIMEOUT_S = 900
TOPIC = "deployed"
LOAD_TOPIC = "rolled"    # only the load producer's values: support.acked_check reads it whole
PARTITIONS = 6


def inventory_document(hosts: SshHosts, **broker_config) -> dict:
    zookeeper = {h.name: {"zookeeper_id": i + 1} for i, h in enumerate(hosts.hosts)}
    brokers = {h.name: {"broker_id": i + 1, "rack": f"rack-{i + 1}",
                        "log_dirs": [{"path": d.path} for d in h.disks]} for i, h in enumerate(hosts.hosts)}
    every = {h.name: {"ansible_host": h.address, "ansible_port": h.port, "ansible_user": h.user,
                      "ansible_ssh_private_key_file": str(h.private_key)} for h in hosts.hosts}
    return {"all": {
        "hosts": every,
        "children": {
            "zookeeper": {"hosts": zookeeper},
            "brokers": {"vars": {"broker_config": {"default.replication.factor": 3, "min.insync.replicas": 2,
                                                   "offsets.topic.replication.factor": 3, **broker_config}},
                        "hosts": brokers},
        }}}


def kafkactl(*args: str, check: bool = True, timeout_s: float = COMMAND_TIMEOUT_S) -> subprocess.CompletedProcess:
    done = subprocess.run([KAFKACTL, *args], capture_output=True, text=True, timeout=timeout_s,
                          stdin=subprocess.DEVNULL)
    if check and done.returncode != 0:
        raise AssertionError(f"kafkactl {' '.join(args)} exited {done.returncode}\n"
                             f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}")
    return done


@pytest.fixture(scope="module")
def inventory(ssh_hosts: SshHosts, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("inventory") / "inventory.yml"
    path.write_text(yaml.safe_dump(inventory_document(ssh_hosts)))
    return path


@pytest.fixture(scope="module")
def wheelhouse() -> dict:
    """Built once for the module: every install below gets the same release
    (a rebuild after a source edit would make a new one)."""
    return json.loads(kafkactl("deploy", "wheelhouse", "-o", "json").stdout)


@pytest.fixture(scope="module")
def deploy(inventory: Path, known_hosts: Path, wheelhouse: dict):
    def run(command: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        wheels = ("--wheelhouse", wheelhouse["path"]) if command in ("plan", "install") else ()
        return kafkactl("deploy", command, "-i", str(inventory), "--known-hosts", str(known_hosts), *wheels,
                        *args, check=check)
    return run


def bootstrap(hosts: SshHosts) -> str:
    return ",".join(f"{h.address}:9092" for h in hosts.hosts)


def zookeeper_connect(hosts: SshHosts) -> str:
    return ",".join(f"{h.address}:2181" for h in hosts.hosts)


# --- bad input, before anything is installed ------------------------------------

def test_an_inventory_error_exits_2_before_any_connection(ssh_hosts, tmp_path, known_hosts):
    document = inventory_document(ssh_hosts)
    second = ssh_hosts.hosts[1].name
    document["all"]["children"]["brokers"]["hosts"][second]["broker_id"] = 1
    document["all"]["hosts"][second]["ansible_host"] = "10.231.255.254"   # would hang if contacted
    path = tmp_path / "bad.yml"
    path.write_text(yaml.safe_dump(document))
    done = kafkactl("deploy", "plan", "-i", str(path), "--known-hosts", str(known_hosts), check=False,
                    timeout_s=60)
    assert done.returncode == 2, done.stderr
    assert f"host {second}: broker_id: 1 is also the broker_id of {ssh_hosts.hosts[0].name}" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_an_unknown_host_key_is_refused_naming_the_host(inventory, tmp_path, ssh_hosts):
    empty = tmp_path / "known_hosts"
    done = kafkactl("deploy", "status", "-i", str(inventory), "--known-hosts", str(empty), check=False)
    assert done.returncode == 1
    for host in ssh_hosts.hosts:
        assert f"host {host.name} ({host.address}:{host.port})" in done.stderr + done.stdout
    assert "--trust-on-first-use" in done.stderr + done.stdout
    assert not empty.exists() or empty.read_text() == ""


def test_an_unreachable_host_fails_within_its_timeout_naming_it(ssh_hosts, tmp_path, known_hosts):
    document = inventory_document(ssh_hosts)
    subnet = ssh_hosts.hosts[0].address.rsplit(".", 1)[0]
    document["all"]["hosts"][ssh_hosts.hosts[2].name]["ansible_host"] = f"{subnet}.250"   # nobody there
    path = tmp_path / "unreachable.yml"
    path.write_text(yaml.safe_dump(document))
    done = kafkactl("deploy", "status", "-i", str(path), "--known-hosts", str(known_hosts),
                    "--connect-timeout", "2", check=False, timeout_s=60)
    assert done.returncode == 1
    assert f"host {ssh_hosts.hosts[2].name} ({subnet}.250:22)" in done.stdout + done.stderr


# --- plan, install, start --------------------------------------------------------

def test_plan_shows_the_changes_and_the_detected_media_and_changes_nothing(deploy, ssh_hosts):
    done = deploy("plan", "-o", "json")
    plan = json.loads(done.stdout)
    assert [h["host"] for h in plan["hosts"]] == [h.name for h in ssh_hosts.hosts]
    for row, host in zip(plan["hosts"], ssh_hosts.hosts):
        assert row["ok"] and row["roles"] == ["zookeeper", "broker"]
        assert row["changes"][0].startswith(f"install release {plan['release']}")
        assert {path: m["media"] for path, m in row["media"].items()} == host.expected_media
        assert host.run(f"test -e {HostLayout().install_root}/versions", check=False).returncode == 1


def test_install_start_and_the_cluster_serves_kcat(deploy, ssh_hosts, wheelhouse):
    installed = json.loads(deploy("install", "-o", "json").stdout)
    assert installed["release"] == wheelhouse["release"]
    assert installed["changed"] and all(h["result"] == "changed" for h in installed["hosts"])
    marker = ssh_hosts.hosts[0].run(f"cat {HostLayout().release_marker(installed['release'])}").stdout
    wheels = [path.name for path in Path(wheelhouse["path"]).glob("*.whl")]
    assert marker == render.release_marker(installed["release"], installed["release"].rsplit("-", 1)[0], wheels,
                                           "kafkactl deploy")      # what the Ansible role writes, but for its name
    deploy("start")
    shown = json.loads(deploy("status", "-o", "json").stdout)
    assert {(m["host"], m["log_dir"]): m["media"] for m in shown["media"]} == \
        {(h.name, path): media for h in ssh_hosts.hosts for path, media in h.expected_media.items()}
    status = shown["services"]
    assert {(s["host"], s["service"]) for s in status if s["running"]} == \
        {(h.name, service) for h in ssh_hosts.hosts for service in ("zookeeper", "broker")}
    assert {s["release"] for s in status} == {installed["release"]}
    kafkactl("-z", zookeeper_connect(ssh_hosts), "topics", "create", TOPIC, "--partitions", str(PARTITIONS),
             "--replication-factor", "3")
    lines = [f"message-{i}" for i in range(1000)]
    subprocess.run(["kcat", "-b", bootstrap(ssh_hosts), "-t", TOPIC, "-P", "-X", "acks=all"],
                   input="\n".join(lines) + "\n", text=True, check=True, timeout=60)
    consumed = subprocess.run(["kcat", "-b", bootstrap(ssh_hosts), "-t", TOPIC, "-C", "-e", "-q", "-o", "beginning"],
                              capture_output=True, text=True, check=True, timeout=60).stdout.split()
    assert sorted(consumed) == sorted(lines)


def test_brokers_know_their_media_and_rack_from_the_hosts(ssh_hosts):
    for index, host in enumerate(ssh_hosts.hosts):
        config = host.run(f"cat {HostLayout().server_properties}").stdout
        expected = ",".join(f"{path}:{media}" for path, media in host.expected_media.items())
        assert f"log.dir.media={expected}\n" in config
        assert f"broker.rack=rack-{index + 1}\n" in config


def test_a_second_install_changes_nothing_and_says_so(deploy):
    done = deploy("install")
    assert "nothing to change: every host already has release" in done.stdout
    assert json.loads(deploy("install", "-o", "json").stdout)["changed"] is False


# --- the rolling restart ----------------------------------------------------------

def _pids(deploy) -> dict[tuple[str, str], int]:
    status = json.loads(deploy("status", "-o", "json").stdout)["services"]
    return {(s["host"], s["service"]): s["pid"] for s in status}


class _ZooKeeperView:
    def __init__(self, client):
        self.zk = client


@pytest.mark.slow
def test_a_rolling_restart_under_an_idempotent_producer_loses_nothing(deploy, ssh_hosts, inventory):
    # A changed config is installed beside the running one: pending until the roll.
    inventory.write_text(yaml.safe_dump(inventory_document(ssh_hosts, **{"log.retention.hours": 100})))
    deploy("install")
    pending = json.loads(deploy("status", "-o", "json").stdout)["services"]
    assert {(s["host"], s["service"]) for s in pending if s["pending_restart"]} == \
        {(h.name, "broker") for h in ssh_hosts.hosts}
    before = _pids(deploy)
    kafkactl("-z", zookeeper_connect(ssh_hosts), "topics", "create", LOAD_TOPIC, "--partitions", str(PARTITIONS),
             "--replication-factor", "3", "--config", "min.insync.replicas=2")
    with session(zookeeper_connect(ssh_hosts), 30) as client:
        controller = json.loads(client.get("/controller")[0])["brokerid"]
        observer = OfflineObserver(_ZooKeeperView(client), LOAD_TOPIC, PARTITIONS, interval_s=0.05).start()
        producer = LoadProducer(bootstrap(ssh_hosts), LOAD_TOPIC, PARTITIONS, rate=200).start()
        try:
            producer.wait_progress(100, timeout_s=60)
            done = deploy("rolling-restart", "-o", "json")
            acked = producer.ack_count()
            wait_for(lambda: producer.ack_count() > acked + 100, timeout_s=60, what="the producer going on")
        finally:
            producer.stop()
            observer.stop()
    restarted = json.loads(done.stdout)["restarted"]
    order = [(r["host"], r["service"]) for r in restarted]
    assert sorted(order) == sorted(before), order
    assert [s for _, s in order] == ["zookeeper"] * 3 + ["broker"] * 3
    controller_host = ssh_hosts.hosts[controller - 1].name
    assert order[-1] == (controller_host, "broker"), f"the controller ({controller_host}) was not last: {order}"
    after = _pids(deploy)
    assert all(after[key] != before[key] for key in before), (before, after)
    assert not producer.failures, producer.summary()
    assert_check(bootstrap(ssh_hosts), producer)
    assert_never_offline(observer, min_rounds=20)
    status = json.loads(deploy("status", "-o", "json").stdout)["services"]
    assert not any(s["pending_restart"] for s in status), status


# --- a log dir that cannot be written -----------------------------------------------

def test_a_log_dir_that_cannot_be_written_is_reported_before_anything_starts(deploy, ssh_hosts):
    deploy("stop")
    host = ssh_hosts.hosts[1]
    hdd = next(d for d in host.disks if d.media == "hdd")
    host.run(f"mount -o remount,ro {hdd.path}")
    try:
        done = deploy("start", check=False)
        assert done.returncode == 1
        assert f"host {host.name}: log dir {hdd.path} cannot be written" in done.stderr
        assert "nothing was started" in done.stderr
        status = json.loads(deploy("status", "-o", "json").stdout)["services"]
        assert not any(s["running"] for s in status), status
        plan = deploy("plan", check=False)
        assert plan.returncode == 1 and f"log dir {hdd.path} is on a read-only file system" in plan.stderr
    finally:
        host.run(f"mount -o remount,rw {hdd.path}")


def test_uninstall_with_purge_removes_everything(deploy, ssh_hosts):
    deploy("uninstall", "--purge-data", "--yes")
    layout = HostLayout()
    for host in ssh_hosts.hosts:
        assert host.run(f"ls -A {layout.install_root}").stdout.strip() == ""
        assert host.run(f"ls -A {layout.data_root} | grep -v -e ssd0 -e hdd0 || true").stdout.strip() == ""
        for disk in host.disks:
            assert host.run(f"ls -A {disk.path} | grep -v lost+found || true").stdout.strip() == ""
