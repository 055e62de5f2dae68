"""The C record walk (cluster/protocol/_record_check.c) against the Python reference.

record_validation.check_records runs the C walk; check_records_reference is
the same pass in Python, the executable form of the rules in the module doc.
Both must give the same verdict and the same message on every payload: the
unit tests' batches (test_record_validation.py's fixture `both_walkers`) and,
here, seeded random mutations of valid payloads.

Memory safety: the C walk gets each mutated payload in a buffer of exactly its
length (a ctypes array, one allocation of that size), so a build with
-fsanitize=address reports any read past it (docs/benchmarks.md says how that
run is made).
"""

from __future__ import annotations

import os
import random

import pytest

from kafkactl.cluster.protocol import record_validation
from kafkactl.cluster.protocol.record_batch import HEADER_SIZE, build_batch, validate_batches
from kafkactl.cluster.protocol.record_validation import RecordValidationError, check_records_reference
from support.payload_mutations import exact_buffer, mutate_payload

MUTATIONS = 25_000
SEEDS_ENV = "RECORD_CHECK_SEEDS"   # replay: a comma-separated list of seeds
THIS = "tests/unit/cluster/protocol/test_record_check_native.py"
BASE_TIMESTAMP = 1_700_000_000_000


def outcome(check, data, record_count: int, compacted: str | None = None):
    try:
        check(data, record_count, 3, compacted)
    except RecordValidationError as error:
        return error.error_code, str(error), error.record_errors
    return None


# --- the native walk is the one that runs ------------------------------------------------

def test_the_native_walk_is_built_and_is_the_one_used(monkeypatch):
    """A broken build must fail here, not fall back to the Python walk (3x slower produce)."""
    from kafkactl.cluster.protocol import _record_check

    assert _record_check.__file__.endswith(".so")
    assert record_validation._native_walk is _record_check.check_records
    seen = []

    def spy(data, record_count):
        seen.append(record_count)
        return _record_check.check_records(data, record_count)

    monkeypatch.setattr(record_validation, "_native_walk", spy)
    monkeypatch.setattr(record_validation, "check_records_reference", None)   # not called
    batch = build_batch([(b"k", b"v", None, BASE_TIMESTAMP)] * 3)
    record_validation.validate_produce_records(batch, validate_batches(batch, 1 << 30), False)
    assert seen == [3]


@pytest.mark.parametrize("kind", [bytes, bytearray, memoryview, exact_buffer, "slice"])
def test_every_buffer_kind_is_read_in_place(kind):
    payload = build_batch([(b"k", b"v" * i, [("h", b"x")], BASE_TIMESTAMP) for i in range(5)])[HEADER_SIZE:]
    data = memoryview(b"xx" + payload + b"yy")[2:-2] if kind == "slice" else kind(payload)
    assert record_validation._native_walk(data, 5) is None
    last = len(build_batch([(b"k", b"v" * 4, [("h", b"x")], BASE_TIMESTAMP)])) - HEADER_SIZE
    assert record_validation._native_walk(data, 4) == (-1, f"{last} bytes after the last of its 4 records")
    assert outcome(record_validation.check_records, data, 4) == outcome(check_records_reference, payload, 4)


def test_what_is_not_a_contiguous_byte_buffer_is_refused():
    with pytest.raises(TypeError):
        record_validation._native_walk("text", 1)
    with pytest.raises((TypeError, BufferError)):
        record_validation._native_walk(memoryview(bytes(10))[::2], 1)


def test_a_huge_declared_count_stops_at_the_payloads_end():
    detail = "missing: the batch declares 4611686018427387904 records but its payload ends after 0"
    assert record_validation._native_walk(b"", 1 << 62) == (0, detail)


def test_a_payload_above_the_gil_release_size_is_checked_the_same():
    """Above 64 KiB the walk runs without the GIL: same answers."""
    entries = [(None, b"v" * 1000, None, BASE_TIMESTAMP)] * 300
    payload = bytearray(build_batch(entries)[HEADER_SIZE:])
    assert len(payload) > 256 << 10
    assert outcome(record_validation.check_records, payload, 300) is None
    payload[-1] = 7   # the last record's headerCount
    got = outcome(record_validation.check_records, payload, 300)
    assert got == outcome(check_records_reference, payload, 300) and got is not None


# --- random mutations of valid payloads --------------------------------------------------

def _bases() -> list[tuple[bytes, int]]:
    """Valid payloads (uncompressed records) and their record counts, covering each field's forms."""
    rng = random.Random(11)
    bases = []
    for count, key, value, headers, step in [
        (1, b"k", b"v", None, 1),
        (3, None, None, None, 1),
        (4, b"key", b"value", [("h1", b"x"), ("h2", None), ("", b"")], 1000),
        (70, None, b"v" * 20, None, 1),                               # offsetDelta of 2 bytes
        (2, b"k" * 200, b"w" * 300, [("h" * 70, b"x" * 130)], 1),     # 2-byte lengths
        (5, b"", b"", [("a", b"b")] * 3, -(1 << 40)),                 # long timestamp deltas
    ]:
        entries = [(key, value, headers, BASE_TIMESTAMP + i * step) for i in range(count)]
        bases.append((build_batch(entries)[HEADER_SIZE:], count))
    # a 10-byte varlong timestampDelta, written by hand: length, attributes, delta, offsetDelta, key, value, headers
    fields = b"\x00" + b"\xff" * 9 + b"\x01" + b"\x00" + b"\x02k" + b"\x02v" + b"\x00"
    bases.append((bytes([len(fields) * 2]) + fields, 1))
    bases.append((bytes(rng.randrange(256) for _ in range(40)), 2))   # noise
    return bases


BASES = _bases()
def mutate(seed: int) -> tuple[bytes, int, list[str]]:
    """A mutated base payload, the record count to declare, and what was done (for the replay line)."""
    rng = random.Random(seed)
    base, count = BASES[rng.randrange(len(BASES))]
    data = bytearray(base)
    count, done = mutate_payload(rng, data, count)
    return bytes(data), count, done


@pytest.mark.parametrize("compacted", [None, "t-0"])   # K1: null keys refused on a compacted topic
def test_random_mutations_agree_with_the_reference(compacted):
    seeds = ([int(s) for s in os.environ[SEEDS_ENV].split(",")] if os.environ.get(SEEDS_ENV)
             else range(MUTATIONS))
    failures, refused = [], 0
    for seed in seeds:
        data, count, done = mutate(seed)
        expected = outcome(check_records_reference, data, count, compacted)
        got = outcome(record_validation.check_records, exact_buffer(data), count, compacted)
        refused += expected is not None
        if got != expected:
            failures.append(f"seed {seed} ({', '.join(done)}): native {got!r} != reference {expected!r}\n"
                            f"  replay: {SEEDS_ENV}={seed} .venv/bin/pytest -q {THIS}::"
                            "test_random_mutations_agree_with_the_reference")
    assert not failures, f"{len(failures)} of {len(seeds)} seeds disagree:\n" + "\n".join(failures[:20])
    if len(seeds) == MUTATIONS:   # the mutations reach the refusals, not only valid payloads
        assert MUTATIONS * 0.5 < refused < MUTATIONS
