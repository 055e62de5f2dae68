"""CPU cost of the leader's record validation (cluster/protocol/record_validation.py).

    .venv/bin/python bench/record_validation.py [--repeat 15]

Builds one ~1 MiB batch (uncompressed size) per record size (100 B, 1 KiB)
and codec, of compressible records (words of a small vocabulary, as
bench/throughput.py sends), and times what Log.check_produce adds to the CRC
pass: decompression (bounded) and the record pass, the latter both as the
broker runs it (the C walk, _record_check.c) and in the Python reference
(check_records_reference). Prints the median and the best of `--repeat`
runs, per MiB of uncompressed records and per record, next to the CRC32C
pass every batch already had. A measurement, not a test.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import crc32c

from kafkactl.cluster.protocol.record_batch import CODEC_NAMES, HEADER_SIZE, build_batch, parse_header
from kafkactl.cluster.protocol.record_validation import (
    check_records,
    check_records_reference,
    uncompressed_records,
)

MIB = 1 << 20
WORDS = [b"kafka", b"broker", b"partition", b"offset", b"leader", b"replica", b"segment",
         b"fetch", b"produce", b"batch", b"record", b"topic", b"ok", b"error", b"id="]


def value(rng: random.Random, size: int, index: int) -> bytes:
    line = bytearray(b"%d " % index)
    while len(line) < size:
        line += rng.choice(WORDS) + b" "
    return bytes(line[:size])


def one_mib_batch(value_bytes: int, codec: int) -> tuple[bytes, int]:
    """A batch of ~1 MiB of records (null keys, as kcat -l sends) and its record count."""
    rng = random.Random(value_bytes)
    count = MIB // (value_bytes + 12)   # ~12 bytes of record framing each
    entries = [(None, value(rng, value_bytes, i), None, 1_700_000_000_000 + i) for i in range(count)]
    return build_batch(entries, codec=codec), count


def timed(function, repeat: int) -> tuple[float, float]:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        function()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples), min(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    print("| records | codec | wire bytes | records/batch | CRC32C ms | decompress ms/MiB "
          "| record pass µs/record: C (Python) | record pass ms/MiB: C (Python) "
          "| whole check ms/MiB median (best): C | same with the Python pass | ratio |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for value_bytes in (100, 1024):
        for codec in CODEC_NAMES:
            batch, count = one_mib_batch(value_bytes, codec)
            header = parse_header(batch)
            payload = memoryview(batch)[HEADER_SIZE:]
            records = uncompressed_records(codec, payload, 0)
            mib = len(records) / MIB
            crc, _ = timed(lambda: crc32c.crc32c(memoryview(batch)[21:]), args.repeat)
            decompress, _ = timed(lambda: uncompressed_records(codec, payload, 0), args.repeat)
            walk_c, _ = timed(lambda: check_records(records, header.record_count, 0), args.repeat)
            walk_py, _ = timed(lambda: check_records_reference(records, header.record_count, 0), args.repeat)
            whole_c, best_c = timed(
                lambda: check_records(uncompressed_records(codec, payload, 0), header.record_count, 0), args.repeat)
            whole_py, best_py = timed(
                lambda: check_records_reference(uncompressed_records(codec, payload, 0), header.record_count, 0),
                args.repeat)
            print(f"| {value_bytes} B | {CODEC_NAMES[codec]} | {len(batch):,} | {count:,} | {crc * 1e3:.3f} "
                  f"| {decompress * 1e3 / mib:.2f} "
                  f"| {walk_c * 1e6 / count:.3f} ({walk_py * 1e6 / count:.2f}) "
                  f"| {walk_c * 1e3 / mib:.2f} ({walk_py * 1e3 / mib:.1f}) "
                  f"| {whole_c * 1e3 / mib:.2f} ({best_c * 1e3 / mib:.2f}) "
                  f"| {whole_py * 1e3 / mib:.1f} ({best_py * 1e3 / mib:.1f}) | {whole_py / whole_c:.1f}x |")

if __name__ == "__main__":
    main()
