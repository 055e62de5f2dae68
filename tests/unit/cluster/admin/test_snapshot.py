"""Snapshots from scraped metrics: reading a broker's page, building the rows,
the rules every written snapshot meets, capacities, and all-or-nothing writes."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from types import SimpleNamespace

import pytest

from kafkactl.cluster.admin.snapshot import (
    BrokerMetrics,
    CapacityFileError,
    Capacities,
    DirMetrics,
    ReplicaMetrics,
    Snapshot,
    SnapshotError,
    build_snapshot,
    load_capacity_file,
    parse_capacities,
    parse_metrics,
    scrape_brokers,
    validate_snapshot,
    write_snapshot,
)
from kafkactl.cluster.admin.topics import PartitionInfo
from kafkactl.cluster.broker.metrics import PartitionMeters, RequestMetrics, render_page

CAPACITIES = Capacities(125_000_000, 250_000_000)


def registration(broker_id, rack=None, host="h"):
    return SimpleNamespace(broker_id=broker_id, rack=rack, host=host)


def info(topic, partition, replicas, leader=None):
    return PartitionInfo(topic, partition, list(replicas), replicas[0] if leader is None else leader, 0,
                         list(replicas))


def broker_metrics(broker_id, replicas: dict, dirs=(("/ssd", "ssd", 1000, 0), ("/hdd", "hdd", 5000, 0))):
    """replicas: {(topic, partition): (size, dir, in rate, out rate)}."""
    metrics = BrokerMetrics(broker_id)
    for path, media, capacity, used in dirs:
        metrics.dirs[path] = DirMetrics(path, media, capacity, used)
    for key, (size, path, rate_in, rate_out) in replicas.items():
        metrics.replicas[key] = ReplicaMetrics(size, path, rate_in, rate_out)
    return metrics


# --- reading a broker's page --------------------------------------------------------------

def test_a_brokers_page_is_read_back():
    clock = SimpleNamespace(now_s=0.0)
    meters = PartitionMeters(lambda: clock.now_s)
    meters.add_bytes_in("t", 0, 5000)
    meters.add_bytes_out("t", 0, 15000)
    clock.now_s = 5.0
    meters.tick()
    log = lambda size: SimpleNamespace(size_bytes=size, log_end_offset=1, log_start_offset=0)
    partitions = [SimpleNamespace(topic="t", index=0, log=log(700), is_leader=True, isr=(1,), replicas=(1,)),
                  SimpleNamespace(topic="t", index=1, log=log(300), is_leader=False, isr=(1,), replicas=(1,))]
    weird = '/data/"x"\\y'
    dirs = [SimpleNamespace(path="/ssd", media="ssd"), SimpleNamespace(path=weird, media="hdd")]
    page = render_page(1, "r1", partitions, dirs, lambda t, i: "/ssd" if i == 0 else weird, meters,
                       RequestMetrics(), lambda path: SimpleNamespace(f_blocks=10, f_frsize=100, f_bavail=5))

    metrics = parse_metrics(1, page)

    assert metrics.dirs == {"/ssd": DirMetrics("/ssd", "ssd", 1000, 700), weird: DirMetrics(weird, "hdd", 1000, 300)}
    assert metrics.replicas[("t", 0)] == ReplicaMetrics(700, "/ssd", 1000.0, 3000.0)
    assert metrics.replicas[("t", 1)] == ReplicaMetrics(300, weird, 0.0, 0.0)


def test_an_unreadable_page_names_the_broker():
    with pytest.raises(SnapshotError, match="broker 3: metrics line lacks 'log_dir'"):
        parse_metrics(3, 'kafka_log_size_bytes{topic="t",partition="0"} 5\n')
    with pytest.raises(SnapshotError, match="broker 3: not a number"):
        parse_metrics(3, 'kafka_log_size_bytes{topic="t",partition="0",log_dir="/d"} five\n')


def test_brokers_that_do_not_answer_are_all_named():
    def fetch(url, timeout_s):
        if "b2" in url or "b3" in url:
            raise OSError("connection refused")
        return ""

    with pytest.raises(SnapshotError) as error:
        scrape_brokers({1: "http://b1/metrics", 2: "http://b2/metrics", 3: "http://b3/metrics"}, 1, fetch)
    assert "broker 2 (http://b2/metrics): connection refused" in str(error.value)
    assert "broker 3 (http://b3/metrics)" in str(error.value) and "broker 1" not in str(error.value)


def test_scrapes_are_passed_the_timeout():
    seen = []
    scrape_brokers({1: "http://b1/metrics"}, 2.5, lambda url, timeout_s: seen.append(timeout_s) or "")
    assert seen == [2.5]


# --- building -------------------------------------------------------------------------------

def three_brokers():
    brokers = [registration(1, "r1"), registration(2, "r2"), registration(3, None)]
    metrics = {
        1: broker_metrics(1, {("t", 0): (900, "/ssd", 10.0, 30.0), ("t", 1): (400, "/hdd", 0.0, 0.0)}),
        2: broker_metrics(2, {("t", 0): (1000, "/hdd", 0.0, 0.0), ("t", 1): (500, "/ssd", 7.5, 2.25)}),
        3: broker_metrics(3, {}),
    }
    partitions = [info("t", 1, [2, 1]), info("t", 0, [1, 2])]
    return brokers, partitions, metrics


def test_rows_follow_the_assignment_with_the_leaders_rates_and_the_largest_size():
    brokers, partitions, metrics = three_brokers()
    snapshot = build_snapshot(brokers, partitions, metrics, CAPACITIES)
    assert snapshot.partitions == [
        {"topic": "t", "partition": 0, "replicas": [1, 2], "leader": 1, "log_dirs": ["/ssd", "/hdd"],
         "size_bytes": 1000, "bytes_in_per_s": 10.0, "bytes_out_per_s": 30.0},
        {"topic": "t", "partition": 1, "replicas": [2, 1], "leader": 2, "log_dirs": ["/ssd", "/hdd"],
         "size_bytes": 500, "bytes_in_per_s": 7.5, "bytes_out_per_s": 2.25},
    ]
    assert snapshot.brokers == [
        {"broker_id": 1, "rack": "r1", "network_in_capacity_bytes_per_s": 125_000_000,
         "network_out_capacity_bytes_per_s": 250_000_000},
        {"broker_id": 2, "rack": "r2", "network_in_capacity_bytes_per_s": 125_000_000,
         "network_out_capacity_bytes_per_s": 250_000_000},
        {"broker_id": 3, "rack": None, "network_in_capacity_bytes_per_s": 125_000_000,
         "network_out_capacity_bytes_per_s": 250_000_000},
    ]
    assert snapshot.log_dirs[:2] == [
        {"broker_id": 1, "path": "/hdd", "media": "hdd", "capacity_bytes": 5000, "used_bytes": 0},
        {"broker_id": 1, "path": "/ssd", "media": "ssd", "capacity_bytes": 1000, "used_bytes": 0}]
    assert len(snapshot.log_dirs) == 6   # broker 3 holds nothing yet: its dirs are still there to fill
    validate_snapshot(snapshot)


def test_the_leader_is_not_always_the_first_replica():
    brokers, _, metrics = three_brokers()
    [row] = build_snapshot(brokers, [info("t", 0, [1, 2], leader=2)], metrics, CAPACITIES).partitions
    assert row["leader"] == 2 and row["bytes_in_per_s"] == 0.0


def test_a_replica_on_a_broker_that_is_down_is_refused():
    brokers, partitions, metrics = three_brokers()
    with pytest.raises(SnapshotError, match="t-0: replica on broker 4, which is not registered"):
        build_snapshot(brokers, [info("t", 0, [1, 4])], metrics, CAPACITIES)


def test_a_replica_whose_broker_reports_no_log_is_refused():
    brokers, _, metrics = three_brokers()
    with pytest.raises(SnapshotError, match="t-0: broker 3 reports no log for it"):
        build_snapshot(brokers, [info("t", 0, [1, 3])], metrics, CAPACITIES)


def test_a_partition_without_a_leader_is_refused():
    brokers, _, metrics = three_brokers()
    with pytest.raises(SnapshotError, match="t-0 has no leader"):
        build_snapshot(brokers, [info("t", 0, [1, 2], leader=-1)], metrics, CAPACITIES)


# --- capacities -----------------------------------------------------------------------------

def test_a_brokers_own_capacity_beats_the_option_which_beats_the_files_default():
    capacities = parse_capacities({
        "default": {"network_in_capacity_bytes_per_s": 1, "network_out_capacity_bytes_per_s": 2},
        "brokers": {"2": {"network_in_capacity_bytes_per_s": 20,
                          "log_dirs": {"/ssd": {"capacity_bytes": 777}}}},
    }, "c.json", network_in_bytes_per_s=10)
    brokers, partitions, metrics = three_brokers()
    snapshot = build_snapshot(brokers, partitions, metrics, capacities)
    network = {b["broker_id"]: (b["network_in_capacity_bytes_per_s"], b["network_out_capacity_bytes_per_s"])
               for b in snapshot.brokers}
    assert network == {1: (10, 2), 2: (20, 2), 3: (10, 2)}
    capacity = {(d["broker_id"], d["path"]): d["capacity_bytes"] for d in snapshot.log_dirs}
    assert capacity[(2, "/ssd")] == 777 and capacity[(1, "/ssd")] == 1000


def test_a_missing_network_capacity_names_the_option():
    brokers, partitions, metrics = three_brokers()
    with pytest.raises(CapacityFileError, match="no network_out_capacity_bytes_per_s for broker 1: "
                                                "pass --network-out-capacity"):
        build_snapshot(brokers, partitions, metrics, Capacities(100, None))


def test_a_dir_capacity_for_a_dir_the_broker_lacks_is_refused():
    brokers, partitions, metrics = three_brokers()
    capacities = parse_capacities({"brokers": {"1": {"log_dirs": {"/typo": {"capacity_bytes": 5}}}}}, "c.json",
                                  1, 1)
    with pytest.raises(CapacityFileError, match="/typo on broker 1"):
        build_snapshot(brokers, partitions, metrics, capacities)


@pytest.mark.parametrize("data, message", [
    ([], r"\(top level\): expected an object"),
    ({"defaults": {}}, "unknown key 'defaults'"),
    ({"default": {"network_in_capacity_bytes_per_s": -5}}, r"default.network_in_capacity_bytes_per_s: expected a whole"),
    ({"default": {"network_in_capacity_bytes_per_s": 1.5}}, "not 1.5"),
    ({"default": {"network_in_capacity_bytes_per_s": True}}, "not True"),
    ({"default": {"nw_in": 5}}, "default: unknown key 'nw_in'"),
    ({"brokers": {"one": {}}}, "brokers.one: a broker id must be a number"),
    ({"brokers": {"1": {"log_dirs": {"/d": {}}}}}, "brokers.1.log_dirs./d: capacity_bytes is missing"),
    ({"brokers": {"1": {"log_dirs": {"/d": {"capacity_bytes": 0}}}}}, "capacity_bytes: expected a whole"),
])
def test_a_bad_capacity_file_is_refused_naming_the_field(data, message):
    with pytest.raises(CapacityFileError, match=message):
        parse_capacities(data, "c.json")


def test_capacity_files_are_read_from_disk(tmp_path):
    path = tmp_path / "capacity.json"
    path.write_text(json.dumps({"default": {"network_in_capacity_bytes_per_s": 3}}))
    assert load_capacity_file(path).network(1, "network_in_capacity_bytes_per_s") == 3
    path.write_text("{not json")
    with pytest.raises(CapacityFileError, match="is not JSON"):
        load_capacity_file(path)
    with pytest.raises(CapacityFileError, match="cannot read capacity file"):
        load_capacity_file(tmp_path / "missing.json")


# --- the rules every written snapshot meets ----------------------------------------------------

def valid() -> Snapshot:
    brokers, partitions, metrics = three_brokers()
    return build_snapshot(brokers, partitions, metrics, CAPACITIES)


def changed(file: str, line: int, **fields) -> Snapshot:
    snapshot = valid()
    rows = {"brokers": snapshot.brokers, "log_dirs": snapshot.log_dirs, "partitions": snapshot.partitions}[file]
    for key, value in fields.items():
        if value is ...:
            del rows[line - 1][key]
        else:
            rows[line - 1][key] = value
    return snapshot


@pytest.mark.parametrize("snapshot, message", [
    (lambda: changed("brokers", 2, rack=...), "brokers.jsonl line 2: rack: missing"),
    (lambda: changed("brokers", 1, broker_id="1"), "brokers.jsonl line 1: broker_id: expected int"),
    (lambda: changed("brokers", 3, broker_id=2), "brokers.jsonl line 3: broker_id: broker 2 appears twice"),
    (lambda: changed("brokers", 1, network_in_capacity_bytes_per_s=0), "network_in_capacity_bytes_per_s: must be > 0"),
    (lambda: changed("log_dirs", 1, broker_id=9), "log_dirs.jsonl line 1: broker_id: broker 9 is not in brokers.jsonl"),
    (lambda: changed("log_dirs", 2, media="nvme"), "log_dirs.jsonl line 2: media: expected ssd or hdd"),
    (lambda: changed("log_dirs", 2, path="/hdd"), "log_dirs.jsonl line 2: path: /hdd appears twice"),
    (lambda: changed("log_dirs", 1, used_bytes=-1), "log_dirs.jsonl line 1: used_bytes: must not be negative"),
    (lambda: changed("log_dirs", 1, extra=1), "log_dirs.jsonl line 1: extra: unknown field"),
    (lambda: changed("partitions", 1, size_bytes=-5), "partitions.jsonl line 1: size_bytes: must not be negative"),
    (lambda: changed("partitions", 1, bytes_in_per_s=float("nan")), "bytes_in_per_s: expected number"),
    (lambda: changed("partitions", 2, replicas=[2, 7]), "partitions.jsonl line 2: replicas: broker 7 is not in"),
    (lambda: changed("partitions", 2, replicas=[2, 2]), "replicas: a broker appears twice"),
    (lambda: changed("partitions", 2, replicas=[]), "replicas: expected ints"),
    (lambda: changed("partitions", 1, leader=3), "partitions.jsonl line 1: leader: 3 is not one of the replicas"),
    (lambda: changed("partitions", 1, log_dirs=["/ssd"]), "log_dirs: 1 dirs for 2 replicas"),
    (lambda: changed("partitions", 1, log_dirs=["/ssd", "/nvme"]),
     r"log_dirs\[1\]: /nvme is not a log dir of broker 2"),
    (lambda: changed("partitions", 2, partition=0), "partitions.jsonl line 2: partition: t-0 appears twice"),
    (lambda: changed("partitions", 1, topic=...), "partitions.jsonl line 1: topic: missing"),
    (lambda: replace(valid(), reassigning_partitions=3), "snapshot.json: reassigning_partitions: expected 0 to 2, not 3"),
])
def test_bad_rows_are_refused_naming_file_line_and_field(snapshot, message, tmp_path):
    with pytest.raises(SnapshotError, match=message):
        write_snapshot(snapshot(), tmp_path / "out")
    assert os.listdir(tmp_path) == []   # nothing written, not even a temporary dir


# --- writing --------------------------------------------------------------------------------

def read_jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_three_files_are_written_one_row_a_line_with_the_metadata_file(tmp_path):
    snapshot = valid()
    out = write_snapshot(snapshot, tmp_path / "deep" / "snap")
    assert out == tmp_path / "deep" / "snap"
    assert sorted(os.listdir(out)) == ["brokers.jsonl", "log_dirs.jsonl", "partitions.jsonl", "snapshot.json"]
    assert json.loads((out / "snapshot.json").read_text()) == {"reassigning_partitions": 0}
    assert read_jsonl(out / "partitions.jsonl") == snapshot.partitions
    assert read_jsonl(out / "brokers.jsonl") == snapshot.brokers
    assert read_jsonl(out / "log_dirs.jsonl") == snapshot.log_dirs
    assert os.listdir(tmp_path / "deep") == ["snap"]


def test_an_empty_out_dir_is_used_and_a_non_empty_one_refused(tmp_path):
    (tmp_path / "empty").mkdir()
    write_snapshot(valid(), tmp_path / "empty")
    assert (tmp_path / "empty" / "brokers.jsonl").exists()
    with pytest.raises(SnapshotError, match="exists and is not an empty directory"):
        write_snapshot(valid(), tmp_path / "empty")
    (tmp_path / "file").write_text("x")
    with pytest.raises(SnapshotError, match="exists"):
        write_snapshot(valid(), tmp_path / "file")


def test_a_failed_write_leaves_nothing_behind(tmp_path, monkeypatch):
    from kafkactl.cluster.admin import snapshot as module

    calls = []

    def failing(path, rows):
        calls.append(path.name)
        if len(calls) == 2:
            raise OSError("disk full")
        real(path, rows)

    real = module._write_rows
    monkeypatch.setattr(module, "_write_rows", failing)
    with pytest.raises(OSError, match="disk full"):
        write_snapshot(valid(), tmp_path / "out")
    assert os.listdir(tmp_path) == []
