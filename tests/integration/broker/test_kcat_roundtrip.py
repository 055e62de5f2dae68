"""kcat (librdkafka 2.0.2) produces 100,000 keyed messages with headers and reads
them back byte-exact, uncompressed and with every codec; the batches stored in
the segment files keep the codec the producer chose."""

from __future__ import annotations

import subprocess

import pytest
from support.broker_support import CODEC_IDS, assert_contiguous, partition_dir, require_tools, stored_batches
from support.names import unique_topic

MESSAGES = 100_000
HEADERS = ("name=value", "trace=kcat-1")
FORMAT = r"%k\t%s\t%h\t%o\n"


def _messages() -> list[tuple[bytes, bytes]]:
    # Compressible values (librdkafka sends a batch uncompressed when that is
    # smaller), with a ':' after the key delimiter and non-ASCII bytes.
    filler = "lorem ipsum dolor sit amet, " * 3
    return [(f"key-{i:06d}".encode(), f"value:{i:06d}:{filler}grüße-{i % 97}".encode())
            for i in range(MESSAGES)]


@pytest.fixture(scope="module")
def input_file(tmp_path_factory):
    require_tools("kcat")
    path = tmp_path_factory.mktemp("kcat") / "messages.txt"
    messages = _messages()
    path.write_bytes(b"".join(key + b":" + value + b"\n" for key, value in messages))
    return path, messages


def _kcat(*args: str, timeout_s: float = 120) -> subprocess.CompletedProcess:
    done = subprocess.run(["kcat", *args], capture_output=True, timeout=timeout_s)
    assert done.returncode == 0, f"kcat {' '.join(args)} failed: {done.stderr.decode(errors='replace')}"
    return done


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_kcat_round_trip_is_byte_exact(shared_cluster, input_file, codec):
    _, status = shared_cluster
    path, messages = input_file
    topic = unique_topic(f"kcat-{codec}")
    bootstrap = status.bootstrap_servers

    produce = ["-P", "-b", bootstrap, "-t", topic, "-p", "0", "-K:", "-X", "acks=all"]
    for header in HEADERS:
        produce += ["-H", header]
    if codec != "none":
        produce += ["-z", codec]
    _kcat(*produce, "-l", str(path))

    consumed = _kcat("-C", "-b", bootstrap, "-t", topic, "-p", "0", "-e", "-q",
                     "-o", "beginning", "-f", FORMAT).stdout
    header_text = ",".join(HEADERS).encode()
    expected = b"".join(b"%s\t%s\t%s\t%d\n" % (key, value, header_text, offset)
                        for offset, (key, value) in enumerate(messages))
    if consumed != expected:
        got = consumed.split(b"\n")
        want = expected.split(b"\n")
        first = next(i for i, (a, b) in enumerate(zip(got, want + [b""] * len(got))) if a != b)
        pytest.fail(f"{len(got) - 1} lines consumed, {len(want) - 1} expected; first difference "
                    f"at line {first}: got {got[first]!r}, expected {want[first]!r}")

    batches = stored_batches(partition_dir(status, topic))
    assert assert_contiguous(batches) == MESSAGES
    codecs = {batch.codec for batch in batches}
    wanted = CODEC_IDS[codec]
    assert codecs <= {0, wanted}, f"stored codecs {codecs}, producer sent {codec}"
    compressed = sum(b.record_count for b in batches if b.codec == wanted)
    # librdkafka may leave a tiny first batch uncompressed; nearly all must be.
    assert compressed >= 0.99 * MESSAGES, (
        f"only {compressed} of {MESSAGES} records stored in {codec} batches")
