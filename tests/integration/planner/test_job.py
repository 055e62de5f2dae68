"""The job end to end on each named fixture, with the real optimizer. A
TEST-ONLY stand-in optimizer (stand_in_optimizer.py, the `stand_in` fixture)
is passed in explicitly only where a test needs a proposal the real one would
never make (one that breaks a hard constraint) or only checks option handling.
Same input, same plan: test_optimizer.py::test_same_input_same_plan (the
optimizer) and test_report.py (plan files written in a fixed order)."""

import json

import pytest

from support.waiting import wait_for

from kafkactl.cluster.admin.plan_file import parse_reassignment_plan
from kafkactl.planner import job
from kafkactl.planner.fixtures import FIXTURES, write_fixture

OUTPUTS = ["plan.json", "report.json", "report.md", "rollback.json", "utilization.png"]


def options_for(fixture, **extra):
    names = [a.lstrip("-").replace("-", "_") for a in fixture.args[::2]]
    return job.build_options(**dict(zip(names, fixture.args[1::2])), **extra)


@pytest.mark.parametrize("name", [n for n in FIXTURES if FIXTURES[n]().feasible])
def test_a_feasible_fixture_gets_a_plan_that_meets_every_hard_constraint(spark, tmp_path, name):
    fixture = write_fixture(name, tmp_path / "snap")
    result = job.run(spark, tmp_path / "snap", tmp_path / "out", options_for(fixture, throttle=50_000_000))
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == OUTPUTS
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "snap"]  # no temporary dir left
    on_disk = json.loads((tmp_path / "out" / "report.json").read_text())
    assert on_disk["violations"]["after"] == {"total": 0, "counts": {}, "examples": []}
    assert on_disk["resources"] == result["resources"]
    entries = parse_reassignment_plan((tmp_path / "out" / "plan.json").read_text())
    assert len(entries) == result["plan_partitions"] == result["moves"]["after"]["partitions_changed"]
    after = {b["broker_id"]: b["after"]["replica_count"] for b in on_disk["brokers"]}
    for broker in (5, 6) if "--add-brokers" in fixture.args else ():
        assert after[broker] > 0
    for broker in (5,) if "--exclude-brokers" in fixture.args else ():
        assert after[broker] == 0 and on_disk["violations"]["before"]["counts"]["excluded_broker"] == 1
    assert "| replica_count | lower_bound |" in (tmp_path / "out" / "report.md").read_text()
    goals = on_disk["optimizer"]["goals"]
    assert [g["goal"] for g in goals] == ["repair", *job.GOALS] and on_disk["optimizer"]["bugs"] == []
    assert all(g["met"] == all(f["met"] for f in g["figures"]) and (g["met"] or g["held_back"]) for g in goals)
    assert "## Goals" in (tmp_path / "out" / "report.md").read_text()
    # the bound holds: no plan does better
    for resource, gap in on_disk["against_lower_bound"].items():
        assert gap["ratio"] is None or gap["ratio"] >= 1 - 1e-6, (resource, gap)


def test_an_unsatisfiable_rack_constraint_says_why_and_writes_nothing(spark, tmp_path):
    write_fixture("rack_constraint_unsatisfiable", tmp_path / "snap")
    with pytest.raises(job.PlanUnsatisfiable) as raised:
        job.run(spark, tmp_path / "snap", tmp_path / "out", job.build_options())
    assert raised.value.exit_code == 1
    assert raised.value.details == [
        "rack spread: with 2 racks, each of the 6 partitions with 2 or more replicas needs a replica in rack r2, "
        "30.0 GB in all, but the log dirs of rack r2 (brokers 4) hold at most 16.0 GB more under the 0.8 capacity "
        "threshold"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["snap"]


def test_a_proposal_that_breaks_a_hard_constraint_is_never_written(spark, stand_in, tmp_path):
    write_fixture("full_disk", tmp_path / "snap")
    with pytest.raises(job.PlanUnsatisfiable) as raised:
        job.run(spark, tmp_path / "snap", tmp_path / "out", job.build_options(), stand_in.identity)
    assert raised.value.details == [
        "log_dir_capacity: broker 1 /data/ssd0: 90000000000 of 100000000000 bytes used (0.900 > 0.8)",
        "log_dir_capacity: broker 2 /data/ssd0: 90000000000 of 100000000000 bytes used (0.900 > 0.8)"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["snap"]


def test_a_failed_run_cancels_the_baselines_thread_and_leaves_no_spark_job_running(spark, tmp_path):
    """Kafka's assignment and the snapshot's figures run on a thread of their
    own while the optimizer does: when the run fails, their Spark jobs are
    cancelled and the thread ends before run() returns."""
    import threading
    import time

    write_fixture("unbalanced_two_racks", tmp_path / "snap")
    tracker = spark.sparkContext.statusTracker()
    seen = []

    def failing(session, snapshot, options):
        deadline = time.monotonic() + 60
        while not seen and time.monotonic() < deadline:    # fail while the baselines run
            seen.extend(tracker.getJobIdsForGroup(job.Background.GROUP))
            time.sleep(0.01)
        raise RuntimeError("the optimizer failed")

    with pytest.raises(RuntimeError, match="the optimizer failed"):
        job.run(spark, tmp_path / "snap", tmp_path / "out", job.build_options(), failing)
    assert seen, "the baselines never started a Spark job"
    assert job.Background.GROUP not in [t.name for t in threading.enumerate()]
    # the status tracker learns of a cancelled job's end through Spark's listener bus, a moment later
    wait_for(lambda: not set(tracker.getActiveJobsIds()) & set(tracker.getJobIdsForGroup(job.Background.GROUP)),
             10, "the background thread's Spark jobs ended")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["snap"]


def test_an_infeasible_snapshot_cancels_the_optimizer_running_beside_feasibility(spark, tmp_path):
    """Feasibility runs on the background thread while the optimizer starts:
    when it proves the snapshot infeasible, the optimizer's Spark jobs are
    cancelled and the run fails with feasibility's reasons."""
    import time

    from kafkactl.planner.proposal import Proposal

    write_fixture("rack_constraint_unsatisfiable", tmp_path / "snap")
    outcome = {}

    def endless(session, snapshot, options):
        deadline = time.monotonic() + 120
        try:
            while time.monotonic() < deadline:
                session.range(1000).selectExpr("sum(id)").collect()
        except Exception as error:
            outcome["stopped by"] = str(error)
            raise
        return Proposal(snapshot.partitions, [], 0)

    with pytest.raises(job.PlanUnsatisfiable) as raised:
        job.run(spark, tmp_path / "snap", tmp_path / "out", job.build_options(), endless)
    assert "cancel" in outcome.get("stopped by", "").lower(), outcome
    assert [d.split(":")[0] for d in raised.value.details] == ["rack spread"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["snap"]


def test_a_failing_baseline_fails_the_run_and_writes_nothing(spark, stand_in, tmp_path, monkeypatch):
    from kafkactl.planner import baseline

    def broken(snapshot, options):
        raise RuntimeError("Kafka's assignment failed")

    monkeypatch.setattr(baseline, "kafka_assignment", broken)
    write_fixture("unbalanced_two_racks", tmp_path / "snap")
    with pytest.raises(RuntimeError, match="Kafka's assignment failed"):
        job.run(spark, tmp_path / "snap", tmp_path / "out", job.build_options(), stand_in.identity)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["snap"]


SPARK_NOISE = ("Using Spark's default log4j profile", "native-hadoop", "resolves to a loopback address",
               "WARN", "incubator modules", "log4j", "setLogLevel")


def test_kafkactl_plan_prints_only_its_own_lines_unless_debug(tmp_path):
    """Also the JVM class-data archive (planner/jvm_archive.py): the first run
    in an empty cache saves it, saying so, and the next one maps it (=require:
    the JVM would not start if it could not)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    write_fixture("decommission_one", tmp_path / "snap")   # a short plan: the console is what is checked
    kafkactl = Path(sys.executable).parent / "kafkactl"
    cache = tmp_path / "cache"

    def plan(*extra, out, archive="on"):
        environment = {**os.environ, "KAFKACTL_CACHE_DIR": str(cache), "KAFKACTL_JVM_ARCHIVE": archive}
        return subprocess.run([str(kafkactl), *extra, "plan", "--snapshot", str(tmp_path / "snap"), "--out",
                               str(tmp_path / out), "--master", "local[2]"], capture_output=True, text=True,
                              timeout=900, env=environment)

    quiet = plan(out="quiet")
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr.splitlines() == [
        "kafkactl: note: saving Spark's classes for faster local plans (once per install)"]
    assert quiet.stdout.startswith("RESOURCE (MAX/MEAN)")
    [archive] = [p.name for p in (cache / "jvm").iterdir()]
    assert archive.startswith("spark-") and archive.endswith(".jsa")   # no part file left
    # The same on a refused snapshot: kafkactl's error line comes first, and alone.
    (tmp_path / "snap" / "brokers.jsonl").write_text("{}\n" + (tmp_path / "snap" / "brokers.jsonl").read_text())
    refused = plan(out="refused")
    assert refused.returncode == 2
    assert refused.stderr.splitlines()[:2] == [f"kafkactl: error: --snapshot {tmp_path / 'snap'}: invalid snapshot",
                                               "brokers.jsonl line 1: broker_id is missing"]
    assert not any(noise in refused.stderr for noise in SPARK_NOISE)
    (tmp_path / "snap" / "brokers.jsonl").write_text((tmp_path / "snap" / "brokers.jsonl").read_text()[3:])
    # --debug leaves Spark's defaults: its start-up notices are there; and the archive is mapped.
    debug = plan("--debug", out="debug", archive="require")
    assert debug.returncode == 0, debug.stderr[-3000:]
    assert "Using Spark's default log4j profile" in debug.stderr
    assert "saving Spark's classes" not in debug.stderr
