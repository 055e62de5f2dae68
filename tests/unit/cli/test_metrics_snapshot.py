"""`kafkactl metrics snapshot` against the in-memory ZooKeeper and real HTTP
metrics servers (in this process) serving pages built by the broker's own
page builder: arguments, endpoint resolution, output and refusals."""

from __future__ import annotations

import json
import os
import socket
from types import SimpleNamespace

import pytest

from kafkactl.cli.main import main
from kafkactl.cluster.broker.metrics import MetricsServer, PartitionMeters, RequestMetrics, render_page
from kafkactl.cluster.local import state
from kafkactl.cluster.zk import codecs

CAPACITY_OPTIONS = ["--network-in-capacity", "1000000", "--network-out-capacity", "2000000"]


def register(zookeeper, broker_id, rack=None, host="127.0.0.1"):
    registration = codecs.BrokerRegistration(broker_id, host, 9000 + broker_id,
                                             (f"PLAINTEXT://{host}:{9000 + broker_id}",), rack)
    zookeeper.create(f"/brokers/ids/{broker_id}", codecs.encode_broker(registration), makepath=True)


def topic(zookeeper, name, assignment: dict[int, list[int]], leaders: dict[int, int] | None = None):
    zookeeper.create(f"/brokers/topics/{name}", codecs.encode_topic(codecs.TopicAssignment(assignment, None)),
                     makepath=True)
    for partition, replicas in assignment.items():
        leader = (leaders or {}).get(partition, replicas[0])
        zookeeper.create(f"/brokers/topics/{name}/partitions/{partition}/state",
                         codecs.encode_partition_state(codecs.PartitionState(leader, 3, replicas, 1)),
                         makepath=True)


class FakeBroker:
    """What a broker's page is built from: hosted replicas with sizes and dirs, and rates."""

    def __init__(self, broker_id: int, dirs=(("/ssd0", "ssd"), ("/hdd0", "hdd"))) -> None:
        self.broker_id = broker_id
        self.dirs = [SimpleNamespace(path=p, media=m) for p, m in dirs]
        self.replicas: dict[tuple[str, int], tuple[int, str]] = {}
        self.now_s = 0.0
        self.meters = PartitionMeters(lambda: self.now_s)

    def host(self, topic_name, partition, size_bytes, log_dir="/ssd0", bytes_in=0):
        self.replicas[(topic_name, partition)] = (size_bytes, log_dir)
        if bytes_in:
            self.meters.add_bytes_in(topic_name, partition, bytes_in)

    def render(self) -> str:
        self.now_s += 10
        self.meters.tick()
        partitions = [SimpleNamespace(topic=t, index=p, log=SimpleNamespace(size_bytes=size, log_end_offset=1,
                                                                            log_start_offset=0),
                                      is_leader=True, isr=(1,), replicas=(1,))
                      for (t, p), (size, _) in self.replicas.items()]
        return render_page(self.broker_id, None, partitions, self.dirs,
                           lambda t, p: self.replicas[(t, p)][1], self.meters, RequestMetrics(),
                           lambda path: SimpleNamespace(f_blocks=100, f_frsize=1000, f_bavail=50))


@pytest.fixture
def http_brokers():
    servers = []

    def serve(*brokers: FakeBroker) -> dict[int, int]:
        ports = {}
        for broker in brokers:
            server = MetricsServer("127.0.0.1", 0, broker.render, poll_interval_s=0.05)
            server.start()
            servers.append(server)
            ports[broker.broker_id] = server.port
        return ports

    yield serve
    for server in servers:
        server.stop()


def endpoints(ports: dict[int, int]) -> str:
    return ",".join(f"{b}=127.0.0.1:{p}" for b, p in sorted(ports.items()))


def jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def two_brokers(fake_zookeeper, http_brokers):
    register(fake_zookeeper, 1, "r1")
    register(fake_zookeeper, 2, "r2")
    topic(fake_zookeeper, "t", {0: [1, 2], 1: [2, 1]}, leaders={1: 1})
    one, two = FakeBroker(1), FakeBroker(2)
    one.host("t", 0, 5000, "/ssd0", bytes_in=100_000)
    one.host("t", 1, 4000, "/hdd0")
    two.host("t", 0, 4990, "/hdd0")
    two.host("t", 1, 4100, "/ssd0", bytes_in=999)
    return http_brokers(one, two)


def test_a_snapshot_is_written_from_zookeeper_and_the_brokers_metrics(two_brokers, tmp_path, capsys):
    out = tmp_path / "snap"
    code = main(["metrics", "snapshot", "--out", str(out), "--metrics-endpoints", endpoints(two_brokers),
                 *CAPACITY_OPTIONS, "-o", "json"])
    assert code == 0, capsys.readouterr().err
    summary = json.loads(capsys.readouterr().out)
    assert summary["out"] == str(out) and (summary["brokers"], summary["log_dirs"], summary["partitions"]) == (2, 4, 2)
    assert jsonl(out / "brokers.jsonl") == [
        {"broker_id": 1, "rack": "r1", "network_in_capacity_bytes_per_s": 1000000,
         "network_out_capacity_bytes_per_s": 2000000},
        {"broker_id": 2, "rack": "r2", "network_in_capacity_bytes_per_s": 1000000,
         "network_out_capacity_bytes_per_s": 2000000}]
    assert jsonl(out / "log_dirs.jsonl")[:2] == [
        {"broker_id": 1, "path": "/hdd0", "media": "hdd", "capacity_bytes": 100000, "used_bytes": 4000},
        {"broker_id": 1, "path": "/ssd0", "media": "ssd", "capacity_bytes": 100000, "used_bytes": 5000}]
    partitions = jsonl(out / "partitions.jsonl")
    assert [(p["topic"], p["partition"], p["replicas"], p["leader"], p["log_dirs"], p["size_bytes"])
            for p in partitions] == [("t", 0, [1, 2], 1, ["/ssd0", "/hdd0"], 5000),
                                     ("t", 1, [2, 1], 1, ["/ssd0", "/hdd0"], 4100)]
    assert partitions[0]["bytes_in_per_s"] == pytest.approx(10_000)   # 100,000 B over the first 10 s tick
    assert partitions[1]["bytes_in_per_s"] == 0.0   # broker 2's rate: it is not the leader


def test_the_table_output_says_what_was_written(two_brokers, tmp_path, capsys):
    assert main(["metrics", "snapshot", "--out", str(tmp_path / "s"), "--metrics-endpoints",
                 endpoints(two_brokers), *CAPACITY_OPTIONS]) == 0
    assert capsys.readouterr().out == f"wrote a snapshot of 2 brokers, 4 log dirs and 2 partitions to {tmp_path / 's'}\n"


def test_a_broker_that_does_not_answer_fails_the_run_and_nothing_is_written(two_brokers, tmp_path, capsys):
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        dead_port = unused.getsockname()[1]
    ports = {1: two_brokers[1], 2: dead_port}
    assert main(["metrics", "snapshot", "--out", str(tmp_path / "snap"), "--metrics-endpoints",
                 endpoints(ports), *CAPACITY_OPTIONS]) == 1
    err = capsys.readouterr().err
    assert f"broker 2 (http://127.0.0.1:{dead_port}/metrics)" in err and "no snapshot written" in err
    assert len(err.strip().splitlines()) == 1
    assert os.listdir(tmp_path) == []


def test_topics_queued_for_deletion_are_left_out(fake_zookeeper, two_brokers, tmp_path, capsys):
    topic(fake_zookeeper, "going", {0: [1, 2]})   # its logs are already gone from the brokers
    fake_zookeeper.create("/admin/delete_topics/going", b"", makepath=True)
    assert main(["metrics", "snapshot", "--out", str(tmp_path / "s"), "--metrics-endpoints",
                 endpoints(two_brokers), *CAPACITY_OPTIONS]) == 0
    assert {p["topic"] for p in jsonl(tmp_path / "s" / "partitions.jsonl")} == {"t"}


def test_a_replica_on_a_broker_that_is_down_is_refused(fake_zookeeper, two_brokers, tmp_path, capsys):
    topic(fake_zookeeper, "u", {0: [1, 3]})
    assert main(["metrics", "snapshot", "--out", str(tmp_path / "s"), "--metrics-endpoints",
                 endpoints(two_brokers), *CAPACITY_OPTIONS]) == 1
    assert "u-0: replica on broker 3, which is not registered" in capsys.readouterr().err
    assert os.listdir(tmp_path) == []


def test_the_capacity_file_gives_per_broker_network_and_dir_capacities(two_brokers, tmp_path, capsys):
    capacity = tmp_path / "capacity.json"
    capacity.write_text(json.dumps({
        "default": {"network_in_capacity_bytes_per_s": 50, "network_out_capacity_bytes_per_s": 60},
        "brokers": {"2": {"network_out_capacity_bytes_per_s": 600,
                          "log_dirs": {"/hdd0": {"capacity_bytes": 123456}}}}}))
    assert main(["metrics", "snapshot", "--out", str(tmp_path / "s"), "--metrics-endpoints",
                 endpoints(two_brokers), "--capacity-file", str(capacity)]) == 0
    brokers = jsonl(tmp_path / "s" / "brokers.jsonl")
    assert [(b["network_in_capacity_bytes_per_s"], b["network_out_capacity_bytes_per_s"]) for b in brokers] == \
        [(50, 60), (50, 600)]
    dirs = {(d["broker_id"], d["path"]): d["capacity_bytes"] for d in jsonl(tmp_path / "s" / "log_dirs.jsonl")}
    assert dirs[(2, "/hdd0")] == 123456 and dirs[(1, "/hdd0")] == 100000


@pytest.mark.parametrize("args, message", [
    (["--network-out-capacity", "5"], "--network-in-capacity: a network capacity is needed"),
    (["--network-in-capacity", "5"], "--network-out-capacity: a network capacity is needed"),
    ([*CAPACITY_OPTIONS, "--metrics-endpoints", "1=nohost"], "--metrics-endpoints: '1=nohost': expected"),
    ([*CAPACITY_OPTIONS, "--metrics-endpoints", "x=h:1"], "expected BROKER_ID=HOST:PORT"),
    ([*CAPACITY_OPTIONS, "--metrics-endpoints", "1=h:99999"], "expected BROKER_ID=HOST:PORT"),
    ([*CAPACITY_OPTIONS, "--metrics-endpoints", "1=127.0.0.1:1"], "no metrics endpoint for broker 2: pass --metrics-port"),
    (["--capacity-file", "/nonexistent/c.json"], "--capacity-file: cannot read capacity file"),
])
def test_bad_usage_is_refused_with_exit_2(two_brokers, tmp_path, capsys, args, message):
    assert main(["metrics", "snapshot", "--out", str(tmp_path / "s"), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert os.listdir(tmp_path) == []


def test_a_capacity_file_lacking_a_brokers_capacity_is_a_usage_error(two_brokers, tmp_path, capsys):
    capacity = tmp_path / "capacity.json"
    capacity.write_text(json.dumps({"brokers": {"1": {"network_in_capacity_bytes_per_s": 5,
                                                      "network_out_capacity_bytes_per_s": 5}}}))
    assert main(["metrics", "snapshot", "--out", str(tmp_path / "s"), "--capacity-file", str(capacity),
                 "--metrics-endpoints", endpoints(two_brokers)]) == 2
    assert "no network_in_capacity_bytes_per_s for broker 2" in capsys.readouterr().err
    assert not (tmp_path / "s").exists()


def test_metrics_port_is_used_on_each_brokers_registered_host(fake_zookeeper, http_brokers, tmp_path, capsys):
    register(fake_zookeeper, 1, host="127.0.0.1")
    topic(fake_zookeeper, "t", {0: [1]})
    broker = FakeBroker(1)
    broker.host("t", 0, 10)
    ports = http_brokers(broker)
    assert main(["metrics", "snapshot", "--out", str(tmp_path / "s"), "--metrics-port", str(ports[1]),
                 *CAPACITY_OPTIONS, "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["metrics_endpoints"] == {"1": f"http://127.0.0.1:{ports[1]}/metrics"}


def local_cluster_context(tmp_path, two_brokers, zookeeper):
    """A local cluster dir whose brokers 1 and 2 serve metrics on the given
    ports, made the current context's cluster for `zookeeper`."""
    cluster_dir = tmp_path / "cluster"
    cluster_dir.mkdir()
    spec = state.new_spec(state.Layout(cluster_dir), "127.0.0.1", 2, [1, 2, 3], {},
                          metrics_ports=[two_brokers[1], two_brokers[2]])
    state.save(state.Layout(cluster_dir), spec)
    config = {"current_context": "local", "contexts": {"local": {"zookeeper": zookeeper,
                                                                  "cluster_dir": str(cluster_dir)}}}
    config_path = tmp_path / "home" / "config.json"
    config_path.parent.mkdir(parents=True)
    config_path.write_text(json.dumps(config))


def test_the_local_cluster_of_the_current_context_gives_the_metrics_ports(
        fake_zookeeper, two_brokers, tmp_path, capsys):
    local_cluster_context(tmp_path, two_brokers, "fake:2181")
    assert main(["metrics", "snapshot", "--out", str(tmp_path / "s"), *CAPACITY_OPTIONS, "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["metrics_endpoints"] == {
        "1": f"http://127.0.0.1:{two_brokers[1]}/metrics", "2": f"http://127.0.0.1:{two_brokers[2]}/metrics"}


def test_a_context_for_another_zookeeper_is_not_taken_for_the_cluster(
        fake_zookeeper, two_brokers, tmp_path, capsys):
    local_cluster_context(tmp_path, two_brokers, "elsewhere:2181")
    assert main(["metrics", "snapshot", "--out", str(tmp_path / "s"), *CAPACITY_OPTIONS]) == 2
    assert "no metrics endpoint for broker 1" in capsys.readouterr().err


def test_an_out_dir_that_is_not_empty_is_a_usage_error_as_for_plan(two_brokers, tmp_path, capsys):
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "keep.txt").write_text("mine")
    assert main(["metrics", "snapshot", "--out", str(taken), *CAPACITY_OPTIONS,
                 "--metrics-endpoints", endpoints(two_brokers)]) == 2
    assert capsys.readouterr().err.strip() == \
        f"kafkactl: error: --out {taken}: exists and is not an empty directory; give a new one"
    assert os.listdir(taken) == ["keep.txt"]
