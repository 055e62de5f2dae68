"""Controlled shutdown of a broker of the reference cluster that leads thousands of partitions.

    .venv/bin/python bench/controlled_shutdown.py               # 5,000 partitions, 3 runs
    .venv/bin/python bench/controlled_shutdown.py --partitions 300 --runs 1 --no-doc

A 3-broker local cluster (ZooKeeper + 3 broker processes) in a temporary
directory, always taken down again; broker L, not the controller, leads every
partition of one topic. SIGTERM until the process has exited, split with the
broker's log lines into the wait for the ControlledShutdown request and the
rest of the shutdown. Between runs L is restarted, rejoins every ISR, and gets
its leaderships back by preferred election.

Every figure is the median of the runs (the machine is shared). The table is
printed and written to docs/benchmarks-replication.md, in the shutdown section
(bench/replication.py runs this with the other two benchmarks).

This is a measurement, not a test: nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import os
import select
import signal
import sys
import time
from pathlib import Path

from replication_support.cluster import BenchCluster, setup_timeout_s
from replication_support.host import code_version, now_text
from replication_support.logs import first, log_size, matching, read_log
from replication_support.run import BenchRun, doc_option_help
from replication_support.shutdown_report import ShutdownRun, shutdown_table
from replication_support.stats import ms

SHUTDOWN_PARTITIONS = 5000


def shutdown_bench(root: Path, n: int, runs: int, log=print) -> dict:
    bc = BenchCluster(root / "shutdown", {})
    try:
        leader, follower, controller = bc.roles()
        topic = f"shutdown-{n}"
        assignment = {p: [leader, follower, controller] for p in range(n)}
        t0 = time.monotonic()
        bc.new_topic(topic, assignment, {"min.insync.replicas": "2"}, "topic creation", setup_timeout_s(n))
        create_s = time.monotonic() - t0
        log(f"shutdown: {n} partitions led by broker {leader} after {create_s:.1f} s")
        results: list[ShutdownRun] = []
        for index in range(runs):
            if index:
                results[-1].restore = bc.restore_leader(topic, assignment, setup_timeout_s(n))
                r = results[-1].restore
                log(f"  restored: restart {r['restart_s']:.1f} s, ISR full {r['isr_full_s']:.1f} s, "
                    f"preferred election {r['preferred_s']:.1f} s")
            results.append(shutdown_once(bc, topic, n, leader, controller))
            r = results[-1]
            log(f"  run {index + 1}/{runs}: SIGTERM to exit {ms(r.total_s)} ms, of which the controlled "
                f"shutdown request {ms(r.request_s)} ms")
        return {"runs": results, "create_s": create_s, "partitions": n, "date": now_text(),
                "code": code_version()}
    finally:
        bc.close()


def shutdown_once(bc: BenchCluster, topic: str, n: int, leader: int, controller: int) -> ShutdownRun:
    bc.refresh()
    bc.wait_quiet(topic, {p: [leader] + [b for b in (1, 2, 3) if b not in (leader, controller)] + [controller]
                          for p in range(n)}, setup_timeout_s(n))
    before = bc.states(topic, range(n))
    if any(s is None or s.leader != leader for s in before.values()):
        raise RuntimeError(f"broker {leader} does not lead every partition of {topic}")
    broker = bc.broker(leader)
    leader_log, controller_log = broker.log_file, bc.broker(controller).log_file
    leader_offset, controller_offset = log_size(leader_log), log_size(controller_log)
    pidfd = os.pidfd_open(broker.pid)
    try:
        t_term = time.time()
        os.kill(broker.pid, signal.SIGTERM)
        ready, _, _ = select.select([pidfd], [], [], 180.0)
        t_exit = time.time()
    finally:
        os.close(pidfd)
    if not ready:
        raise RuntimeError(f"broker {leader} did not exit within 180 s of SIGTERM")
    lines = read_log(leader_log, leader_offset)
    started = first(lines, rf"^broker {leader} shutting down")
    succeeded = first(lines, rf"^controlled shutdown of broker {leader} succeeded")
    attempts = len(matching(lines, r"^controlled shutdown attempt \d+ failed")) + (1 if succeeded else 0)
    if succeeded is None:
        failed = matching(lines, r"controlled shutdown")
        raise RuntimeError(f"controlled shutdown of broker {leader} did not succeed: "
                           f"{[line.message for line in failed]}")
    after = bc.states(topic, range(n))
    wrong = [p for p, s in after.items() if s is None or s.leader == leader or leader in s.isr]
    if wrong:
        raise RuntimeError(f"{len(wrong)} partitions still led by or in sync with broker {leader} "
                           f"after its controlled shutdown, e.g. {after[wrong[0]]}")
    requests = [f"{line.message.split(': ', 1)[-1]} at +{(line.t - t_term) * 1000:,.0f} ms"
                for line in matching(read_log(controller_log, controller_offset), r"^controller \d+: \w+ to broker")]
    return ShutdownRun(
        partitions=n,
        total_s=t_exit - t_term,
        to_request_s=max(started.t - t_term, 0.0) if started else None,   # log times: ms resolution
        request_s=succeeded.t - started.t if started else None,
        after_s=t_exit - succeeded.t,
        attempts=attempts,
        controller_requests=requests,
    )


def measure(run: BenchRun, partitions: int, runs: int) -> None:
    """The runs, their results kept, the table printed."""
    data = shutdown_bench(run.root, partitions, runs, run.log)
    run.store["shutdown"] = data
    run.keep()
    print("\n".join(["", *shutdown_table(data), ""]), flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=SHUTDOWN_PARTITIONS,
                        help=f"led by the broker shut down (default {SHUTDOWN_PARTITIONS})")
    parser.add_argument("--runs", type=int, default=3, help="runs (medians)")
    parser.add_argument("--dir", type=Path, default=None, help="where the cluster goes (default: a new temp dir)")
    parser.add_argument("--no-doc", action="store_true", help=doc_option_help())
    args = parser.parse_args(argv)
    with BenchRun(args.dir, not args.no_doc) as run:
        measure(run, args.partitions, args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
