"""Throughput of the reference broker with kcat, against this machine's limits.

    .venv/bin/python bench/throughput.py            # or: make bench
    .venv/bin/python bench/throughput.py --runs 3 --no-doc

Starts a 1-broker local cluster (ZooKeeper + broker) in a temporary directory
and measures, in rounds so that the machine's noise spreads over every figure:

- produce: `kcat -P -l FILE` of 100-byte and 1 KiB records, acks=1 and acks=-1,
  timed from starting kcat to its exit (kcat exits once every message is
  delivered), each run into a new topic; and per codec (none, gzip, snappy,
  lz4, zstd: `-X compression.codec=...`) with compressible records, acks=1,
  since the broker decompresses every batch to validate its records;
- consume: `kcat -C -e -o beginning` of a topic written in ~1 MB batches and
  read with 1 MiB fetches, output discarded;
- the limits, in the same rounds: sequential writes to the file system of the
  broker's log dir (page cache, and with fdatasync), and a Python loopback TCP
  stream with 1 MiB sends (plain, and with os.sendfile from a cached file as
  the broker does for fetches).

Every figure is the median of the runs; produce is compared with the page
cache write limit, consume with the loopback copy. The CPU seconds of kcat
and of the broker (and of everything else on the machine) are recorded per
run, to tell which side limits. The table is printed and written to
docs/benchmarks.md, where a hand-written notes section is kept across runs.

This is a measurement, not a test: nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import datetime
import json
import multiprocessing
import os
import platform
import re
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "benchmarks.md"
NOTES_BEGIN = "<!-- notes: hand-written, kept by bench/throughput.py -->"
NOTES_END = "<!-- end of notes -->"

MB = 1_000_000          # figures are in decimal MB/s and GB/s
MIB = 1 << 20
CLK_TCK = os.sysconf("SC_CLK_TCK")

# Producer settings of a fast producer: requests as large as librdkafka makes
# them (one batch of up to batch.size bytes per partition per request, capped
# by message.max.bytes = 1000000; batch.num.messages raised so that bytes, not
# the 10000-message default, close a batch of 100-byte records), a 5 ms linger
# so batches fill, and a queue of 16 MB: 16 full requests ahead of the broker,
# while kcat's memory stays small enough to be reused (a queue holding the
# whole file costs kcat 10-20 % more CPU in page faults). No compression.
PRODUCER_OPTIONS = (
    "linger.ms=5",
    "batch.size=1000000",
    "batch.num.messages=1000000",
    "queue.buffering.max.messages=2000000",
    "queue.buffering.max.kbytes=16384",
)
# Consumer: 1 MiB fetches. fetch.wait.max.ms only matters at the end of the
# topic: with -e, kcat exits on the first empty fetch, which the broker holds
# for fetch.wait.max.ms (librdkafka's default, 500 ms, would be timed).
CONSUMER_OPTIONS = (
    "fetch.max.bytes=1048576",
    "max.partition.fetch.bytes=1048576",
    "fetch.wait.max.ms=10",
)
CONSUMER_FORMAT = ""    # -f '': nothing is written per message

PRODUCE_CASES = (       # (record bytes, records per run, acks, codec)
    (100, 1_000_000, 1, "none"),
    (100, 1_000_000, -1, "none"),
    (1024, 250_000, 1, "none"),
    (1024, 250_000, -1, "none"),
)
# Per codec, on compressible records (librdkafka sends a batch uncompressed
# when compressing does not make it smaller): 50 MB per run keeps a round short.
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
CODEC_CASES = tuple((record_bytes, count, 1, codec)
                    for record_bytes, count in ((100, 500_000), (1024, 50_000)) for codec in CODECS)
CONSUME_CASES = (       # (record bytes, records in the topic)
    (16 * 1024, 65_536),      # 1 GiB: per-record cost of the client negligible
    (1024, 1_048_576),        # 1 GiB: the usual Kafka record size
)
CONSUME_PARTS = 16
DISK_WRITE_BYTES = 256 * MIB
LOOPBACK_BYTES = 2048 * MIB
SENDFILE_BYTES = 1024 * MIB
CHUNK = MIB


# ---- measuring CPU ----------------------------------------------------------

def process_cpu_s(pid: int) -> float:
    """utime + stime of a live process (all its threads), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def machine_cpu() -> tuple[float, float]:
    """(busy, steal) CPU seconds of the whole machine since boot."""
    with open("/proc/stat") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    user, nice, system, idle, iowait, irq, softirq, steal = values[:8]
    return (user + nice + system + irq + softirq) / CLK_TCK, steal / CLK_TCK


@dataclass
class Sample:
    """One timed run."""

    seconds: float
    bytes: int = 0
    records: int = 0
    client_cpu_s: float = 0.0      # kcat (or the Python peer), user + sys
    broker_cpu_s: float = 0.0
    other_cpu_s: float = 0.0       # everything else on the machine meanwhile
    steal_s: float = 0.0

    @property
    def mb_per_s(self) -> float:
        return self.bytes / self.seconds / MB

    @property
    def records_per_s(self) -> float:
        return self.records / self.seconds


class CpuWindow:
    """CPU used by the broker and by the machine between start() and stop()."""

    def __init__(self, broker_pid: int | None) -> None:
        self.broker_pid = broker_pid

    def start(self) -> None:
        self.broker0 = process_cpu_s(self.broker_pid) if self.broker_pid else 0.0
        self.machine0, self.steal0 = machine_cpu()
        self.t0 = time.perf_counter()

    def stop(self, client_cpu_s: float, **sample) -> Sample:
        seconds = time.perf_counter() - self.t0
        broker = (process_cpu_s(self.broker_pid) - self.broker0) if self.broker_pid else 0.0
        machine, steal = machine_cpu()
        other = max(machine - self.machine0 - broker - client_cpu_s, 0.0)
        return Sample(seconds, client_cpu_s=client_cpu_s, broker_cpu_s=broker,
                      other_cpu_s=other, steal_s=steal - self.steal0, **sample)


def run_timed(argv: list[str], window: CpuWindow, stdout=subprocess.DEVNULL,
              stdin=subprocess.DEVNULL, **sample) -> tuple[Sample, str]:
    """Run argv to completion; the Sample and its stderr. Raises if it fails."""
    with tempfile.TemporaryFile() as err:
        window.start()
        child = subprocess.Popen(argv, stdin=stdin, stdout=stdout, stderr=err)
        try:
            _, status, usage = os.wait4(child.pid, 0)
        except BaseException:
            child.kill()
            child.wait()
            raise
        child.returncode = os.waitstatus_to_exitcode(status)
        result = window.stop(usage.ru_utime + usage.ru_stime, **sample)
        err.seek(0)
        stderr = err.read().decode(errors="replace")
    if child.returncode != 0:
        raise RuntimeError(f"{shlex.join(argv)} exited with {child.returncode}:\n{stderr[-2000:]}")
    return result, stderr


# ---- the machine's limits -------------------------------------------------

def disk_write(path: Path, size: int, sync: bool, window: CpuWindow) -> Sample:
    """Sequential 1 MiB writes to a new file (kept: the broker's log grows too)."""
    block = os.urandom(CHUNK)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        cpu0 = time.process_time()
        window.start()
        for _ in range(size // CHUNK):
            os.write(fd, block)
        if sync:
            os.fdatasync(fd)
        return window.stop(time.process_time() - cpu0, bytes=size)
    finally:
        os.close(fd)


def _loopback_receiver(listener: socket.socket, conn_ready) -> None:
    connection, _ = listener.accept()
    listener.close()
    conn_ready.send(True)
    buffer = bytearray(CHUNK)
    view = memoryview(buffer)
    total = 0
    while True:
        count = connection.recv_into(view, CHUNK)
        if count == 0:
            break
        total += count
    conn_ready.send((total, time.process_time()))
    connection.close()


def loopback(size: int, window: CpuWindow, source_file: Path | None = None) -> Sample:
    """A TCP stream over loopback between two processes, 1 MiB at a time.

    With source_file: os.sendfile from that (cached) file, as the broker
    sends fetch responses; otherwise sendall of a 1 MiB buffer.
    """
    context = multiprocessing.get_context("fork")
    listener = socket.create_server(("127.0.0.1", 0))
    parent_end, child_end = context.Pipe()
    receiver = context.Process(target=_loopback_receiver, args=(listener, child_end), daemon=True)
    receiver.start()
    try:
        sender = socket.create_connection(listener.getsockname())
        listener.close()
        parent_end.recv()
        block = os.urandom(CHUNK)
        cpu0 = time.process_time()
        window.start()
        if source_file is None:
            for _ in range(size // CHUNK):
                sender.sendall(block)
        else:
            with open(source_file, "rb") as f:
                file_size = os.fstat(f.fileno()).st_size
                sent = 0
                while sent < size:
                    position = sent % file_size
                    sent += os.sendfile(sender.fileno(), f.fileno(), position,
                                        min(CHUNK, file_size - position))
        sender.shutdown(socket.SHUT_WR)
        received, receiver_cpu = parent_end.recv()
        sample = window.stop(time.process_time() - cpu0 + receiver_cpu, bytes=received)
        sender.close()
        if received != size:
            raise RuntimeError(f"loopback: received {received} of {size} bytes")
        return sample
    finally:
        receiver.join(timeout=10)
        if receiver.is_alive():
            receiver.kill()


# ---- kcat ------------------------------------------------------------------

def kcat_options(options) -> list[str]:
    argv = []
    for option in options:
        argv += ["-X", option]
    return argv


def produce_argv(bootstrap: str, topic: str, payload: Path, acks: int, codec: str = "none") -> list[str]:
    return ["kcat", "-b", bootstrap, "-P", "-t", topic, "-p", "0", "-l", str(payload),
            *kcat_options(PRODUCER_OPTIONS), "-X", f"compression.codec={codec}", "-X", f"acks={acks}"]


def consume_argv(bootstrap: str, topic: str) -> list[str]:
    return ["kcat", "-b", bootstrap, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e",
            "-f", CONSUMER_FORMAT, *kcat_options(CONSUMER_OPTIONS)]


def create_topic(bootstrap: str, topic: str, timeout_s: float = 30.0) -> None:
    """Auto-create through a metadata request; wait until it has a leader."""
    deadline = time.monotonic() + timeout_s
    while True:
        out = subprocess.run(["kcat", "-b", bootstrap, "-L", "-t", topic, "-J"],
                             capture_output=True, text=True, timeout=timeout_s)
        if out.returncode == 0:
            topics = json.loads(out.stdout).get("topics", [])
            if topics and topics[0].get("partitions") and topics[0]["partitions"][0]["leader"] >= 0:
                return
        if time.monotonic() > deadline:
            raise RuntimeError(f"topic {topic} got no leader within {timeout_s} s: {out.stderr}")
        time.sleep(0.05)


def end_offset(bootstrap: str, topic: str) -> int:
    out = subprocess.run(["kcat", "-b", bootstrap, "-Q", "-t", f"{topic}:0:-1", "-J"],
                         capture_output=True, text=True, timeout=30, check=True)
    return json.loads(out.stdout)[topic]["0"]["offset"]


def write_payload(path: Path, record_bytes: int, count: int) -> None:
    """`count` newline-separated records of random printable bytes."""
    alphabet = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/"
    distinct = 1024   # distinct records, repeated: enough that nothing compresses well
    records = [bytes(alphabet[b % 64] for b in os.urandom(record_bytes)) + b"\n"
               for _ in range(distinct)]
    block = b"".join(records)
    with open(path, "wb") as f:
        for _ in range(count // distinct):
            f.write(block)
        f.write(b"".join(records[: count % distinct]))


def write_compressible_payload(path: Path, record_bytes: int, count: int) -> None:
    """`count` newline-separated records of words from a small vocabulary
    and a counter, as log lines or JSON compress (about 3-5x)."""
    import random

    words = [b"kafka", b"broker", b"partition", b"offset", b"leader", b"replica", b"segment",
             b"fetch", b"produce", b"batch", b"record", b"topic", b"ok", b"error", b"id="]
    rng = random.Random(record_bytes)
    with open(path, "wb") as f:
        for index in range(count):
            line = bytearray(b"%d " % index)
            while len(line) < record_bytes:
                line += rng.choice(words) + b" "
            f.write(bytes(line[:record_bytes]) + b"\n")


def kcat_version() -> str:
    out = subprocess.run(["kcat", "-V"], capture_output=True, text=True)
    text = out.stdout + out.stderr
    version = re.search(r"Version ([\w.\-]+)", text)
    librdkafka = re.search(r"librdkafka ([\w.\-]+)", text)
    return (f"kcat {version.group(1) if version else '?'}, "
            f"librdkafka {librdkafka.group(1) if librdkafka else '?'}")


# ---- the benchmark -----------------------------------------------------------

@dataclass
class Figure:
    name: str
    kind: str                      # "produce", "consume" or "limit"
    samples: list[Sample] = field(default_factory=list)
    limit: str | None = None       # the name of the limit this is compared with

    def median(self, attribute: str) -> float:
        return statistics.median(getattr(s, attribute) for s in self.samples)

    def cpu_per_gb(self, attribute: str) -> float:
        """Median CPU seconds per GB moved."""
        return statistics.median(getattr(s, attribute) / (s.bytes / 1e9) for s in self.samples)


class Bench:
    def __init__(self, workdir: Path, bootstrap: str, broker_pid: int) -> None:
        self.workdir = workdir
        self.bootstrap = bootstrap
        self.broker_pid = broker_pid
        self.figures: dict[str, Figure] = {}
        self.payloads: dict[int, Path] = {}
        self.compressible: dict[int, Path] = {}

    def figure(self, name: str, kind: str, limit: str | None = None) -> Figure:
        if name not in self.figures:
            self.figures[name] = Figure(name, kind, limit=limit)
        return self.figures[name]

    def prepare(self) -> None:
        for record_bytes, count, _, _ in PRODUCE_CASES:
            if record_bytes not in self.payloads:
                path = self.workdir / f"payload-{record_bytes}.txt"
                write_payload(path, record_bytes, count)
                self.payloads[record_bytes] = path
        for record_bytes, count, _, _ in CODEC_CASES:
            if record_bytes not in self.compressible:
                path = self.workdir / f"payload-compressible-{record_bytes}.txt"
                write_compressible_payload(path, record_bytes, count)
                self.compressible[record_bytes] = path
        # Warm up the broker's code paths (kio schemas, first segment) untimed.
        self.produce_once("warmup", self.payloads[1024], 1024, 250_000, 1)
        subprocess.run(consume_argv(self.bootstrap, "warmup"), stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=True, timeout=120)
        # The topics the consume runs read, written once: CONSUME_PARTS runs of
        # one payload file (the files stay until the end, so that no freed
        # memory makes the first measurements of the rounds faster; see notes).
        for record_bytes, count in CONSUME_CASES:
            path = self.workdir / f"payload-consume-{record_bytes}.txt"
            write_payload(path, record_bytes, count // CONSUME_PARTS)
            topic = self.consume_topic(record_bytes)
            for _ in range(CONSUME_PARTS):
                self.produce_once(topic, path, record_bytes, count // CONSUME_PARTS, 1)
        # A cached file to sendfile from, like a segment.
        self.sendfile_source = self.workdir / "sendfile-source"
        with open(self.sendfile_source, "wb") as f:
            block = os.urandom(CHUNK)
            for _ in range(256):
                f.write(block)

    @staticmethod
    def consume_topic(record_bytes: int) -> str:
        return f"consume-{record_bytes}"

    def produce_once(self, topic: str, payload: Path, record_bytes: int, count: int,
                     acks: int, codec: str = "none") -> Sample:
        create_topic(self.bootstrap, topic)
        before = end_offset(self.bootstrap, topic)
        sample, stderr = run_timed(produce_argv(self.bootstrap, topic, payload, acks, codec),
                                   CpuWindow(self.broker_pid),
                                   bytes=record_bytes * count, records=count)
        delivered = end_offset(self.bootstrap, topic) - before
        if delivered != count:
            raise RuntimeError(f"produce to {topic}: {delivered} of {count} records arrived\n{stderr}")
        return sample

    def round(self, index: int) -> None:
        window = CpuWindow(self.broker_pid)
        limits = self.workdir / "limits"
        limits.mkdir(exist_ok=True)
        self.figure("disk write, page cache", "limit").samples.append(
            disk_write(limits / f"write-{index}", DISK_WRITE_BYTES, False, window))
        self.figure("disk write + fdatasync", "limit").samples.append(
            disk_write(limits / f"sync-{index}", DISK_WRITE_BYTES, True, window))
        self.figure("loopback TCP, 1 MiB sends", "limit").samples.append(
            loopback(LOOPBACK_BYTES, window))
        self.figure("loopback TCP, 1 MiB sendfile", "limit").samples.append(
            loopback(SENDFILE_BYTES, window, self.sendfile_source))
        # Rotated each round: the run right after the limits is favoured (see
        # notes: memory their sockets just freed is cheap to write again).
        shift = index % len(PRODUCE_CASES)
        for record_bytes, count, acks, codec in PRODUCE_CASES[shift:] + PRODUCE_CASES[:shift]:
            name = f"produce {_size(record_bytes)} acks={acks}"
            topic = f"produce-{record_bytes}-acks{'all' if acks == -1 else acks}-{index}"
            sample = self.produce_once(topic, self.payloads[record_bytes], record_bytes, count, acks)
            self.figure(name, "produce", limit="disk write, page cache").samples.append(sample)
        shift = index % len(CODEC_CASES)
        for record_bytes, count, acks, codec in CODEC_CASES[shift:] + CODEC_CASES[:shift]:
            name = f"produce {_size(record_bytes)} {codec} acks={acks}"
            topic = f"produce-{record_bytes}-{codec}-{index}"
            sample = self.produce_once(topic, self.compressible[record_bytes], record_bytes, count,
                                       acks, codec)
            self.figure(name, "produce", limit="disk write, page cache").samples.append(sample)
        shift = index % len(CONSUME_CASES)
        for record_bytes, count in CONSUME_CASES[shift:] + CONSUME_CASES[:shift]:
            topic = self.consume_topic(record_bytes)
            sample, stderr = run_timed(consume_argv(self.bootstrap, topic), window,
                                       bytes=record_bytes * count, records=count)
            if f"at offset {count}" not in stderr:
                raise RuntimeError(f"consume {topic} did not reach offset {count}:\n{stderr}")
            self.figure(f"consume {_size(record_bytes)}", "consume",
                        limit="loopback TCP, 1 MiB sends").samples.append(sample)

    def recycled_write(self, runs: int) -> None:
        """Page cache writes into memory just freed (how the 2 GB/s figure arises)."""
        window = CpuWindow(self.broker_pid)
        path = self.workdir / "limits" / "recycled"
        figure = self.figure("disk write, page cache, memory just freed", "limit")
        disk_write(path, DISK_WRITE_BYTES, False, window)
        for _ in range(runs):
            path.unlink()
            figure.samples.append(disk_write(path, DISK_WRITE_BYTES, False, window))


def _size(record_bytes: int) -> str:
    return f"{record_bytes // 1024} KiB" if record_bytes % 1024 == 0 else f"{record_bytes} B"


# ---- reporting ---------------------------------------------------------------

def machine_description() -> dict[str, str]:
    model = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem_kib = int(f.readline().split()[1])
    return {
        "nproc": str(len(os.sched_getaffinity(0))),
        "cpu": model,
        "memory": f"{mem_kib / 1024 / 1024:.0f} GiB",
        "kernel": platform.release(),
        "python": platform.python_version(),
        "client": kcat_version(),
    }


def table(figures: dict[str, Figure], runs: int) -> list[str]:
    head = ("| figure | median MB/s | median records/s | runs (MB/s) | vs limit "
            "| kcat CPU s/GB | broker CPU s/GB | other load (cores) |")
    lines = [head, "|---|---:|---:|---|---:|---:|---:|---:|"]
    for figure in figures.values():
        mb = figure.median("mb_per_s")
        records = f"{figure.median('records_per_s'):,.0f}" if figure.kind != "limit" else ""
        spread = " ".join(f"{s.mb_per_s:.0f}" for s in figure.samples)
        ratio = ""
        if figure.limit:
            ratio = f"{mb / figures[figure.limit].median('mb_per_s'):.2f}"
        client = broker = ""
        if figure.kind != "limit":
            client = f"{figure.cpu_per_gb('client_cpu_s'):.2f}"
            broker = f"{figure.cpu_per_gb('broker_cpu_s'):.2f}"
        other = statistics.median(s.other_cpu_s / s.seconds for s in figure.samples)
        lines.append(f"| {figure.name} | {mb:,.0f} | {records} | {spread} | {ratio} "
                     f"| {client} | {broker} | {other:.2f} |")
    return lines


def cpu_reading(figures: dict[str, Figure]) -> list[str]:
    """Per produce/consume figure: where its CPU went, as cores busy during the run."""
    lines = ["| figure | kcat cores | broker cores | others' cores | free cores | kcat-alone ceiling MB/s | broker-alone ceiling MB/s |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    cores = len(os.sched_getaffinity(0))
    for figure in figures.values():
        if figure.kind == "limit":
            continue
        client = statistics.median(s.client_cpu_s / s.seconds for s in figure.samples)
        broker = statistics.median(s.broker_cpu_s / s.seconds for s in figure.samples)
        other = statistics.median(s.other_cpu_s / s.seconds for s in figure.samples)
        free = max(cores - client - broker - other, 0.0)
        # If it had a core to itself and the other side cost nothing.
        client_ceiling = statistics.median(s.bytes / s.client_cpu_s / MB for s in figure.samples)
        broker_ceiling = statistics.median(s.bytes / max(s.broker_cpu_s, 1e-3) / MB
                                           for s in figure.samples)
        lines.append(f"| {figure.name} | {client:.2f} | {broker:.2f} | {other:.2f} | {free:.2f} "
                     f"| {client_ceiling:,.0f} | {broker_ceiling:,.0f} |")
    return lines


def render(figures: dict[str, Figure], machine: dict[str, str], runs: int, started: str,
           elapsed_s: float, notes: str) -> str:
    best_produce = max(f.median("mb_per_s") for f in figures.values() if f.kind == "produce")
    consume = [f for f in figures.values() if f.kind == "consume"]
    best_consume = max(f.median("mb_per_s") for f in consume)
    sendfile_limit = figures["loopback TCP, 1 MiB sendfile"].median("mb_per_s")
    aim = (f"Aim stated by the project: produce ≥ 300 MB/s and consume ≥ 1 GB/s. Best produce "
           f"median here: {best_produce:,.0f} MB/s; best consume median: {best_consume:,.0f} MB/s "
           f"(" + ", ".join(f"{f.name} {f.median('mb_per_s') / sendfile_limit:.2f}" for f in consume)
           + " of the sendfile loopback limit, which is what the broker's fetch path does).")
    produce_case = ", ".join(f"{_size(b)} × {n:,}" for b, n, a, _ in PRODUCE_CASES if a == 1)
    codec_case = ", ".join(f"{_size(b)} × {n:,}" for b, n, _, c in CODEC_CASES if c == "none")
    consume_case = ", ".join(f"{_size(b)} × {n:,}" for b, n in CONSUME_CASES)
    out = [
        "# Benchmarks: throughput with kcat",
        "",
        "Generated by `bench/throughput.py` (`make bench`); the section marked as notes is hand-written",
        "and kept when the script rewrites this file.",
        "",
        f"- date: {started} (the whole run took {elapsed_s:.0f} s)",
        f"- machine: {machine['nproc']} cores, {machine['cpu']}, {machine['memory']} RAM, "
        f"Linux {machine['kernel']}, Python {machine['python']}; shared with other work, "
        f"so every figure is the median of {runs} runs taken in interleaved rounds",
        f"- client: {machine['client']} (Debian package), on the same machine as the broker",
        "- broker: one broker of a local cluster (`LocalCluster(dir).up(brokers=1)`), default config",
        "  (no fsync: log.flush.interval.messages unset, as in Kafka)",
        "",
        "## Results",
        "",
        "MB = 10^6 bytes of record values (the payload; the log and the wire carry ~2–10 % more in",
        "batch and record headers). \"vs limit\": produce ÷ the page-cache write limit, consume ÷ the",
        "loopback TCP copy limit, both medians of this run. CPU s/GB: user + system CPU seconds per GB",
        "of payload, of kcat and of the broker process; other load: cores used by everything else on",
        "the machine during the runs (other people's work, kernel writeback).",
        "",
        *table(figures, runs),
        "",
        aim,
        "",
        "Where the CPU went (medians; cores = CPU seconds per second of the run; a ceiling is the",
        "payload rate one side would reach with a core to itself and the other side free):",
        "",
        *cpu_reading(figures),
        "",
        "## How it was measured",
        "",
        f"- produce: one new topic (1 partition) per run, auto-created and led before timing; kcat",
        f"  reads a payload file of newline-separated records ({produce_case}; random printable",
        f"  bytes); the time runs from starting kcat to its exit, which comes after the last delivery",
        f"  report; the topic's end offset is checked afterwards:",
        f"  `{shlex.join(produce_argv('HOST:PORT', 'TOPIC', Path('FILE'), 1))}` (and `acks=-1`)",
        f"- produce per codec: the same with `-X compression.codec=` none, gzip, snappy, lz4 or",
        f"  zstd, acks=1, of compressible records ({codec_case}: words of a 15-word",
        f"  vocabulary after a counter, about 3-5x smaller compressed)",
        f"- consume: topics written once before the rounds with the producer settings above, so in",
        f"  batches of ~1 MB ({consume_case}); read from the beginning to the end with 1 MiB fetches;",
        f"  kcat's exit message is checked for the last offset:",
        f"  `{shlex.join(consume_argv('HOST:PORT', 'TOPIC'))} >/dev/null`",
        f"- disk write: {DISK_WRITE_BYTES // MIB} MiB in 1 MiB `os.write` calls to a new file on the file",
        f"  system of the broker's log dir (files kept until the end, as a growing log keeps its",
        f"  pages); with fdatasync: the same plus one fdatasync, included in the time",
        f"- loopback: two processes, one TCP connection on 127.0.0.1, {LOOPBACK_BYTES // MIB} MiB as",
        f"  1 MiB `sendall` calls received with `recv_into` a 1 MiB buffer; the sendfile variant",
        f"  sends {SENDFILE_BYTES // MIB} MiB with `os.sendfile` from a cached 256 MiB file",
        f"- each round runs every figure once: the limits, then produce, then consume, the produce",
        f"  and consume cases rotated from round to round; {runs} rounds",
        "",
        NOTES_BEGIN,
        notes.strip("\n"),
        NOTES_END,
        "",
    ]
    return "\n".join(out)


def existing_notes(path: Path) -> str:
    if not path.exists():
        return "\n## Notes\n\n(none yet)\n"
    text = path.read_text()
    start, end = text.find(NOTES_BEGIN), text.find(NOTES_END)
    if start < 0 or end < start:
        return "\n## Notes\n\n(none yet)\n"
    return text[start + len(NOTES_BEGIN):end]


# ---- main ------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="rounds; each figure's median is over them")
    parser.add_argument("--dir", type=Path, default=None,
                        help="where to put the cluster and files (default: a new temporary dir)")
    parser.add_argument("--no-doc", action="store_true", help=f"do not rewrite {DOC.relative_to(REPO)}")
    parser.add_argument("--json", type=Path, default=None, help="also write every sample as JSON")
    args = parser.parse_args(argv)
    if shutil.which("kcat") is None:
        print("kcat is not installed (Debian package kcat; `make setup` installs it)", file=sys.stderr)
        return 2
    from kafkactl.cluster.local import LocalCluster  # installed into .venv by `make setup`

    started = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    t0 = time.monotonic()
    root = Path(tempfile.mkdtemp(prefix="kafkactl-bench-", dir=args.dir))
    cluster = LocalCluster(root / "cluster")
    try:
        status = cluster.up(brokers=1, overrides={})
        broker = status.broker(1)
        log_dir = Path(broker.log_dirs[0])
        workdir = root / "work"
        workdir.mkdir()
        if os.stat(workdir).st_dev != os.stat(log_dir).st_dev:
            raise RuntimeError(f"{workdir} and the log dir {log_dir} are on different file systems")
        print(f"broker pid {broker.pid} at {status.bootstrap_servers}, log dir {log_dir}", flush=True)
        bench = Bench(workdir, status.bootstrap_servers, broker.pid)
        print("preparing payloads and consume topics ...", flush=True)
        bench.prepare()
        for index in range(args.runs):
            round_t0 = time.monotonic()
            bench.round(index)
            print(f"round {index + 1}/{args.runs} done in {time.monotonic() - round_t0:.1f} s", flush=True)
        bench.recycled_write(args.runs)
    finally:
        cluster.down(purge=True)
        shutil.rmtree(root, ignore_errors=True)
    elapsed = time.monotonic() - t0
    machine = machine_description()
    print()
    print("\n".join(table(bench.figures, args.runs)))
    print()
    print("\n".join(cpu_reading(bench.figures)))
    if args.json:
        args.json.write_text(json.dumps(
            {name: [vars(s) for s in f.samples] for name, f in bench.figures.items()}, indent=1))
    if not args.no_doc:
        DOC.write_text(render(bench.figures, machine, args.runs, started, elapsed, existing_notes(DOC)))
        print(f"\nwritten to {DOC.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
