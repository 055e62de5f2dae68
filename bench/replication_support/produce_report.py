"""The replicated produce benchmark's cases, tables and section of
docs/benchmarks-replication.md (bench/replicated_produce.py measures)."""

from __future__ import annotations

import os
import statistics
from dataclasses import dataclass
from pathlib import Path

import throughput  # bench/throughput.py: kcat's options, Figure and Sample

from replication_support.stats import med

PRODUCE_RECORD_BYTES = 1024
PRODUCE_RECORDS = 250_000              # 256 MB of payload per run, as bench/throughput.py
LATENCY_SECONDS = 6.0                  # per latency run, after a warm-up
LATENCY_WARMUP_S = 1.0
LATENCY_LINGER_MS = 5                 # librdkafka's default
COMMIT_SECONDS = 2.0


@dataclass
class ProduceCase:
    name: str
    replicas: tuple[tuple[int, ...], ...]     # per partition; 1-based broker ids
    min_insync: int
    kind: str = "produce"


def produce_cases() -> list[ProduceCase]:
    return [
        ProduceCase("RF 3, 1 partition", ((1, 2, 3),), 2),
        ProduceCase("RF 3, 3 partitions (one led by each broker)", ((1, 2, 3), (2, 3, 1), (3, 1, 2)), 2),
        ProduceCase("RF 1, 1 partition (no replication, same cluster)", ((1,),), 1),
    ]


def kcat_argv(bootstrap: str, topic: str, payload: Path, partitions: int) -> list[str]:
    argv = throughput.produce_argv(bootstrap, topic, payload, -1)
    if partitions > 1:                       # bench/throughput.py writes to -p 0
        argv[argv.index("-p") + 1] = "-1"    # librdkafka's partitioner
    return argv


def produce_table(data: dict) -> list[str]:
    figures = data["figures"]
    copies = {case.name: len(case.replicas[0]) for case in produce_cases()}
    lines = ["| figure | median MB/s | median records/s | runs (MB/s) | vs page-cache write limit "
             "| bytes written to the page cache (× replicas) vs that limit "
             "| kcat CPU s/GB | brokers' CPU s/GB (all 3) | other load (cores) |",
             "|---|---:|---:|---|---:|---:|---:|---:|---:|"]
    for f in figures.values():
        mb = f.median("mb_per_s")
        records = f"{f.median('records_per_s'):,.0f}" if f.kind != "limit" else ""
        ratio = written = client = brokers = ""
        if f.limit:
            limit = figures[f.limit].median("mb_per_s")
            ratio = f"{mb / limit:.2f}"
            written = f"{copies.get(f.name, 1) * mb / limit:.2f}"
            client = f"{f.cpu_per_gb('client_cpu_s'):.2f}"
            brokers = f"{f.cpu_per_gb('broker_cpu_s'):.2f}"
        other = statistics.median(s.other_cpu_s / s.seconds for s in f.samples)
        lines.append(f"| {f.name} | {mb:,.0f} | {records} | {' '.join(f'{s.mb_per_s:.0f}' for s in f.samples)} "
                     f"| {ratio} | {written} | {client} | {brokers} | {other:.2f} |")
    return lines


def produce_cpu_table(data: dict) -> list[str]:
    lines = ["| figure | kcat cores | brokers' cores | others' cores | free cores | ISR changes during the runs |",
             "|---|---:|---:|---:|---:|---|"]
    cores = len(os.sched_getaffinity(0))
    for f in data["figures"].values():
        if f.kind == "limit":
            continue
        client = statistics.median(s.client_cpu_s / s.seconds for s in f.samples)
        brokers = statistics.median(s.broker_cpu_s / s.seconds for s in f.samples)
        other = statistics.median(s.other_cpu_s / s.seconds for s in f.samples)
        changes = " ".join(str(c) for c in data["isr_changes"].get(f.name, [])[-len(f.samples):])
        lines.append(f"| {f.name} | {client:.2f} | {brokers:.2f} | {other:.2f} "
                     f"| {max(cores - client - brokers - other, 0):.2f} | {changes} |")
    return lines


def latency_table(data: dict) -> list[str]:
    lines = ["| load (of the kcat median) | target records/s | achieved records/s (MB/s) | p50 | p99 | max "
             "| runs p50 / p99 (ms) | loop late by at most | client CPU (cores) |",
             "|---|---:|---:|---:|---:|---:|---|---:|---:|"]
    for load, runs in sorted(data["latency"].items(), key=lambda item: -float(item[0])):
        per_run = " ".join(f"{r['p50_ms']:,.1f}/{r['p99_ms']:,.1f}" for r in runs)
        lines.append(
            f"| {float(load):.0%} | {med(r['target_per_s'] for r in runs):,.0f} "
            f"| {med(r['sent_per_s'] for r in runs):,.0f} ({med(r['mb_per_s'] for r in runs):.0f}) "
            f"| {med(r['p50_ms'] for r in runs):,.1f} ms | {med(r['p99_ms'] for r in runs):,.1f} ms "
            f"| {med(r['max_ms'] for r in runs):,.0f} ms | {per_run} "
            f"| {med(r['late_max_ms'] for r in runs):.1f} ms "
            f"| {med(r['client_cpu_s'] / (LATENCY_SECONDS + LATENCY_WARMUP_S) for r in runs):.2f} |")
    return lines


def commit_table(data: dict) -> list[str]:
    lines = ["| replication factor | records of 1 KiB per request | requests in flight | requests/s | MB/s "
             "| p50 | p99 | max |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for c in data["commit"]:
        lines.append(f"| {c['rf']} | {c['records']:,} | {c.get('in_flight', 1)} | {c['requests_per_s']:,.0f} "
                     f"| {c['mb_per_s']:,.1f} "
                     f"| {c['p50_ms']:.2f} ms | {c['p99_ms']:.2f} ms | {c['max_ms']:.1f} ms |")
    return lines


# ---- read back from docs/benchmarks-replication.json, and the doc section -----------

def produce_data(store: dict) -> dict | None:
    entry = store.get("produce")
    if not entry:
        return None
    figures = {}
    order = [c.name for c in produce_cases()]
    by_kind = sorted(entry["figures"].items(), key=lambda item: (
        item[1]["kind"] != "limit", order.index(item[0]) if item[0] in order else len(order)))
    for name, f in by_kind:
        figures[name] = throughput.Figure(f["name"], f["kind"], [throughput.Sample(**s) for s in f["samples"]],
                                          limit=f["limit"])
    return {**entry, "figures": figures}


def produce_section(data: dict) -> list[str]:
    runs = len(next(iter(data["figures"].values())).samples)
    rf3 = data["figures"]["RF 3, 1 partition"].median("mb_per_s")
    best = max(f.median("mb_per_s") for f in data["figures"].values()
               if f.kind == "produce" and f.name.startswith("RF 3"))
    return [
        "## 2. Produce with replication factor 3, acks=-1, min.insync.replicas=2",
        "",
        f"Measured {data['date']} at commit {data.get('code', '?')}; {runs} rounds, each: the limits, then "
        "every case once (rotated); "
        "medians. 3 brokers on this machine; every case writes into a new topic.",
        "",
        *produce_table(data),
        "",
        f"Aim stated by the issue: ≥ 100 MB/s. RF 3 with one partition: {rf3:,.0f} MB/s; best RF 3 case: "
        f"{best:,.0f} MB/s. With RF 3 every byte is written to the page cache three times (once per broker) "
        "and crosses loopback three times (producer → leader, leader → each follower).",
        "",
        "Where the CPU went (medians; cores = CPU seconds per second of the run), and how many times the "
        "partitions' ISR changed during the runs (state znode versions; 0 = no follower fell out):",
        "",
        *produce_cpu_table(data),
        "",
        "What one producer connection can commit: produce requests with acks=-1, one at a time (the next "
        "sent when the answer is in) or several in flight (the leader appends a connection's next produce "
        "request while earlier ones wait for their ISR, and answers in order; Kafka reads nothing more from "
        f"the connection until it answers), {COMMIT_SECONDS:.0f} s per case, same cluster; latency from "
        "sending a request to its answer:",
        "",
        *commit_table(data),
        "",
        f"Latency, confluent-kafka (acks=all, linger.ms={LATENCY_LINGER_MS}: librdkafka's default) at half "
        f"the RF 3, 1 partition kcat median (the issue's figure) and at a quarter and a tenth of it, into an "
        f"RF 3 topic of one partition; {LATENCY_SECONDS:.0f} s per run after {LATENCY_WARMUP_S:.0f} s of "
        f"warm-up, {runs} runs per row:",
        "",
        *latency_table(data),
        "",
        f"- throughput: `{' '.join(kcat_argv('HOST:PORT,...', 'TOPIC', Path('FILE'), 1))}` "
        f"(`-p -1` for the 3-partition case), FILE = {PRODUCE_RECORDS:,} records of 1 KiB; the time runs from "
        "starting kcat to its exit, after the last delivery report; the sum of the partitions' end offsets is "
        "checked afterwards. CPU of the three brokers summed.",
        "- limits: bench/throughput.py's `disk_write` (256 MiB in 1 MiB writes to a new file on the log dirs' "
        "file system) and `loopback` (2 GiB over one loopback TCP connection), in every round",
        "- commit: Produce v9 with one batch of N records of 1 KiB, acks=-1, to the leader (broker 1) over "
        "one connection, a new request sent whenever fewer than the given number are unanswered",
        "- latency: a Python loop calls `produce()` at the target rate (paced every ≤ 1 ms, `poll(0)` after "
        "each burst); each record's latency is librdkafka's `message.latency()` read in its delivery "
        "callback: from `produce()` to the delivery report. \"Late by\" is how far the loop fell behind its "
        "schedule at worst.",
    ]

