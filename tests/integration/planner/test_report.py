"""The report's figures on a tiny case worked out by hand, and the plan files."""

import json

import pytest

from kafkactl.cluster.admin.plan_file import parse_reassignment_plan
from kafkactl.planner import job, report
from kafkactl.planner.fixtures import GB, HDD, SSD, write_fixture
from kafkactl.planner.options import GOALS, PlannerOptions
from kafkactl.planner.snapshot import schema


def test_figures_moves_and_plan_files_by_hand(spark, fixture_snapshot, tmp_path):
    # full_disk: 4 brokers; logs-0..8 (10 GB, 1 MB/s in and out) on [1,2] (even) or [2,1] (odd), SSD dirs.
    fixture, snapshot, _ = fixture_snapshot("full_disk")
    rows = {p["partition"]: dict(p) for p in fixture.partitions}
    rows[0].update(replicas=[3, 4], leader=3, log_dirs=[SSD, HDD])      # two replica moves, new leader
    rows[1].update(replicas=[1, 3], leader=1, log_dirs=[SSD, SSD])      # one move, leader 2 -> 1
    rows[2].update(log_dirs=[HDD, SSD])                                 # broker 1: SSD -> HDD
    after_frame = spark.createDataFrame(list(rows.values()), schema("partitions"))
    before, after = report.evaluate_states([snapshot.partitions, after_frame], snapshot, PlannerOptions(),
                                           10_000_000)
    # one at a time gives the same figures
    assert report.evaluate(after_frame, snapshot, PlannerOptions(), 10_000_000) == after
    count = report.write_plan_files(after_frame, snapshot, tmp_path)

    # Before: SSDs of brokers 1 and 2 at 90 GB of 100, 3 and 4 empty; 9 replicas each on 1 and 2.
    assert before["resources"]["disk_utilization_ssd"] == pytest.approx(
        {"min": 0.0, "max": 0.9, "mean": 0.45, "std": 0.45, "max_mean": 2.0})
    assert before["resources"]["replica_count"] == {"min": 0.0, "max": 9.0, "mean": 4.5, "std": 4.5, "max_mean": 2.0}
    # Leaders 5 (even partitions), 4, 0, 0.
    assert before["resources"]["leader_count"] == pytest.approx(
        {"min": 0.0, "max": 5.0, "mean": 2.25, "std": (20.75 / 4) ** 0.5, "max_mean": 5 / 2.25})
    assert before["resources"]["network_in_utilization"]["max"] == pytest.approx(9e6 / 125e6)
    assert before["resources"]["disk_utilization_hdd"] == {"min": 0.0, "max": 0.0, "mean": 0.0, "std": 0.0,
                                                           "max_mean": None}
    assert before["violations"]["counts"] == {"log_dir_capacity": 2}
    assert before["moves"]["replica_moves"] == 0 and before["moves"]["estimated_duration_s"] == 0.0

    # After: logs-0 leaves 1 and 2, logs-1 leaves 2, logs-2 goes to broker 1's HDD; broker 3 takes
    # logs-0 and logs-1 on its SSD, broker 4 logs-0 on its HDD.
    ssd = {d["broker_id"]: d["used_bytes"] for d in after["log_dirs"] if d["path"] == SSD}
    hdd = {d["broker_id"]: d["used_bytes"] for d in after["log_dirs"] if d["path"] == HDD}
    assert (ssd, hdd) == ({1: 70 * GB, 2: 70 * GB, 3: 20 * GB, 4: 0}, {1: 10 * GB, 2: 0, 3: 0, 4: 10 * GB})
    assert after["moves"] == {"partitions_changed": 3, "replica_moves": 3, "bytes_moved": 30 * GB, "dir_moves": 1,
                              "dir_bytes_moved": 10 * GB, "leader_changes": 2,
                              # broker 1 sends logs-0 to 3 and 4 (20 GB); broker 3 receives 20 GB
                              "busiest_broker_bytes": 20 * GB, "estimated_duration_s": 2000.0}
    assert after["violations"]["counts"] == {}

    plan = (tmp_path / "plan.json").read_text()
    assert count == 3
    assert [(e.topic, e.partition, e.replicas, e.log_dirs) for e in parse_reassignment_plan(plan)] == [
        ("logs", 0, (3, 4), (SSD, HDD)), ("logs", 1, (1, 3), (SSD, SSD)), ("logs", 2, (1, 2), (HDD, SSD))]
    rollback = json.loads((tmp_path / "rollback.json").read_text())
    assert rollback == {"version": 1, "partitions": [
        {"topic": "logs", "partition": p, "replicas": r, "log_dirs": [SSD, SSD]}
        for p, r in ((0, [1, 2]), (1, [2, 1]), (2, [1, 2]))]}


def test_markdown_tables_and_the_chart(tmp_path):
    stats = {"min": 0.1, "max": 0.5, "mean": 0.25, "std": 0.1, "max_mean": 2.0}
    states = {"resources": {name: stats for name in report.RESOURCES}, "violations": {"total": 0, "counts": {},
                                                                                        "examples": []},
              "moves": {"partitions_changed": 1, "replica_moves": 2, "bytes_moved": 3 * GB, "dir_moves": 0,
                        "dir_bytes_moved": 0, "leader_changes": 1, "busiest_broker_bytes": 3 * GB,
                        "estimated_duration_s": 300.0},
              "brokers": [{"broker_id": b, "rack": None, **{k: 0.3 for k in report.BROKER_FIGURES},
                           "disk_utilization_ssd": 0.4, "disk_utilization_hdd": None} for b in range(1, 201)],
              "log_dirs": []}
    built = report.build("snap", PlannerOptions(throttle_bytes_per_s=10_000_000),
                         {"brokers": 200, "eligible_brokers": 200, "log_dirs": 0, "partitions": 1, "replicas": 2,
                          "replica_bytes": 2}, states, states, states,
                         {name: stats for name in report.RESOURCES}, {"rounds": 3}, {"optimize": 1.25})
    markdown = report.render_markdown(built)
    assert "| disk_utilization_ssd | after | 0.100 | 0.500 | 0.250 | 0.100 | 2.000 |" in markdown
    assert "| replica_count | lower_bound | 0.1 | 0.5 | 0.2 | 0.1 | 2.000 |" in markdown
    assert "| plan | 1 | 2 | 3.0 GB | 0 | 1 | 5 min |" in markdown
    report.plot_utilization(built, tmp_path / "utilization.png")
    assert (tmp_path / "utilization.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_goal_that_worsens_its_own_aim_is_detected_and_reported_as_a_bug(spark, stand_in, tmp_path):
    # the disk goal replaced by a stand-in that moves replicas onto the fullest dir that takes them
    write_fixture("decommission_one", tmp_path / "snap")
    options = job.build_options(exclude_brokers="5", goals="disk")
    result = job.run(spark, tmp_path / "snap", tmp_path / "out", options, stand_in.worsening)
    disk = result["optimizer"]["goals"][1]
    assert disk["goal"] == "disk" and disk["moves"] > 0
    worsened = {f["name"] for f in disk["at_start"]} & {w.split(":")[0] for w in disk["worsened"]}
    assert worsened, disk
    for name in worsened:
        start = next(f["value"] for f in disk["at_start"] if f["name"] == name)
        end = next(f["value"] for f in disk["at_end"] if f["name"] == name)
        assert end > start
    assert result["optimizer"]["bugs"] == [f"goal disk ended worse than it started: {w}" for w in disk["worsened"]]
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert "**BUG in the optimizer" in markdown and f"- **{result['optimizer']['bugs'][0]}**" in markdown
    # the real disk goal on the same snapshot: no bug
    clean = job.run(spark, tmp_path / "snap", tmp_path / "clean", options)
    assert clean["optimizer"]["bugs"] == [] and clean["optimizer"]["goals"][1]["worsened"] == []


@pytest.fixture(scope="module")
def unequal(spark, tmp_path_factory):
    """The job on unequal_racks (racks of 5, 4 and 3 brokers, RF 3): (report, report.md)."""
    directory = tmp_path_factory.mktemp("unequal")
    write_fixture("unequal_racks", directory / "snap")
    result = job.run(spark, directory / "snap", directory / "out", job.build_options())
    return result, (directory / "out" / "report.md").read_text()


def test_each_goal_says_met_or_not_and_what_held_it_back(unequal):
    result, markdown = unequal
    goals = {g["goal"]: g for g in result["optimizer"]["goals"]}
    assert list(goals) == ["repair", *GOALS] and [g["priority"] for g in goals.values()] == list(range(6))
    assert goals["repair"]["met"] and goals["repair"]["figures"][0]["value"] == 0
    # rack r3's 3 brokers hold a replica of each of the 30 partitions: 10 each where the count limit is 8
    counts = goals["counts"]
    replicas = counts["figures"][0]
    assert (replicas["name"], replicas["value"], replicas["target"], replicas["met"]) == (
        "most replicas on a broker", 10, 8, False)
    assert not counts["met"]
    assert counts["held_back"][0] == ("hard constraints: no assignment meets the target of most replicas on a "
                                      "broker (8); the lower bound is 10 (held up by rack spread, whole counts)")
    assert any(reason.startswith("a hard constraint (rack spread)") for reason in counts["held_back"])
    disk = goals["disk"]
    assert disk["figures"][0]["value"] == pytest.approx(4 / 3) and not disk["met"]
    assert "the lower bound is 1.333 (held up by rack spread)" in disk["held_back"][0]
    assert "| 4 | counts | **no** | most replicas on a broker | 10 | 10 | 10 | 8 |" in markdown
    assert f"- counts: {counts['held_back'][0]}" in markdown


def test_the_plan_reaches_the_bound_where_racks_pin_the_bytes(unequal):
    result, markdown = unequal
    gaps = result["against_lower_bound"]
    for resource in ("log_dir_utilization_ssd", "disk_utilization_ssd", "replica_count", "network_in_utilization"):
        assert gaps[resource]["ratio"] == pytest.approx(1.0, abs=1e-5), resource
        assert gaps[resource]["bound_max_mean"] == pytest.approx(4 / 3, rel=1e-5)
        assert "rack spread" in gaps[resource]["limited_by"]
    assert "| log_dir_utilization_ssd | 0.100 | 0.100 | 1.000 | 1.333 | rack spread |" in markdown
