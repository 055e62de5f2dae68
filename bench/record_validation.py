"""CPU cost of the leader's record validation (cluster/protocol/record_validation.py).

    .venv/bin/python bench/record_validation.py [--repeat 15]

Builds one ~1 MiB batch (uncompressed size) per record size (100 B, 1 KiB)
and codec, of compressible records (words of a small vocabulary, as
bench/throughput.py sends), and times what Log.check_produce adds to the CRC
pass: decompression (bounded) and the record pass. Prints the median and the
best of `--repeat` runs, per MiB of uncompressed records and per record,
next to the CRC32C pass every batch already had. A measurement, not a test.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import crc32c

from kafkactl.cluster.protocol.record_batch import CODEC_NAMES, HEADER_SIZE, build_batch, parse_header
from kafkactl.cluster.protocol.record_validation import check_records, uncompressed_records

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
    print("| records | codec | wire bytes | records/batch | CRC32C ms | validation ms/MiB median (best) "
          "| µs/record median | decompression share |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for value_bytes in (100, 1024):
        for codec in CODEC_NAMES:
            batch, count = one_mib_batch(value_bytes, codec)
            header = parse_header(batch)
            payload = memoryview(batch)[HEADER_SIZE:]
            uncompressed_mib = len(uncompressed_records(codec, payload, 0)) / MIB
            crc, _ = timed(lambda: crc32c.crc32c(memoryview(batch)[21:]), args.repeat)

            def validate():
                check_records(uncompressed_records(codec, payload, 0), header.record_count, 0)

            median, best = timed(validate, args.repeat)
            decompress, _ = timed(lambda: uncompressed_records(codec, payload, 0), args.repeat)
            print(f"| {value_bytes} B | {CODEC_NAMES[codec]} | {len(batch):,} | {count:,} | {crc * 1e3:.3f} "
                  f"| {median * 1e3 / uncompressed_mib:.1f} ({best * 1e3 / uncompressed_mib:.1f}) "
                  f"| {median * 1e6 / count:.2f} | {decompress / median:.0%} |")


if __name__ == "__main__":
    main()
