"""ansible/site.yml and rolling_restart.yml with the real ansible-playbook on real SSH hosts.

Three fresh SSH test hosts (support/ssh_hosts.py), each a ZooKeeper server
and a broker with an SSD and an HDD log dir (media auto), and a wheelhouse
built from this checkout. The module's tests run in order on the one
cluster: the first site.yml run, a second run that must change nothing,
then a rolling restart under a producer. An unwritable log dir is tested on a
host of its own.

The inventory mixes value kinds (booleans, integers, a float, strings, an
integer rack, yes/no and boolean ZooKeeper keys, a four-letter-word list
without srvr) so that the comparison with render.py covers the roles' value
conversion, not only the layout.
"""

from __future__ import annotations

import base64
import collections
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from support.ansible_runner import PlaybookRun, changed_hosts, run_playbook, write_inventory
from support.producers import BackgroundProducer
from support.ssh_hosts import SshHost, SshHosts, cleanup_leftovers
from support.waiting import wait_for

from kafkactl.cluster.deploy import render
from kafkactl.cluster.deploy.host_plan import SLF4J_BINDING, ZOOKEEPER_CONF_DIR, ZOOKEEPER_JAR
from kafkactl.cluster.deploy.inventory import Inventory, load_inventory
from kafkactl.cluster.deploy.layout import BROKER, ZOOKEEPER, HostLayout
from kafkactl.cluster.deploy.wheelhouse import Wheelhouse, build_wheelhouse
from kafkactl.cluster.local.zookeeper import four_letter

BUILD_TIMEOUT_S = 900.0
COMMAND_TIMEOUT_S = 60
MESSAGES = 1000
LAYOUT = HostLayout()
KAFKACTL = str(Path(sys.executable).parent / "kafkactl")
RESTART_TASK = "kafkactl : Restart the service under the supervisor"

BROKER_VARS = {"broker_config": {
    "num.partitions": 3,
    "default.replication.factor": 3,
    "min.insync.replicas": 2,
    "offsets.topic.replication.factor": 3,
    "auto.create.topics.enable": False,
    "unclean.leader.election.enable": False,
    "log.cleaner.min.cleanable.ratio": 0.5,
    "compression.type": "producer",
}}
ZOOKEEPER_VARS = {"zookeeper_config": {
    "tickTime": 2000,
    "maxSessionTimeout": "60000",         # an integer key given as a string
    "4lw.commands.whitelist": "mntr, conf",   # srvr and ruok are added
    "admin.enableServer": "False",        # a boolean key given as a string
    "forceSync": True,                    # YAML's yes: ZooKeeper compares it with "yes"
    "syncEnabled": True,
}}
RACKS = ("rack-a", "rack-b", 3)           # an integer rack is written as its decimal


@dataclass
class Cluster:
    hosts: list[SshHost]
    inventory_path: Path
    inventory: Inventory
    work_dir: Path
    wheelhouse: Wheelhouse
    first_run: PlaybookRun

    @property
    def zookeeper_connect(self) -> str:
        return render.zookeeper_connect(self.inventory)

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{host.address}:9092" for host in self.hosts)

    def site(self) -> PlaybookRun:
        return run_playbook("site.yml", self.inventory_path, self.work_dir,
                            extra_vars={"kafkactl_wheelhouse": str(self.wheelhouse.path)})

    def kafkactl(self, *args: str, timeout_s: int = 10) -> subprocess.CompletedProcess[str]:
        return subprocess.run([KAFKACTL, "-z", self.zookeeper_connect, "--timeout", str(timeout_s), *args],
                              capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory) -> Wheelhouse:
    return build_wheelhouse(tmp_path_factory.mktemp("wheelhouse-cache"), timeout_s=BUILD_TIMEOUT_S)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, wheelhouse) -> Iterator[Cluster]:
    cleanup_leftovers()   # what a killed earlier run left (runs of live processes are kept)
    work = tmp_path_factory.mktemp("ansible")
    with SshHosts(3, work / "hosts") as hosts:
        known_hosts = hosts.write_known_hosts(work / "known_hosts")
        path = write_inventory(work / "inventory.yml", hosts.hosts, known_hosts, broker_vars=BROKER_VARS,
                               zookeeper_vars=ZOOKEEPER_VARS,
                               host_vars={h.name: {"rack": rack} for h, rack in zip(hosts.hosts, RACKS)})
        first = run_playbook("site.yml", path, work, extra_vars={"kafkactl_wheelhouse": str(wheelhouse.path)})
        yield Cluster(list(hosts.hosts), path, load_inventory(str(path)), work, wheelhouse, first)


def deployed(cluster: Cluster) -> None:
    assert cluster.first_run.returncode == 0, f"site.yml failed:\n{cluster.first_run.tail}"


def mode(host: SshHost) -> str:
    try:
        answer = four_letter(host.address, 2181, "srvr", timeout_s=5)
    except OSError as error:
        return f"no answer ({error})"
    lines = [line for line in answer.splitlines() if line.startswith("Mode: ")]
    return lines[0].removeprefix("Mode: ") if lines else answer.strip()


def host_file(host: SshHost, path: str) -> bytes:
    return base64.b64decode(host.run(f"base64 -w0 {path}").stdout)


def pid_of(host: SshHost, pattern: str) -> int:
    """The one process matching `pattern` (written as [x]yz, so that the shell running pgrep does not match)."""
    pids = host.run(f"pgrep -f {pattern}", check=False).stdout.split()
    assert len(pids) == 1, f"on {host.name}, processes matching {pattern}: {pids}"
    return int(pids[0])


def kcat(cluster: Cluster, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["kcat", "-b", cluster.bootstrap, *args], input=stdin, capture_output=True, text=True,
                          timeout=COMMAND_TIMEOUT_S)
    assert done.returncode == 0, f"kcat {' '.join(args)}: {done.stderr}"
    return done


def consume_all(cluster: Cluster, topic: str) -> list[str]:
    return kcat(cluster, "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%s\\n").stdout.splitlines()


def create_topic(cluster: Cluster, topic: str) -> None:
    done = cluster.kafkactl("topics", "create", topic, "--partitions", "3", "--replication-factor", "3")
    assert done.returncode == 0, done.stderr
    wait_for(lambda: cluster.kafkactl("topics", "describe", topic, "--under-replicated-partitions",
                                      "--unavailable-partitions").returncode == 0,
             60, f"topic {topic} fully replicated", interval_s=0.5)


# --- the first run


def test_site_yml_starts_an_ensemble_and_three_brokers(cluster):
    deployed(cluster)
    assert sorted(mode(host) for host in cluster.hosts) == ["follower", "follower", "leader"]
    listed = cluster.kafkactl("-o", "json", "brokers", "list")
    assert listed.returncode == 0, listed.stderr
    assert sorted(broker["id"] for broker in json.loads(listed.stdout)) == [1, 2, 3]


def test_files_are_the_ones_kafkactl_deploy_writes(cluster):
    deployed(cluster)
    release = cluster.wheelhouse.release
    for host, zookeeper, broker in zip(cluster.hosts, cluster.inventory.zookeeper, cluster.inventory.brokers):
        assert (zookeeper.name, broker.name) == (host.name, host.name)
        java = host.run("command -v java").stdout.strip()
        slf4j = host.run(f"test -f {SLF4J_BINDING}", check=False).returncode == 0
        classpath = [ZOOKEEPER_CONF_DIR, ZOOKEEPER_JAR, *([SLF4J_BINDING] if slf4j else [])]
        zoo_cfg = render.zoo_cfg(cluster.inventory, zookeeper, LAYOUT)
        # media auto: the disks' own media, as detection must find them
        properties = render.server_properties(cluster.inventory, broker, host.expected_media)
        expected = {
            LAYOUT.zoo_cfg: zoo_cfg,
            LAYOUT.myid: render.myid(zookeeper),
            LAYOUT.service_definition(ZOOKEEPER):
                render.zookeeper_service(LAYOUT, release, java, classpath, zoo_cfg).to_json(),
            LAYOUT.server_properties: properties,
            LAYOUT.service_definition(BROKER): render.broker_service(LAYOUT, release, properties).to_json(),
        }
        for path, text in expected.items():
            assert host_file(host, path).decode() == text, f"{host.name}: {path}"
        assert host.run(f"readlink {LAYOUT.current_link}").stdout.strip() == f"versions/{release}"
        wheels = [wheel.name for wheel in cluster.wheelhouse.files]
        assert host_file(host, LAYOUT.release_marker(release)).decode() == render.release_marker(
            release, release.rsplit("-", 1)[0], wheels, "ansible")
        shipped = host.run(f"cd {LAYOUT.wheelhouse_dir(release)} && cat SHA256SUMS").stdout
        assert shipped == cluster.wheelhouse.manifest_text()


def test_each_broker_reports_the_media_of_its_disks(cluster):
    deployed(cluster)
    for i, host in enumerate(cluster.hosts):
        described = cluster.kafkactl("-o", "json", "brokers", "describe", str(i + 1))
        assert described.returncode == 0, described.stderr
        log_dirs = json.loads(described.stdout)["log_dirs"]
        assert {d["path"]: d["media"] for d in log_dirs} == {disk.path: disk.media for disk in host.disks}
        assert sorted(disk.media for disk in host.disks) == ["hdd", "ssd"]


def test_kcat_produces_and_consumes_through_the_cluster(cluster):
    deployed(cluster)
    create_topic(cluster, "kcat-roundtrip")
    values = [f"message-{i}" for i in range(MESSAGES)]
    kcat(cluster, "-P", "-t", "kcat-roundtrip", "-X", "acks=all", stdin="\n".join(values) + "\n")
    assert sorted(consume_all(cluster, "kcat-roundtrip")) == sorted(values)


# --- the second run


def test_a_second_run_changes_nothing(cluster):
    deployed(cluster)
    second = cluster.site()
    assert second.returncode == 0, second.tail
    recap = second.recap()
    # localhost: the play that checks the inventory
    assert sorted(recap) == sorted([host.name for host in cluster.hosts] + ["localhost"]), second.tail
    changed = {name: counts["changed"] for name, counts in recap.items() if counts["changed"]}
    assert changed == {}, second.tail


PRUNE_PLAYBOOK = """\
- name: Remove the releases no longer kept, as site.yml does after installing
  hosts: {host}
  gather_facts: false
  become: true
  tasks:
    - name: Read where current points
      ansible.builtin.stat:
        path: {current}
        get_checksum: false
      register: kafkactl_release_current
    - name: Prune
      ansible.builtin.include_role:
        name: kafkactl_release
        tasks_from: prune.yml
"""


def test_pruning_keeps_the_release_the_one_before_and_every_release_in_use(cluster):
    """The role's pruning is kafkactl deploy's rule (cluster/deploy/releases.py):
    a release a running service names stays, however old."""
    deployed(cluster)
    host, release = cluster.hosts[0], cluster.wheelhouse.release
    planted = {"0.0.0-cccccccccccc": True, "0.0.1-aaaaaaaaaaaa": True, "0.0.2-bbbbbbbbbbbb": True,
               "0.0.3-dddddddddddd": False}          # release -> complete
    running_copy = f"{LAYOUT.run_dir}/planted.running.json"
    try:
        for name, complete in planted.items():
            host.run(f"mkdir -p {LAYOUT.release_dir(name)}/venv" +
                     (f" && echo {{}} > {LAYOUT.release_marker(name)}" if complete else ""))
        host.run(f"echo '{{\"release\": \"0.0.1-aaaaaaaaaaaa\"}}' > {running_copy}")
        playbook = cluster.work_dir / "prune.yml"
        playbook.write_text(PRUNE_PLAYBOOK.format(host=host.name, current=LAYOUT.current_link))
        pruned = run_playbook(str(playbook), cluster.inventory_path, cluster.work_dir,
                              extra_vars={"kafkactl_release_name": release})
        assert pruned.returncode == 0, pruned.tail
        left = sorted(host.run(f"ls {LAYOUT.versions_dir}").stdout.split())
        # 0.0.1: a running service names it; 0.0.2: the newest other complete release (current is the new one)
        assert left == sorted([release, "0.0.1-aaaaaaaaaaaa", "0.0.2-bbbbbbbbbbbb"]), pruned.tail
    finally:
        host.run(f"rm -rf {running_copy} " + " ".join(LAYOUT.release_dir(name) for name in planted))


# --- the rolling restart


class UnavailablePoller:
    """Asks `kafkactl topics describe --unavailable-partitions -o json` until
    stopped, keeping every answer that listed a partition without a leader.
    An answer that is no listing (ZooKeeper unreachable for a moment while its
    leader restarts: exit 1 and a message) is counted apart: it says nothing
    about the partitions."""

    def __init__(self, cluster: Cluster):
        self.cluster = cluster
        self.found: list[str] = []
        self.unanswered: list[str] = []
        self.answered = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="unavailable-poller", daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            try:
                done = self.cluster.kafkactl("-o", "json", "topics", "describe", "--unavailable-partitions",
                                             timeout_s=5)
            except subprocess.TimeoutExpired:
                self.unanswered.append("timed out")
                continue
            try:
                listing = json.loads(done.stdout)
            except ValueError:
                self.unanswered.append(f"exit {done.returncode}: {done.stderr[-300:]}")
                continue
            self.answered += 1
            if listing:
                self.found.append(done.stdout[:2000])

    def __enter__(self) -> UnavailablePoller:
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        self._thread.join(COMMAND_TIMEOUT_S)


@pytest.mark.slow
def test_rolling_restart_keeps_every_partition_available(cluster):
    deployed(cluster)
    create_topic(cluster, "rolling")
    leader = next(host.name for host in cluster.hosts if mode(host) == "leader")
    shown = cluster.kafkactl("-o", "json", "controller", "show")
    assert shown.returncode == 0, shown.stderr
    controller = cluster.hosts[json.loads(shown.stdout)["controller_id"] - 1].name
    pids = {host.name: (pid_of(host, "[Q]uorumPeerMain"), pid_of(host, "[k]afkactl.cluster.broker"))
            for host in cluster.hosts}

    producer = BackgroundProducer(cluster.bootstrap, "rolling", lambda i: b"value-%d" % i, linger_ms=5,
                                  burst=20, pause_s=0.02, partitions=3)
    producer.start()
    try:
        with UnavailablePoller(cluster) as poller:
            wait_for(lambda: producer.acked_count() >= 100, 60, "the producer's first acknowledgements")
            rolled = run_playbook("rolling_restart.yml", cluster.inventory_path, cluster.work_dir)
            acked_during_roll = producer.acked_count()
    finally:
        unsent = producer.stop_and_flush()

    assert rolled.returncode == 0, rolled.tail
    restarted = changed_hosts(rolled.output, RESTART_TASK)
    names = sorted(host.name for host in cluster.hosts)
    assert sorted(restarted[:3]) == names and restarted[2] == leader, (restarted, leader)
    assert sorted(restarted[3:]) == names and restarted[5] == controller, (restarted, controller)
    for host in cluster.hosts:
        zookeeper_pid, broker_pid = pids[host.name]
        assert pid_of(host, "[Q]uorumPeerMain") != zookeeper_pid, host.name
        assert pid_of(host, "[k]afkactl.cluster.broker") != broker_pid, host.name

    assert poller.answered > 0 and poller.found == [], (poller.found, poller.unanswered[:3])
    assert unsent == 0 and producer.errors == [], producer.errors[:5]
    assert acked_during_roll > 100
    consumed = collections.Counter(consume_all(cluster, "rolling"))
    acknowledged = {f"value-{index}" for index in producer.acknowledged}
    missing = sorted(acknowledged - consumed.keys())
    duplicated = sorted(value for value in acknowledged if consumed[value] > 1)
    assert missing == [] and duplicated == [], (missing[:5], duplicated[:5])


# --- bad input


def test_an_unwritable_log_dir_fails_the_host_before_anything_starts(tmp_path, wheelhouse):
    cleanup_leftovers()
    with SshHosts(1, tmp_path / "hosts") as hosts:
        host = hosts.hosts[0]
        read_only = host.disks[1].path
        host.run(f"mount -o remount,ro {read_only}")
        inventory = write_inventory(tmp_path / "inventory.yml", hosts.hosts,
                                    hosts.write_known_hosts(tmp_path / "known_hosts"))
        run = run_playbook("site.yml", inventory, tmp_path, extra_vars={"kafkactl_wheelhouse": str(wheelhouse.path)})

        assert run.returncode != 0, run.tail
        assert f"host {host.name}: log dir {read_only} is not writable" in run.output, run.tail
        assert host.run("pgrep -f '[Q]uorumPeerMain|[k]afkactl.cluster'", check=False).stdout == ""
        assert host.run(f"ls -A {LAYOUT.install_root}").stdout == "", "something was installed"
