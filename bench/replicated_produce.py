"""Produce to the reference cluster with replication factor 3, acks=-1, min.insync.replicas=2.

    .venv/bin/python bench/replicated_produce.py                # 3 rounds
    .venv/bin/python bench/replicated_produce.py --runs 1 --no-doc

A 3-broker local cluster (ZooKeeper + 3 broker processes) in a temporary
directory, always taken down again. kcat with the producer settings of
bench/throughput.py, 1 KiB records, timed from start to exit; the machine's
limits (page-cache writes, loopback TCP) measured in the same rounds with
bench/throughput.py's functions. Then p50/p99 latency at half the measured
rate with confluent-kafka (a paced loop, linger.ms=5), and what one producer
connection commits with acks=-1 requests one at a time or several in flight.

Every figure is the median of the rounds (the machine is shared). The tables
are printed and written to docs/benchmarks-replication.md, in the produce
section (bench/replication.py runs this with the other two benchmarks).

This is a measurement, not a test: nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

import throughput  # bench/throughput.py: the limits, kcat options, payloads

from replication_support.cluster import BenchCluster
from replication_support.host import code_version, now_text
from replication_support.produce_report import (
    COMMIT_SECONDS,
    LATENCY_LINGER_MS,
    LATENCY_SECONDS,
    LATENCY_WARMUP_S,
    PRODUCE_RECORD_BYTES,
    PRODUCE_RECORDS,
    ProduceCase,
    commit_table,
    kcat_argv,
    latency_table,
    produce_cases,
    produce_cpu_table,
    produce_table,
)
from replication_support.run import BenchRun, doc_option_help

MB = throughput.MB
LATENCY_LOADS = (0.5, 0.25, 0.1)      # of the kcat median of RF 3, 1 partition (the brief asks for half)
# (RF, 1 KiB records per request, requests in flight on the connection)
COMMIT_CASES = ((1, 1, 1), (2, 1, 1), (3, 1, 1), (1, 1000, 1), (2, 1000, 1), (3, 1000, 1), (3, 1000, 5))


class BrokersWindow(throughput.CpuWindow):
    """CPU of all the brokers together (bench/throughput.py's window counts one)."""

    def __init__(self, pids: list[int]) -> None:
        super().__init__(None)
        self.pids = pids

    def _brokers(self) -> float:
        return sum(throughput.process_cpu_s(pid) for pid in self.pids)

    def start(self) -> None:
        super().start()
        self.brokers0 = self._brokers()

    def stop(self, client_cpu_s: float, **sample) -> throughput.Sample:
        brokers = self._brokers() - self.brokers0
        result = super().stop(client_cpu_s + brokers, **sample)   # "other" excludes the brokers
        result.client_cpu_s = client_cpu_s
        result.broker_cpu_s = brokers
        return result


def produce_bench(root: Path, runs: int, log=print) -> dict:
    bc = BenchCluster(root / "produce", {})
    try:
        pids = [b.pid for b in bc.status.brokers]
        log_dir = Path(bc.broker(1).log_dirs[0])
        work = root / "produce-work"
        work.mkdir()
        if os.stat(work).st_dev != os.stat(log_dir).st_dev:
            raise RuntimeError(f"{work} and the log dir {log_dir} are on different file systems")
        payload = work / "payload-1024.txt"
        throughput.write_payload(payload, PRODUCE_RECORD_BYTES, PRODUCE_RECORDS)
        figures: dict[str, throughput.Figure] = {}

        def figure(name: str, kind: str, limit: str | None = None) -> throughput.Figure:
            if name not in figures:
                figures[name] = throughput.Figure(name, kind, limit=limit)
            return figures[name]

        isr_changes: dict[str, list[int]] = {}
        counter = [0]

        def produce_once(case: ProduceCase) -> throughput.Sample:
            counter[0] += 1
            topic = f"produce-{counter[0]}"
            assignment = {p: list(r) for p, r in enumerate(case.replicas)}
            before, _ = bc.new_topic(topic, assignment, {"min.insync.replicas": str(case.min_insync)},
                                     "produce topic", 60)
            sample, stderr = throughput.run_timed(
                kcat_argv(bc.status.bootstrap_servers, topic, payload, len(assignment)),
                BrokersWindow(pids), bytes=PRODUCE_RECORD_BYTES * PRODUCE_RECORDS, records=PRODUCE_RECORDS)
            delivered = sum(bc.end_offsets(topic, assignment).values())
            if delivered != PRODUCE_RECORDS:
                raise RuntimeError(f"produce to {topic}: {delivered} of {PRODUCE_RECORDS} records arrived\n{stderr}")
            after = bc.states(topic, assignment)
            isr_changes.setdefault(case.name, []).append(
                sum(after[p].version - before[p].version for p in assignment))
            return sample

        log("produce: warming up")
        produce_once(produce_cases()[0])
        cases = produce_cases()
        limits = work / "limits"
        limits.mkdir()
        for index in range(runs):
            t0 = time.monotonic()
            window = throughput.CpuWindow(None)
            figure("disk write, page cache", "limit").samples.append(
                throughput.disk_write(limits / f"write-{index}", throughput.DISK_WRITE_BYTES, False, window))
            figure("loopback TCP, 1 MiB sends", "limit").samples.append(
                throughput.loopback(throughput.LOOPBACK_BYTES, window))
            shift = index % len(cases)
            for case in cases[shift:] + cases[:shift]:
                figure(case.name, "produce", "disk write, page cache").samples.append(produce_once(case))
            log(f"produce: round {index + 1}/{runs} done in {time.monotonic() - t0:.1f} s")
        rate = figures[cases[0].name].median("records_per_s")
        latency: dict[str, list[dict]] = {}
        for index in range(runs):
            for load in LATENCY_LOADS:
                run = latency_once(bc, f"latency-{load}-{index}", rate * load, LATENCY_LINGER_MS)
                latency.setdefault(str(load), []).append(run)
                log(f"produce: latency run {index + 1}/{runs} at {load:.0%} load: {run['sent_per_s']:,.0f} "
                    f"records/s, p50 {run['p50_ms']:.1f} ms, p99 {run['p99_ms']:.1f} ms")
        commit = []
        for rf, records, in_flight in COMMIT_CASES:
            commit.append(commit_round_trips(bc, rf, records, in_flight))
            log(f"produce: acks=-1 requests, {in_flight} in flight, RF {rf}, {records} records: "
                f"{commit[-1]['requests_per_s']:,.0f} requests/s, p50 {commit[-1]['p50_ms']:.2f} ms")
        return {"figures": figures, "latency": latency, "full_rate": rate, "isr_changes": isr_changes,
                "commit": commit, "date": now_text(), "code": code_version()}
    finally:
        bc.close()


def commit_round_trips(bc: BenchCluster, rf: int, records: int, in_flight: int) -> dict:
    """Produce requests (acks=-1) on one connection to the leader, `in_flight` of them sent ahead
    of their answers: how many one producer connection commits. With 1 in flight each waits for the
    last answer (one replication round trip per request); with more, the leader appends the next
    while earlier ones wait for their ISR (network.py), answering in order."""
    import datetime as dt
    import socket
    import struct

    from kio.schema.produce.v9 import request as produce9

    from kafkactl.cluster.broker.broker_client import decode_response, encode_request
    from kafkactl.cluster.broker.network import recv_exactly_into
    from kafkactl.cluster.protocol.codec import response_class
    from kafkactl.cluster.protocol.record_batch import build_batch

    topic = f"commit-rf{rf}-{records}-{in_flight}"
    assignment = {0: [1, 2, 3][:rf]}
    bc.new_topic(topic, assignment, {"min.insync.replicas": str(min(rf, 2))}, "commit topic", 60)
    value = os.urandom(PRODUCE_RECORD_BYTES)
    batch = build_batch([(None, value, None, int(time.time() * 1000))] * records)
    request = produce9.ProduceRequest(
        transactional_id=None, acks=-1, timeout=dt.timedelta(seconds=30),
        topic_data=(produce9.TopicProduceData(name=topic, partition_data=(
            produce9.PartitionProduceData(index=0, records=batch),)),))
    leader = bc.broker(1)
    connection = socket.create_connection((leader.host, leader.port), timeout=60.0)
    connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sent_at: list[float] = []
    times: list[float] = []
    prefix = memoryview(bytearray(4))

    def answer() -> None:
        recv_exactly_into(connection, prefix)
        frame = memoryview(bytearray(struct.unpack(">i", prefix)[0]))
        recv_exactly_into(connection, frame)
        correlation_id = struct.unpack_from(">i", frame)[0]
        times.append(time.perf_counter() - sent_at[correlation_id])
        response = decode_response(bytes(frame), response_class(0, 9), correlation_id)
        error = response.responses[0].partition_responses[0].error_code
        if error != 0:
            raise RuntimeError(f"produce to {topic}: error {error}")

    try:
        started = time.perf_counter()
        end = started + COMMIT_SECONDS
        waiting = 0
        while True:
            while waiting < in_flight and time.perf_counter() < end:
                sent_at.append(time.perf_counter())
                connection.sendall(encode_request(request, len(sent_at) - 1, "bench-commit"))
                waiting += 1
            if waiting == 0:
                break
            answer()
            waiting -= 1
        elapsed = time.perf_counter() - started
    finally:
        connection.close()
    times.sort()
    return {"rf": rf, "records": records, "in_flight": in_flight, "requests_per_s": len(times) / elapsed,
            "mb_per_s": len(times) * records * PRODUCE_RECORD_BYTES / elapsed / MB,
            "p50_ms": times[len(times) // 2] * 1000, "p99_ms": times[int(len(times) * 0.99)] * 1000,
            "max_ms": times[-1] * 1000, "requests": len(times)}


def latency_once(bc: BenchCluster, topic: str, rate: float, linger_ms: int) -> dict:
    """confluent-kafka at `rate` records/s for LATENCY_SECONDS: each record's time from produce()
    to its delivery report (librdkafka's message latency, read in the callback)."""
    from confluent_kafka import Producer

    assignment = {0: [1, 2, 3]}
    bc.new_topic(topic, assignment, {"min.insync.replicas": "2"}, "latency topic", 60)
    latencies: list[float] = []
    errors: list[str] = []
    value = os.urandom(PRODUCE_RECORD_BYTES)
    warm = [True]

    def on_delivery(error, message) -> None:
        if error is not None:
            errors.append(str(error))
        elif not warm[0]:
            latencies.append(message.latency())

    producer = Producer({
        "bootstrap.servers": bc.status.bootstrap_servers, "acks": "all", "linger.ms": linger_ms,
        "compression.type": "none", "enable.idempotence": False, "on_delivery": on_delivery,
        "queue.buffering.max.messages": 1_000_000, "queue.buffering.max.kbytes": 1_048_576,
    })
    total = int(rate * (LATENCY_SECONDS + LATENCY_WARMUP_S))
    warm_count = int(rate * LATENCY_WARMUP_S)
    late_max = 0.0
    cpu0 = time.process_time()
    start = time.perf_counter()
    sent = 0
    while sent < total:
        now = time.perf_counter()
        due = min(int((now - start) * rate) + 1, total)
        if due - sent > 1:
            late_max = max(late_max, now - (start + sent / rate))
        while sent < due:
            if sent == warm_count:
                producer.poll(0)
                warm[0] = False
            producer.produce(topic, value, partition=0)
            sent += 1
        producer.poll(0)
        pause = start + sent / rate - time.perf_counter()
        if pause > 0:
            time.sleep(min(pause, 0.001))
    elapsed = time.perf_counter() - start
    remaining = producer.flush(30)
    cpu = time.process_time() - cpu0
    if remaining or errors:
        raise RuntimeError(f"latency run: {remaining} undelivered, {len(errors)} errors, e.g. {errors[:3]}")
    latencies.sort()
    return {
        "target_per_s": rate, "sent_per_s": total / elapsed, "mb_per_s": total * PRODUCE_RECORD_BYTES / elapsed / MB,
        "records": len(latencies), "p50_ms": latencies[len(latencies) // 2] * 1000,
        "p99_ms": latencies[int(len(latencies) * 0.99)] * 1000, "max_ms": latencies[-1] * 1000,
        "late_max_ms": late_max * 1000, "client_cpu_s": cpu, "linger_ms": linger_ms,
    }


def kcat_missing() -> bool:
    """True, with a message, when kcat is not installed."""
    if shutil.which("kcat") is not None:
        return False
    print("kcat is not installed (Debian package kcat; `make setup` installs it)", file=sys.stderr)
    return True


def measure(run: BenchRun, runs: int) -> None:
    """The rounds, latency and commit cases; results kept, tables printed."""
    data = produce_bench(run.root, runs, run.log)
    run.store["produce"] = data
    run.keep()
    print("\n".join(["", *produce_table(data), "", *produce_cpu_table(data), "",
                     *commit_table(data), "", *latency_table(data), ""]), flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="rounds (medians)")
    parser.add_argument("--dir", type=Path, default=None, help="where the cluster goes (default: a new temp dir)")
    parser.add_argument("--no-doc", action="store_true", help=doc_option_help())
    args = parser.parse_args(argv)
    if kcat_missing():
        return 2
    with BenchRun(args.dir, not args.no_doc) as run:
        measure(run, args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
