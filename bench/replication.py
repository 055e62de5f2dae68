"""Replication benchmarks of the reference cluster: failover, replicated produce, controlled shutdown.

    .venv/bin/python bench/replication.py                    # all three, ~10 minutes
    .venv/bin/python bench/replication.py --only failover --failover-partitions 1000:3 --no-doc
    .venv/bin/python bench/replication.py --only produce,shutdown --runs 3

Runs the three benchmarks, each of which also runs alone with its own options
(their module docs say what each measures and how):

- failover (bench/failover.py): kill -9 of the broker that leads every
  partition of one topic of N partitions; detection, election and serving
  times, and the steps in between from the controller's and the new leader's
  logs;
- produce (bench/replicated_produce.py): replication factor 3, acks=-1,
  min.insync.replicas=2 with kcat against the machine's limits measured in the
  same rounds, then latency with confluent-kafka and what one connection
  commits;
- controlled shutdown (bench/controlled_shutdown.py): SIGTERM to a broker
  leading 5,000 partitions until it has exited.

Each starts its own 3-broker local cluster (ZooKeeper + 3 broker processes)
in a temporary directory and always takes it down again. Every figure is the
median of several runs (the machine is shared). The tables are printed and
written to docs/benchmarks-replication.md, each benchmark between its own
markers (a run of some of them keeps the others' sections), with a
hand-written notes section kept across runs (bench/replication_support/).

This is a measurement, not a test: nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import controlled_shutdown
import failover
import replicated_produce

from replication_support.doc import SECTIONS
from replication_support.run import BenchRun, doc_option_help


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default=",".join(SECTIONS),
                        help=f"comma-separated subset of {','.join(SECTIONS)} (default: all)")
    parser.add_argument("--runs", type=int, default=3, help="runs of produce and shutdown (medians)")
    parser.add_argument("--failover-partitions", default=failover.FAILOVER_DEFAULT, metavar="N:RUNS,...",
                        help=f"failover cases, partitions:runs (default {failover.FAILOVER_DEFAULT}; "
                             f"10000:3 takes ~6 minutes)")
    parser.add_argument("--shutdown-partitions", type=int, default=controlled_shutdown.SHUTDOWN_PARTITIONS)
    parser.add_argument("--dir", type=Path, default=None, help="where the clusters go (default: a new temp dir)")
    parser.add_argument("--profile-dir", type=Path, default=None,
                        help="record the new leader and the controller with py-spy during each failover")
    parser.add_argument("--no-doc", action="store_true", help=doc_option_help())
    args = parser.parse_args(argv)
    only = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = set(only) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(sorted(unknown))}")
    if "produce" in only and replicated_produce.kcat_missing():
        return 2
    with BenchRun(args.dir, not args.no_doc) as run:
        if "failover" in only:
            failover.measure(run, failover.parse_cases(args.failover_partitions), args.profile_dir)
        if "produce" in only:
            replicated_produce.measure(run, args.runs)
        if "shutdown" in only:
            controlled_shutdown.measure(run, args.shutdown_partitions, args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
