"""Idle connections against a replicating leader: memory per idle connection,
and a producer's throughput and latency and the followers' replication with
and without them.

    .venv/bin/python bench/connections.py                 # 10,000 idle connections, 3 runs
    .venv/bin/python bench/connections.py --idle 2000 --runs 3 --messages 20000
    .venv/bin/python bench/connections.py --runs 1 --rounds 9   # + the interleaved A/A/B comparison

Starts a 3-broker local cluster (RF 3, min.insync.replicas 2) in a temporary
directory. Each run leads its topic from a broker that has never held idle
connections (run k: broker k) and alternates the order of the two phases:

1. without idle connections, produces `--messages` records of `--size` bytes with confluent-kafka
   (acks=all, idempotent, linger.ms 5) with no idle connections: records/s,
   and the p50/p99 of each record's produce-to-acknowledgement latency;
   then `--paced` records at `--rate` per second (the latencies of a
   producer that is not saturated);
2. opens `--idle` connections to the leader from this process and leaves
   them idle: the leader's RSS (VmRSS) before and after, per connection;
   produces again with the idle connections held (same figures);
3. throughout, samples the partition's ISR in ZooKeeper every 0.2 s (its
   smallest size) and, after each produce, the time until both followers'
   log end offsets (the brokers' /metrics) reach the leader's.

With `--rounds K` (after the runs): K rounds on one leader, each producing
three times in a random order: twice without idle connections (A, A') and
once while a separate process holds `--idle` connections to the leader (B).
The rounds give the ratio B/A and the control ratio A'/A: the control is
this machine's noise for the same producer, measured in the same run, so a
B/A inside the control's range is "unchanged" as far as this machine can
tell, and one outside it is an effect.

The machine's limits, in the same run: a bare Python selectors server
holding the same number of idle connections (its RSS per connection: the
least a Python process can spend), and the producer without idle
connections (what the producer with them is compared with).
Every figure is the median of the runs. A measurement, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from kazoo.client import KazooClient

from kafkactl.cluster.admin.topics import create_topic
from kafkactl.cluster.local import LocalCluster

BARE_SERVER = r"""
import selectors, socket, sys
listener = socket.create_server(("127.0.0.1", 0), backlog=4096)
listener.setblocking(False)
selector = selectors.DefaultSelector()
selector.register(listener, selectors.EVENT_READ)
held = []
print(listener.getsockname()[1], flush=True)
while True:
    for key, _ in selector.select():
        if key.fileobj is listener:
            while True:
                try:
                    sock, _ = listener.accept()
                except BlockingIOError:
                    break
                sock.setblocking(False)
                selector.register(sock, selectors.EVENT_READ)
                held.append(sock)
        else:
            if not key.fileobj.recv(4096):
                selector.unregister(key.fileobj)
"""


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def threads_of(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    return 0


def open_idle(port: int, count: int) -> list[socket.socket]:
    sockets = []
    for _ in range(count):
        sockets.append(socket.create_connection(("127.0.0.1", port), timeout=30))
    return sockets


HOLDER = r"""
import socket, sys
port, count = int(sys.argv[1]), int(sys.argv[2])
held = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(count)]
print("held", flush=True)
sys.stdin.read()        # until the benchmark closes our stdin
"""


class IdleHolder:
    """`count` idle connections to `port`, held by another process (so the
    producer's process does not share its interpreter with them)."""

    def __init__(self, port: int, count: int) -> None:
        self._process = subprocess.Popen([sys.executable, "-c", HOLDER, str(port), str(count)],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def __enter__(self):
        if self._process.stdout.readline().strip() != "held":
            self._process.kill()
            raise RuntimeError("the idle-connection holder failed to connect")
        return self

    def __exit__(self, *_):
        self._process.stdin.close()
        self._process.wait(30)
        time.sleep(2)       # the closed connections leave the broker


def settle(pid: int, seconds: float = 1.5) -> float:
    time.sleep(seconds)
    return rss_mb(pid)


def bare_server_mb_per_connection(count: int) -> float:
    process = subprocess.Popen([sys.executable, "-c", BARE_SERVER], stdout=subprocess.PIPE, text=True)
    try:
        port = int(process.stdout.readline())
        before = settle(process.pid, 0.5)
        sockets = open_idle(port, count)
        after = settle(process.pid)
        for sock in sockets:
            sock.close()
        return (after - before) / count
    finally:
        process.kill()
        process.wait(10)


class IsrWatch:
    """The smallest ISR seen, sampled every 0.2 s from ZooKeeper."""

    def __init__(self, zk: KazooClient, topic: str) -> None:
        self._zk, self._path = zk, f"/brokers/topics/{topic}/partitions/0/state"
        self.smallest = 99
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            isr = json.loads(self._zk.get(self._path)[0])["isr"]
            self.smallest = min(self.smallest, len(isr))

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *_):
        self._stop.set()
        self._thread.join(5)


def produce(bootstrap: str, topic: str, messages: int, size: int, rate: float = 0.0) -> dict:
    """`messages` as fast as the producer goes (rate 0: throughput; the
    latencies then mostly measure its queue), or paced at `rate` per second
    (latency: each record's produce-to-acknowledgement time)."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                         "linger.ms": 5, "message.timeout.ms": 60000})
    latencies, errors = [], []
    payload = os.urandom(size)

    def delivered(sent_at, error, _message):
        if error is not None:
            errors.append(error)
        latencies.append(time.perf_counter() - sent_at)

    producer.list_topics(topic, timeout=30)     # connected and metadata known before timing
    # One acknowledged record first: librdkafka's idempotent producer gets its
    # producer id on a timer, and until then holds every record (measured: the
    # first ~330 ms of a paced run waited ~500 ms, which was the whole p99).
    producer.produce(topic, payload, partition=0)
    if producer.flush(30):
        raise RuntimeError("the warm-up record was not acknowledged")
    started = time.perf_counter()
    for index in range(messages):
        if rate:
            pause = started + index / rate - time.perf_counter()
            if pause > 0:
                producer.poll(pause)
        while True:
            try:
                producer.produce(topic, payload, partition=0,
                                 on_delivery=lambda e, m, t=time.perf_counter(): delivered(t, e, m))
                break
            except BufferError:
                producer.poll(0.01)
        producer.poll(0)
    left = producer.flush(120)
    elapsed = time.perf_counter() - started
    if left or errors:
        raise RuntimeError(f"{left} unacknowledged, {len(errors)} errors: {errors[:3]}")
    latencies.sort()
    return {"records_per_s": messages / elapsed, "mb_per_s": messages * size / elapsed / 1e6,
            "p50_ms": latencies[len(latencies) // 2] * 1000,
            "p99_ms": latencies[int(len(latencies) * 0.99)] * 1000}


def log_end_offsets(metrics_ports: dict[int, int], topic: str) -> dict[int, int]:
    ends = {}
    for broker_id, port in metrics_ports.items():
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as page:
            for line in page.read().decode().splitlines():
                if line.startswith("kafka_log_end_offset{") and f'topic="{topic}"' in line:
                    ends[broker_id] = int(float(line.rsplit(" ", 1)[1]))
    return ends


def catch_up_ms(metrics_ports: dict[int, int], topic: str) -> float:
    """From the producer's last acknowledgement until both followers' log end
    offsets equal the leader's (acks=all: they had it already; this is the
    follower lag still visible)."""
    started = time.perf_counter()
    while True:
        ends = log_end_offsets(metrics_ports, topic)
        if len(set(ends.values())) == 1 and len(ends) == len(metrics_ports):
            return (time.perf_counter() - started) * 1000
        if time.perf_counter() - started > 30:
            raise RuntimeError(f"followers did not catch up: {ends}")
        time.sleep(0.01)


def median(values) -> float:
    return statistics.median(values)


def interleaved_rounds(zk: KazooClient, status, args) -> None:
    """The A/A'/B rounds described in the module doc, on broker 1 as leader."""
    import random

    leader = status.broker(1)
    bootstrap, topic = f"{leader.host}:{leader.port}", "bench-connections-rounds"
    create_topic(zk, topic, {0: [1, 2, 3]}, {"min.insync.replicas": "2"})
    state = f"/brokers/topics/{topic}/partitions/0/state"
    while not (zk.exists(state) and len(json.loads(zk.get(state)[0])["isr"]) == 3):
        time.sleep(0.1)
    order_of = random.Random(args.seed)
    phases = {"A": [], "A'": [], "B": []}
    smallest_isr = 3
    for round_number in range(1, args.rounds + 1):
        order = ["A", "A'", "B"]
        order_of.shuffle(order)
        for phase in order:
            with IsrWatch(zk, topic) as watch:
                if phase == "B":
                    with IdleHolder(leader.port, args.idle):
                        phases[phase].append((produce(bootstrap, topic, args.messages, args.size),
                                              produce(bootstrap, topic, args.paced, args.size, args.rate)))
                else:
                    phases[phase].append((produce(bootstrap, topic, args.messages, args.size),
                                          produce(bootstrap, topic, args.paced, args.size, args.rate)))
            smallest_isr = min(smallest_isr, watch.smallest)
        figures = {p: (phases[p][-1][0]["records_per_s"], phases[p][-1][1]["p99_ms"]) for p in phases}
        print(f"round {round_number} ({' '.join(order)}): " + ", ".join(
            f"{p} {rate:.0f} records/s p99 {p99:.1f} ms" for p, (rate, p99) in figures.items()), flush=True)
    report_rounds(phases, smallest_isr, args)


def report_rounds(phases: dict, smallest_isr: int, args) -> None:
    def ratios(numerator: str, field: int, key: str) -> list[float]:
        return sorted(n[field][key] / d[field][key] for n, d in zip(phases[numerator], phases["A"]))

    print()
    print(f"{args.rounds} interleaved rounds (A, A' without idle connections; B with {args.idle} idle "
          f"held by another process); smallest ISR {smallest_isr}")
    for label, field, key in (("throughput", 0, "records_per_s"), ("paced p99", 1, "p99_ms")):
        effect, control = ratios("B", field, key), ratios("A'", field, key)
        print(f"  {label:>10}: B/A median {median(effect):.2f} (range {effect[0]:.2f}-{effect[-1]:.2f}); "
              f"control A'/A median {median(control):.2f} (range {control[0]:.2f}-{control[-1]:.2f})")
    for phase, runs in phases.items():
        print(f"  {phase:>2}: {median([r[0]['records_per_s'] for r in runs]):8.0f} records/s, "
              f"paced p50 {median([r[1]['p50_ms'] for r in runs]):.1f} ms, "
              f"p99 {median([r[1]['p99_ms'] for r in runs]):.1f} ms")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--idle", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3, help="each on a fresh leader: at most 3 are fresh")
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--paced", type=int, default=3000, help="records of the latency phase")
    parser.add_argument("--rate", type=float, default=1000.0, help="records/s of the latency phase")
    parser.add_argument("--rounds", type=int, default=0, help="interleaved A/A'/B rounds after the runs")
    parser.add_argument("--seed", type=int, default=1, help="the order of the phases in each round")
    args = parser.parse_args(argv)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))   # the brokers inherit it, and raise theirs too
    if hard < args.idle + 1000:
        print(f"the open files hard limit ({hard}) is too low for {args.idle} connections", file=sys.stderr)
        return 2

    rows = {key: [] for key in ("bare_mb", "broker_mb", "broker_threads_idle", "base", "idle_run",
                                "base_paced", "idle_paced", "base_isr", "idle_isr", "base_lag", "idle_lag")}
    with tempfile.TemporaryDirectory(prefix="bench-connections-") as workdir:
        cluster = LocalCluster(Path(workdir) / "cluster")
        # An explicit max.connections above the idle count: the default differs
        # between thread-per-connection main (1000) and this branch (unlimited).
        status = cluster.up(brokers=3, overrides={"auto.leader.rebalance.enable": "false",
                                                  "max.connections": str(args.idle + 1000)})
        try:
            ports = {b: status.broker(b).metrics_port for b in (1, 2, 3)}
            zk = KazooClient(hosts=status.zookeeper_connect, timeout=10.0)
            zk.start(timeout=30)
            for run in range(1, args.runs + 1):
                # Each run leads from a broker that never held idle connections
                # (freed Python memory is kept for reuse, so a second run on
                # the same process would show no growth), and the two phases
                # alternate in order, so warming up favours neither.
                leader_id = (run - 1) % 3 + 1
                leader = status.broker(leader_id)
                bootstrap = f"{leader.host}:{leader.port}"
                replicas = [leader_id] + [b for b in (1, 2, 3) if b != leader_id]
                topic = f"bench-connections-{run}"
                create_topic(zk, topic, {0: replicas}, {"min.insync.replicas": "2"})
                state = f"/brokers/topics/{topic}/partitions/0/state"
                while not (zk.exists(state) and len(json.loads(zk.get(state)[0])["isr"]) == 3):
                    time.sleep(0.1)
                rows["bare_mb"].append(bare_server_mb_per_connection(args.idle))

                def without_idle():
                    with IsrWatch(zk, topic) as watch:
                        rows["base"].append(produce(bootstrap, topic, args.messages, args.size))
                        rows["base_paced"].append(produce(bootstrap, topic, args.paced, args.size, args.rate))
                    rows["base_isr"].append(watch.smallest)
                    rows["base_lag"].append(catch_up_ms(ports, topic))

                def with_idle():
                    before = settle(leader.pid)
                    idle = open_idle(leader.port, args.idle)
                    try:
                        after = settle(leader.pid)
                        rows["broker_mb"].append((after - before) / args.idle)
                        rows["broker_threads_idle"].append(threads_of(leader.pid))
                        with IsrWatch(zk, topic) as watch:
                            rows["idle_run"].append(produce(bootstrap, topic, args.messages, args.size))
                            rows["idle_paced"].append(produce(bootstrap, topic, args.paced, args.size, args.rate))
                        rows["idle_isr"].append(watch.smallest)
                        rows["idle_lag"].append(catch_up_ms(ports, topic))
                    finally:
                        for sock in idle:
                            sock.close()
                    time.sleep(2)   # the closed connections leave the leader
                    return before, after

                if run % 2:
                    without_idle()
                    before, after = with_idle()
                else:
                    before, after = with_idle()
                    without_idle()
                print(f"run {run}: leader {leader_id} {before:.0f} MB -> {after:.0f} MB with {args.idle} idle; "
                      f"produce {rows['base'][-1]['records_per_s']:.0f} / {rows['idle_run'][-1]['records_per_s']:.0f} "
                      f"records/s, paced p99 {rows['base_paced'][-1]['p99_ms']:.1f} / "
                      f"{rows['idle_paced'][-1]['p99_ms']:.1f} ms (without / with), "
                      f"smallest ISR {rows['base_isr'][-1]} / {rows['idle_isr'][-1]}", flush=True)
            if args.rounds:
                interleaved_rounds(zk, status, args)
            zk.stop()
            zk.close()
        finally:
            cluster.down()

    def produced(key, field):
        return median([r[field] for r in rows[key]])

    bare, broker = median(rows["bare_mb"]), median(rows["broker_mb"])
    print()
    print(f"{args.idle} idle connections, {args.runs} runs, medians; producer: confluent-kafka acks=all, "
          f"{args.messages} x {args.size} B, linger.ms 5; RF 3, min.insync.replicas 2")
    print(f"  memory per idle connection: broker {broker * 1024:.2f} KB ({broker:.4f} MB); "
          f"bare Python selectors server {bare * 1024:.2f} KB; ratio {broker / bare if bare else float('nan'):.2f}")
    print(f"  leader threads with the idle connections held: {median(rows['broker_threads_idle']):.0f}")
    for label, key, paced, isr, lag in (
            ("without idle connections", "base", "base_paced", "base_isr", "base_lag"),
            (f"with {args.idle} idle", "idle_run", "idle_paced", "idle_isr", "idle_lag")):
        print(f"  {label:>24}: {produced(key, 'records_per_s'):8.0f} records/s "
              f"({produced(key, 'mb_per_s'):.1f} MB/s); paced at {args.rate:.0f}/s: "
              f"p50 {produced(paced, 'p50_ms'):.1f} ms, p99 {produced(paced, 'p99_ms'):.1f} ms; "
              f"smallest ISR {min(rows[isr])}, followers caught up {median(rows[lag]):.0f} ms after the last ack")
    print(f"  ratio with / without: throughput "
          f"{produced('idle_run', 'records_per_s') / produced('base', 'records_per_s'):.2f}, "
          f"paced p99 {produced('idle_paced', 'p99_ms') / produced('base_paced', 'p99_ms'):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
