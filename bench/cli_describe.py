"""How long `kafkactl topics describe` takes on 10,000 partitions; the aim is under 1 s.

Starts a standalone ZooKeeper in a temporary dir, writes 3 broker
registrations and 100 topics of 100 partitions each (assignment and
partition state, in Kafka's layout and JSON), then runs the installed
`kafkactl topics describe -o json` as a subprocess 5 times and prints the
median wall time and its ratio to the 1 s aim. Everything it started is
stopped at the end.

    .venv/bin/python bench/cli_describe.py [--topics 100] [--partitions 100] [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kafkactl.cluster.local import ZooKeeperCommand, procs
from kafkactl.cluster.local.ports import free_loopback_ports
from kafkactl.cluster.local.zookeeper import wait_ready, zoo_cfg
from kafkactl.cluster.zk import codecs, layout
from kafkactl.cluster.zk.client import connect, wait

AIM_S = 1.0
BROKERS = (1, 2, 3)
OPERATIONS_PER_MULTI = 500      # well under ZooKeeper's 1 MB jute.maxbuffer
KAFKACTL = Path(sys.executable).parent / "kafkactl"


def start_zookeeper(root: Path):
    port = free_loopback_ports(1)[0]
    config = root / "zoo.cfg"
    config.write_text(zoo_cfg(root / "data", port))
    log_file = root / "zookeeper.log"
    launched = procs.spawn(ZooKeeperCommand().argv(config, root), log_file, root)
    wait_ready("127.0.0.1", port, 30, lambda: procs.exit_code(launched.pid) is None, log_file, launched.log_offset)
    return launched, f"127.0.0.1:{port}"


def znodes(topics: int, partitions: int):
    """(path, data) in creation order: brokers, then each topic with its partition states."""
    for broker_id in BROKERS:
        yield layout.broker(broker_id), codecs.encode_broker(codecs.BrokerRegistration(
            broker_id, "127.0.0.1", 9090 + broker_id, (f"PLAINTEXT://127.0.0.1:{9090 + broker_id}",)))
    for t in range(topics):
        name = f"bench-{t:03d}"
        assignment = {p: [BROKERS[(p + i) % 3] for i in range(3)] for p in range(partitions)}
        yield layout.topic(name), codecs.encode_topic(codecs.TopicAssignment(assignment, codecs.new_topic_id()))
        yield layout.partitions(name), b""
        for p, replicas in assignment.items():
            yield layout.partition(name, p), b""
            yield layout.partition_state(name, p), codecs.encode_partition_state(
                codecs.PartitionState(replicas[0], 0, replicas, 1))


def populate(address: str, topics: int, partitions: int) -> None:
    client = connect(address)
    try:
        for parent in ("/brokers/ids", "/brokers/topics"):
            wait(client.ensure_path_async(parent), 10)
        batch = client.transaction()
        pending = 0
        for path, data in znodes(topics, partitions):
            batch.create(path, data)
            pending += 1
            if pending == OPERATIONS_PER_MULTI:
                _commit(batch)
                batch, pending = client.transaction(), 0
        if pending:
            _commit(batch)
    finally:
        client.stop()
        client.close()


def _commit(batch) -> None:
    failures = [r for r in wait(batch.commit_async(), 30) if isinstance(r, Exception)]
    if failures:
        raise failures[0]


def time_describe(address: str, expected_rows: int, home: Path) -> float:
    env = {**os.environ, "KAFKACTL_CONFIG": str(home / "config.json"), "XDG_STATE_HOME": str(home / "state")}
    started = time.perf_counter()
    done = subprocess.run([str(KAFKACTL), "-z", address, "topics", "describe", "-o", "json"],
                          capture_output=True, text=True, env=env, timeout=60)
    elapsed_s = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"kafkactl failed: {done.stderr}")
    rows = json.loads(done.stdout)
    if len(rows) != expected_rows:
        raise SystemExit(f"expected {expected_rows} partitions, kafkactl described {len(rows)}")
    return elapsed_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    total = args.topics * args.partitions
    with tempfile.TemporaryDirectory(prefix="kafkactl-bench-") as tmp:
        root = Path(tmp)
        launched, address = start_zookeeper(root)
        try:
            populate(address, args.topics, args.partitions)
            times_s = [time_describe(address, total, root / "home") for _ in range(args.runs)]
        finally:
            os.kill(launched.pid, signal.SIGKILL)
            procs.exit_code(launched.pid)
    median_s = statistics.median(times_s)
    print(f"kafkactl topics describe, {total} partitions ({args.topics} topics), real ZooKeeper, "
          f"{args.runs} runs: median {median_s:.3f} s (runs: {', '.join(f'{t:.3f}' for t in times_s)})")
    print(f"ratio to the {AIM_S:g} s aim: {median_s / AIM_S:.2f} ({'met' if median_s < AIM_S else 'NOT met'})")


if __name__ == "__main__":
    main()
