"""`kafkactl plan`'s console summary: the estimated duration appears with
--throttle (as in report.md and report.json), and only then."""

from pathlib import Path

from kafkactl.cli.plan import summary_table

STATS = {"min": 0.1, "max": 0.3, "mean": 0.2, "std": 0.1, "max_mean": 1.5}


def result(throttle_bytes_per_s, estimated_duration_s):
    return {"resources": {name: dict.fromkeys(("before", "after", "kafka_baseline", "lower_bound"), STATS)
                          for name in ("disk_utilization_ssd", "disk_utilization_hdd", "network_in_utilization",
                                       "network_out_utilization", "replica_count", "leader_count")},
            "plan_partitions": 3, "options": {"throttle_bytes_per_s": throttle_bytes_per_s},
            "moves": {"after": {"replica_moves": 4, "bytes_moved": 40_000_000_000, "dir_moves": 1,
                                "leader_changes": 2, "estimated_duration_s": estimated_duration_s}}}


def test_the_summary_shows_the_estimated_duration_at_the_throttle():
    lines = summary_table(result(50_000_000, 400.0), Path("plans/today")).splitlines()
    assert lines[-3:] == [
        "3 partitions change: 4 replica moves, 40000000000 bytes moved, 1 moves between dirs, 2 leader changes",
        "estimated duration at --throttle 50.0 MB/s: 7 min",
        "wrote plans/today/plan.json, rollback.json, report.md, report.json, utilization.png "
        "(run: kafkactl reassign execute --plan plans/today/plan.json)"]


def test_without_a_throttle_there_is_no_estimate():
    text = summary_table(result(None, None), Path("out"))
    assert "estimated duration" not in text and text.splitlines()[-1].startswith("wrote out/plan.json")
