"""How fast `kafkactl plan` answers on small snapshots (issue 17, point 4).

Three measurements, each `--runs` times as a subprocess, medians printed
with the ratio to this machine's floor measured in the same run:

- floor: a bare PySpark session on local[2], started and stopped (what any
  plan pays at least);
- refusal: `kafkactl plan` of a snapshot with one bad line (refused before
  Spark starts; the aim is under 2 s);
- plan: `kafkactl plan --master local[2]` of a generated 20-partition
  snapshot (6 brokers, RF 3), end to end (the aim is under 20 s).

`--kafkactl PATH` measures another install (e.g. a checkout of main's
.venv/bin/kafkactl, for a before/after comparison); its interpreter is the
one next to it. The runs of the three kinds are interleaved, so a busy
spell of this shared machine stretches all of them alike.

    .venv/bin/python bench/planner_startup.py [--runs 3] [--kafkactl .venv/bin/kafkactl]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

AIM_REFUSAL_S = 2.0
AIM_PLAN_S = 20.0
PARTITIONS, BROKERS = 20, 6
FLOOR = ("from pyspark.sql import SparkSession\n"
         "SparkSession.builder.master('local[2]').getOrCreate().stop()\n")


def snapshots(root: Path) -> tuple[Path, Path]:
    """(a good 20-partition snapshot, the same with one negative size)."""
    from kafkactl.planner.generate import generate

    good, bad = root / "good", root / "bad"
    generate(good, partitions=PARTITIONS, brokers=BROKERS, seed=1, network_fill=0.15, disk_fill=0.3)
    shutil.copytree(good, bad)
    lines = (bad / "partitions.jsonl").read_text().splitlines()
    row = json.loads(lines[1])
    lines[1] = json.dumps({**row, "size_bytes": -5})
    (bad / "partitions.jsonl").write_text("\n".join(lines) + "\n")
    return good, bad


def timed(argv: list[str], expect: int, env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=1800)
    elapsed_s = time.perf_counter() - started
    if done.returncode != expect:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}, not {expect}:\n{done.stderr[-3000:]}")
    return elapsed_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--kafkactl", type=Path, default=Path(sys.executable).parent / "kafkactl")
    args = parser.parse_args()
    kafkactl = args.kafkactl.absolute()
    python = str(kafkactl.parent / "python")
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "SPARK_LOCAL_IP")}
    samples: dict[str, list[float]] = {"floor": [], "refusal": [], "plan": []}
    with tempfile.TemporaryDirectory(prefix="kafkactl-bench-") as tmp:
        root = Path(tmp)
        good, bad = snapshots(root)
        for run in range(args.runs):
            samples["floor"].append(timed([python, "-c", FLOOR], 0, env))
            samples["refusal"].append(timed([str(kafkactl), "plan", "--snapshot", str(bad), "--out",
                                             str(root / f"refused-{run}"), "--master", "local[2]"], 2, env))
            samples["plan"].append(timed([str(kafkactl), "plan", "--snapshot", str(good), "--out",
                                          str(root / f"plan-{run}"), "--master", "local[2]", "-o", "json"], 0, env))
    floor_s = statistics.median(samples["floor"])
    print(f"kafkactl: {kafkactl}; {args.runs} runs each, medians (all runs: seconds)")
    for name, aim in (("floor", None), ("refusal", AIM_REFUSAL_S), ("plan", AIM_PLAN_S)):
        median_s = statistics.median(samples[name])
        aim_text = "" if aim is None else f"  aim {aim:.0f} s: {median_s / aim:.2f}x"
        print(f"{name:8} {median_s:7.2f} s  {median_s / floor_s:5.2f}x floor{aim_text}  "
              f"({', '.join(f'{s:.1f}' for s in samples[name])})")


if __name__ == "__main__":
    main()
