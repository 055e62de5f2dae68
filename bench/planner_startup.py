"""How fast `kafkactl plan` answers on small snapshots (issue 17, point 4).

Measurements, each `--runs` times as a subprocess, medians printed with
the ratio to this machine's floor measured in the same run:

- floor: the planner's own Spark session on local[2] (planner/session.py,
  the JVM class-data archive mapped), started and stopped: what any plan
  pays at least;
- bare session: a default PySpark session on local[2], for comparison;
- refusal: `kafkactl plan` of a snapshot with one bad line (refused before
  Spark starts; the aim is under 2 s);
- plan: `kafkactl plan --master local[2]` of a generated 20-partition
  snapshot (6 brokers, RF 3), end to end (the aim is under 20 s);
- plan, no archive: the same with KAFKACTL_JVM_ARCHIVE=0.

The archive lives in a cache directory of the run's own; the first plan,
which saves it, is timed once and printed apart.

`--kafkactl PATH` (repeatable) measures other installs side by side, e.g.
main's checkout for a before/after comparison; the floor uses the first
one's interpreter. The runs of every kind and install are interleaved, so
a busy spell of this shared machine stretches all of them alike.

    .venv/bin/python bench/planner_startup.py [--runs 3] [--kafkactl /work/main/.venv/bin/kafkactl --kafkactl .venv/bin/kafkactl]
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
BARE_SESSION = ("from pyspark.sql import SparkSession\n"
                "SparkSession.builder.master('local[2]').getOrCreate().stop()\n")
FLOOR = ("from kafkactl.planner.session import planner_session\n"
         f"with planner_session('local[2]', {PARTITIONS * 3}):\n    pass\n")


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
    parser.add_argument("--kafkactl", type=Path, action="append", metavar="PATH",
                        help="default: the kafkactl next to this interpreter")
    args = parser.parse_args()
    installs = [p.absolute() for p in args.kafkactl or [Path(sys.executable).parent / "kafkactl"]]
    python = str(installs[0].parent / "python")
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "SPARK_LOCAL_IP")}
    kinds = ("refusal", "plan", "plan, no archive")
    floor: list[float] = []
    bare: list[float] = []
    first: dict[str, float] = {}
    samples = {(str(k), kind): [] for k in installs for kind in kinds}
    with tempfile.TemporaryDirectory(prefix="kafkactl-bench-") as tmp:
        root = Path(tmp)
        good, bad = snapshots(root)
        env["KAFKACTL_CACHE_DIR"] = str(root / "cache")
        without = {**env, "KAFKACTL_JVM_ARCHIVE": "0"}

        def plan(kafkactl, snapshot, out, expect, environment):
            return timed([str(kafkactl), "plan", "--snapshot", str(snapshot), "--out", str(out), "--master",
                          "local[2]", "-o", "json"], expect, environment)

        first[str(installs[0])] = plan(installs[0], good, root / "first", 0, env)   # saves the archive
        for run in range(args.runs):
            floor.append(timed([python, "-c", FLOOR], 0, env))
            bare.append(timed([python, "-c", BARE_SESSION], 0, env))
            for number, kafkactl in enumerate(installs):
                out = root / f"{number}-{run}"
                samples[(str(kafkactl), "refusal")].append(plan(kafkactl, bad, out, 2, env))
                samples[(str(kafkactl), "plan")].append(plan(kafkactl, good, out, 0, env))
                samples[(str(kafkactl), "plan, no archive")].append(plan(kafkactl, good, f"{out}-n", 0, without))
    floor_s = statistics.median(floor)
    print(f"{args.runs} runs each, medians (all runs, seconds, in brackets)")
    print(f"floor (the planner's local[2] session)  {floor_s:7.2f} s          ({', '.join(f'{s:.1f}' for s in floor)})")
    print(f"bare PySpark local[2] session           {statistics.median(bare):7.2f} s  "
          f"{statistics.median(bare) / floor_s:5.2f}x floor  ({', '.join(f'{s:.1f}' for s in bare)})")
    print(f"first plan of an install (saves the JVM class archive, one run): {first[str(installs[0])]:.1f} s")
    for kafkactl in installs:
        print(kafkactl)
        for kind, aim in (("refusal", AIM_REFUSAL_S), ("plan", AIM_PLAN_S), ("plan, no archive", AIM_PLAN_S)):
            runs = samples[(str(kafkactl), kind)]
            median_s = statistics.median(runs)
            print(f"  {kind:16} {median_s:7.2f} s  {median_s / floor_s:5.2f}x floor  {median_s / aim:5.2f}x the "
                  f"{aim:.0f} s aim  ({', '.join(f'{s:.1f}' for s in runs)})")


if __name__ == "__main__":
    main()
