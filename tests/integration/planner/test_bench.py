"""bench/planner.py on tiny snapshots: the benchmark reads a snapshot the way
`kafkactl plan` does and prints every table row, the bound line and the goals
line. The benchmark's sizes take minutes; these keep it from breaking unseen
(it broke once when the optimizer came to need the snapshot's check)."""

import importlib.util
import re
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[3] / "bench" / "planner.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_planner", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _rows(text: str) -> dict[str, list[str]]:
    return {cells[0]: cells[1:] for line in text.splitlines() if line.startswith("| ")
            for cells in [[c.strip() for c in line.strip("|").split("|")]]}


def test_the_benchmark_reports_the_skewed_snapshot_with_its_bound_and_goals(spark, bench, tmp_path):
    """One size (each costs Spark jobs and Kafka's assignment in Python workers): the skewed
    snapshot, which has every part of the report (new brokers, unequal racks, both media)."""
    from kafkactl.planner.fixtures import write_skewed
    from kafkactl.planner.options import PlannerOptions

    added = write_skewed(tmp_path / "skewed", 600, 12, seed=1)
    result = bench.measure(spark, tmp_path / "skewed", PlannerOptions(seed=1, add_brokers=tuple(added)),
                           runs=1, seed=1)
    text = bench.report({"partitions": 600, "brokers": 12, "replicas": 1800, "skewed": True,
                         "generate_s": 0.0, **result})

    assert text.startswith("## skewed: 600 partitions (1,800 replicas) on 12 brokers"), text
    rows = _rows(text)
    assert {"current", "planner", "Kafka default", "lower bound"} <= set(rows), text
    for column in (0, 1):                                      # disk ssd, disk hdd max/mean
        bound, planned, current = (float(rows[name][column]) for name in ("lower bound", "planner", "current"))
        assert bound <= planned < current, text
    assert int(rows["planner"][8].replace(",", "")) > 0, text     # moves
    assert re.search(r"worst media [0-9.]+ / [0-9.]+ = [0-9.]+", text), text
    assert re.search(r"constraints above perfect balance: .*rack spread", text), text
    assert re.search(r"^goals: repair met; ", text, re.MULTILINE), text
    assert "BUG" not in text
