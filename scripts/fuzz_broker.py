"""The long fuzz run: real clients' frames, mutated, against a live broker.

    .venv/bin/python scripts/fuzz_broker.py                       # 50,000 cases, seed 1
    .venv/bin/python scripts/fuzz_broker.py --cases 200000 --seed 7
    .venv/bin/python scripts/fuzz_broker.py --seed 7 --first 1200 --count 300   # replay a failing batch

Starts a 1-broker local cluster in a temporary directory, records the frames
kcat, kafka-python and confluent-kafka send to it (through a proxy), then
sends mutated copies, one per connection, checking the broker's health after
every batch (tests/support/broker_fuzz.py says what is checked). Prints cases
per second, the broker's peak RSS and threads, and how long it ran; exits 1
with the replay line on the first unhealthy batch.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))   # the shared test helpers: support.*

from kafkactl.cluster.local import LocalCluster  # noqa: E402
from support.broker_fuzz import FuzzRun, Target, capture_client_frames  # noqa: E402

TOPIC = "fuzzed"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cases", type=int, default=50_000, help="cases to send (from --first)")
    parser.add_argument("--first", type=int, default=0, help="index of the first case (to replay)")
    parser.add_argument("--count", type=int, help="with --first: replay this many cases")
    parser.add_argument("--batch", type=int, default=500, help="cases between health checks")
    parser.add_argument("--rss-limit-mb", type=float, default=1000.0)
    options = parser.parse_args()
    cases = options.count if options.count is not None else options.cases
    with tempfile.TemporaryDirectory(prefix="fuzz-") as directory:
        cluster = LocalCluster(Path(directory) / "cluster")
        status = cluster.up(brokers=1, overrides={"auto.create.topics.enable": "true", "num.partitions": "1"})
        broker = status.broker(1)
        target = Target(broker.host, broker.port, broker.pid, broker.log_file)
        started = time.monotonic()
        try:
            corpus = capture_client_frames({1: (target.host, target.port)}, TOPIC)
            print(f"corpus: {len(corpus)} frames from kcat, kafka-python and confluent-kafka")
            run = FuzzRun(target, corpus, options.seed, TOPIC, rss_limit_mb=options.rss_limit_mb)
            try:
                report = run.run(cases=cases, batch=min(options.batch, cases), first=options.first)
            except AssertionError as failure:
                print(f"UNHEALTHY after {run.report.cases} cases: {failure}")
                return 1
        finally:
            cluster.down()
    print(f"seed {options.seed}: {report.cases} cases in {report.seconds:.0f} s "
          f"({report.cases_per_second:.0f} cases/s), {report.checks} health checks, "
          f"{report.closed_by_broker} connections closed by the broker, {report.answered} answered")
    print(f"broker peak RSS {report.max_rss_mb:.0f} MB, peak threads {report.max_threads}; "
          f"whole run {time.monotonic() - started:.0f} s")
    print("mutations:", ", ".join(f"{kind} {count}" for kind, count in sorted(report.kinds.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
