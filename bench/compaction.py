"""Log compaction speed against this machine's disk write limit, measured in the same run.

    .venv/bin/python bench/compaction.py            # 3 rounds, ~64 MB logs
    .venv/bin/python bench/compaction.py --runs 5 --mb 128

Each round, in a temporary directory on the file system of the repository
(override with --dir):
- a compacted log (segment.bytes 8 MiB) of keyed records written through
  the Log API, as a produce would write it: --keys keys updated in rounds
  of 50-record batches, 100-byte values, uncompressed and lz4;
- one clean of it (cluster/log/log_clean.py, unthrottled, one thread): MB/s
  is the log's size below the active segment over the clean's wall time
  (the cleaner reads it twice: once for the offset map, once to copy), and
  over the CPU time the process spent on it ("per CPU second": on a shared
  machine the wall time also counts the other processes' turns);
- the limits, in the same round: sequential 1 MiB writes of the same size
  to a new file, through the page cache, and with fdatasync at the end
  (the cleaner fsyncs each segment it writes).
Every figure is the median of the rounds. This is a measurement, not a test.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MB = 1_000_000
CHUNK = 1 << 20


def build_log(directory: Path, size_bytes: int, keys: int, codec: int):
    from kafkactl.cluster.log.config import LogConfig
    from kafkactl.cluster.log.log import Log
    from kafkactl.cluster.protocol.record_batch import build_batch

    config = LogConfig(segment_bytes=8 << 20, cleanup_policy="compact", file_delete_delay_ms=0)
    log = Log.open(str(directory / "bench-0"), "bench", 0, config, lambda: int(time.time() * 1000), 0, True)
    value = os.urandom(50).hex().encode()   # 100 bytes, incompressible enough to count as data
    timestamp = int(time.time() * 1000)
    written = key = 0
    while written < size_bytes:
        batch = build_batch([(b"key-%08d" % ((key + i) % keys), value, None, timestamp) for i in range(50)],
                            codec=codec)
        key += 50
        log.append_as_leader(batch, 0)
        written += len(batch)
    log.append_as_leader(build_batch([(b"last", b"x", None, timestamp)]), 0)
    log.flush()
    return log


def clean_once(log) -> tuple[float, float, int, int]:
    """(seconds, CPU seconds, bytes below the active segment, bytes written) of
    one unthrottled clean, with a cleaner thread's defaults (one thread, the
    default log.cleaner.dedupe.buffer.size)."""
    from kafkactl.cluster.log.cleaner import CleanerConfig
    from kafkactl.cluster.log.compaction import offset_map_capacity
    from kafkactl.cluster.log.log_clean import clean_log

    buffer = CleanerConfig().dedupe_buffer_size
    below = sum(s.size_bytes for s in log.cleaner_view().segments[:-1])
    started, started_cpu = time.perf_counter(), time.process_time()
    result = clean_log(log, 0, log.log_end_offset, int(time.time() * 1000), offset_map_capacity(buffer, 1),
                       lambda _size: True, memory_bytes=buffer)
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - started_cpu
    assert result is not None and result.end_offset == log.active_segment_base_offset
    return seconds, cpu_seconds, below, result.bytes_written


def disk_write(path: Path, size: int, sync: bool) -> float:
    """MB/s of sequential 1 MiB writes to a new file (with fdatasync at the end if `sync`)."""
    block = os.urandom(CHUNK)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        started = time.perf_counter()
        for _ in range(size // CHUNK):
            os.write(fd, block)
        if sync:
            os.fdatasync(fd)
        return size // CHUNK * CHUNK / (time.perf_counter() - started) / MB
    finally:
        os.close(fd)
        os.unlink(path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--mb", type=int, default=64, help="size of each log, MB")
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--dir", type=Path, default=REPO)
    args = parser.parse_args()
    from kafkactl.cluster.protocol.record_batch import CODEC_LZ4, CODEC_NONE

    figures: dict[str, list[float]] = {}
    kept: dict[str, list[float]] = {}
    for run in range(args.runs):
        root = Path(tempfile.mkdtemp(prefix="bench-compaction-", dir=args.dir))
        try:
            for name, codec in (("none", CODEC_NONE), ("lz4", CODEC_LZ4)):
                log = build_log(root / name, args.mb * MB, args.keys, codec)
                try:
                    seconds, cpu_seconds, below, written = clean_once(log)
                finally:
                    log.close()
                figures.setdefault(f"compaction ({name})", []).append(below / seconds / MB)
                figures.setdefault(f"compaction ({name}), per CPU second", []).append(below / cpu_seconds / MB)
                kept.setdefault(name, []).append(written / below)
            figures.setdefault("disk write, page cache", []).append(disk_write(root / "w", args.mb * MB, False))
            figures.setdefault("disk write, fdatasync", []).append(disk_write(root / "s", args.mb * MB, True))
        finally:
            shutil.rmtree(root, ignore_errors=True)
        print(f"round {run + 1}/{args.runs}: " + ", ".join(f"{k} {v[-1]:.1f}" for k, v in figures.items()),
              file=sys.stderr)
    synced = statistics.median(figures["disk write, fdatasync"])
    cached = statistics.median(figures["disk write, page cache"])
    print(f"compaction of a {args.mb} MB log ({args.keys:,} keys, 100-byte values), median of {args.runs} rounds")
    print("| figure | median MB/s | runs (MB/s) | vs fdatasync write | vs page cache write |")
    print("|---|---:|---|---:|---:|")
    for name, values in figures.items():
        median = statistics.median(values)
        runs = " ".join(f"{v:.1f}" for v in values)
        print(f"| {name} | {median:.1f} | {runs} | {median / synced:.3f} | {median / cached:.3f} |")
    for name, ratios in kept.items():
        print(f"bytes written / bytes read ({name}): {statistics.median(ratios):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
