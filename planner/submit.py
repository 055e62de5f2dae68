"""The planner as a spark-submit application:

    spark-submit --master spark://HOST:7077 planner/submit.py --snapshot DIR --out DIR [options]

Same options as `kafkactl plan` (see docs/planner.md); the master comes from
spark-submit unless --master is given. Exit 0 with a plan, 1 when a hard
constraint cannot be met (nothing written), 2 on a bad option or snapshot.
kafkactl must be importable on the driver and the executors (the Kafka
baseline's pandas UDF imports kafkactl.cluster.admin.replica_assignment):
install it on every node or pass it with --py-files.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="planner/submit.py", description="kafkactl's placement planner on Spark.")
    p.add_argument("--snapshot", required=True, type=Path, metavar="DIR")
    p.add_argument("--out", required=True, type=Path, metavar="DIR")
    p.add_argument("--master", default=None, metavar="URL", help="default: spark-submit's master")
    p.add_argument("--capacity-threshold", type=float, default=0.8, metavar="FRACTION")
    p.add_argument("--network-threshold", type=float, metavar="FRACTION")
    p.add_argument("--network-in-threshold", type=float, metavar="FRACTION")
    p.add_argument("--network-out-threshold", type=float, metavar="FRACTION")
    p.add_argument("--exclude-brokers", metavar="ID,ID,...")
    p.add_argument("--add-brokers", metavar="ID,ID,...")
    p.add_argument("--goals", metavar="GOAL,GOAL,...")
    p.add_argument("--max-bytes-moved", type=int, metavar="BYTES")
    p.add_argument("--max-moves", type=int, metavar="N")
    p.add_argument("--throttle", type=int, metavar="BYTES_PER_S")
    p.add_argument("--seed", type=int, default=0, metavar="N")
    p.add_argument("-o", "--output", choices=("text", "json"), default="text")
    return p


def main(argv: list[str] | None = None) -> int:
    from kafkactl.planner import job

    args = parser().parse_args(argv)  # argparse exits 2 on a malformed option
    try:
        options = job.build_options(args.capacity_threshold, args.network_threshold, args.network_in_threshold,
                                    args.network_out_threshold, args.exclude_brokers, args.add_brokers, args.goals,
                                    args.max_bytes_moved, args.max_moves, args.throttle, args.seed)
        result = job.plan(args.snapshot, args.out, args.master, options)
    except job.PlanError as error:
        print("\n".join([f"planner: error: {error.message}", *error.details]), file=sys.stderr)
        return error.exit_code
    if args.output == "json":
        print(json.dumps(result, indent=2))
    else:
        print(summary(result, args.out))
    return 0


def summary(result: dict, out: Path) -> str:
    """The text output: what changes and, with --throttle, how long it is estimated to take."""
    from kafkactl.planner.usage import human_duration, human_rate

    moved = result["moves"]["after"]
    line = f"wrote {out}: {result['plan_partitions']} partitions change ({moved['bytes_moved']} bytes moved)"
    if moved["estimated_duration_s"] is None:
        return line
    throttle = human_rate(result["options"]["throttle_bytes_per_s"])
    return f"{line}; estimated duration at --throttle {throttle}: {human_duration(moved['estimated_duration_s'])}"


if __name__ == "__main__":
    sys.exit(main())
