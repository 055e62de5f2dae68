"""The log cleaner's C record passes (cluster/protocol/_record_filter.c) against the Python reference.

The reference is record_filter.split_records (the walk) composed with
compaction.offset_map and compaction.survives (the rules). On random
batches and on random mutations of them, collect_keys and keep_records
must give what the reference gives, or refuse with the same message; a
refused collect_keys must leave the map as it was.

Memory safety: each payload is handed to C in a buffer of exactly its length
(support.payload_mutations.exact_buffer), so a build with
-fsanitize=address reports any read past it (docs/benchmarks.md says how
that run is made).
"""

from __future__ import annotations

import os
import random

import pytest

from kafkactl.cluster.log.compaction import RecordSummary, offset_map, survives
from kafkactl.cluster.protocol import _record_filter
from kafkactl.cluster.protocol.record_batch import HEADER_SIZE, CorruptRecordError, build_batch, parse_header
from kafkactl.cluster.protocol.record_filter import OffsetMap, collect_keys, keep_records, split_records
from support.payload_mutations import exact_buffer, mutate_payload

RANDOM_BATCHES = 3_000
MUTATIONS = 8_000
SEEDS_ENV = "RECORD_FILTER_SEEDS"   # replay: a comma-separated list of seeds
THIS = "tests/unit/cluster/protocol/test_record_filter_native.py"
T = 1_700_000_000_000


# --- the reference, and both sides' outcomes ----------------------------------------------

def summaries(records):
    return [RecordSummary(r.offset, r.key, r.is_tombstone) for r in records]


def reference_collect(payload, count, base, last_delta, first_dirty, start: dict):
    found = dict(start)
    try:
        records = split_records(payload, count, base, last_delta)
    except CorruptRecordError as error:
        return "refused", str(error), found
    found.update(offset_map(s for s in summaries(records) if s.offset >= first_dirty))
    return len(records), found


def native_collect(payload, count, base, last_delta, first_dirty, start: dict):
    found = offset_map_of(start)
    try:
        records = _record_filter.collect_keys(exact_buffer(payload), count, last_delta, base, first_dirty, found)
    except ValueError as error:
        return "refused", str(error), dict(found.items())
    return records, dict(found.items())


def reference_keep(payload, count, base, last_delta, latest: dict, retain: bool):
    try:
        records = split_records(payload, count, base, last_delta)
    except CorruptRecordError as error:
        return "refused", str(error)
    kept = [r for r, s in zip(records, summaries(records)) if survives(s, latest, retain)]
    data = None if records and len(kept) == len(records) else b"".join(payload[r.start:r.end] for r in kept)
    return len(records), len(kept), data, max((r.timestamp_delta for r in kept), default=None)


def native_keep(payload, count, base, last_delta, latest: dict, retain: bool):
    try:
        return _record_filter.keep_records(exact_buffer(payload), count, last_delta, base, offset_map_of(latest),
                                           retain)
    except ValueError as error:
        return "refused", str(error)


def offset_map_of(entries: dict) -> OffsetMap:
    result = OffsetMap()
    for key, offset in entries.items():
        result.put(key, offset)
    return result


# --- random batches and what to ask of them -----------------------------------------------

KEY_POOL = [b"", b"a", b"b", b"key-1", b"key-2", b"k" * 200]


def random_case(rng: random.Random):
    """(payload, record count, base offset, lastOffsetDelta, latest, first dirty, retain tombstones)."""
    count = rng.choice((1, 1, 2, 5, 16, 17, 40))
    entries = []
    for i in range(count):
        key = rng.choice(KEY_POOL + [None, bytes(rng.randrange(256) for _ in range(rng.randrange(1, 20)))])
        value = rng.choice((None, b"", b"v", b"w" * rng.randrange(300)))
        headers = rng.choice((None, [("h", b"x")], [("h1", None), ("", b"")]))
        entries.append((key, value, headers, T + rng.choice((0, i, -i * 1000, i << 40))))
    base = rng.choice((0, 7, 1 << 40, 2**63 - 30))
    payload = build_batch(entries)[HEADER_SIZE:]
    keys = [e[0] for e in entries if e[0] is not None] + KEY_POOL
    latest = {rng.choice(keys): min(base + rng.randrange(-3, count + 3), 2**63 - 1)
              for _ in range(rng.randrange(count + 3))}
    if rng.random() < 0.05:
        latest[rng.choice(keys)] = rng.choice((-(2**63), 2**63 - 1))
    first_dirty = min(base + rng.randrange(-2, count + 2), 2**63 - 1)
    return payload, count, base, count - 1, latest, first_dirty, rng.random() < 0.5


def case(seed: int, mutated: bool):
    rng = random.Random(seed)
    payload, count, base, last_delta, latest, first_dirty, retain = random_case(rng)
    done: list[str] = []
    if mutated:
        data = bytearray(payload)
        count, done = mutate_payload(rng, data, count)
        payload = bytes(data)
        if rng.random() < 0.1:
            last_delta = rng.choice((-1, 0, last_delta - 1, last_delta + 1, 2**31 - 1))
            done.append(f"lastOffsetDelta {last_delta}")
    return (payload, count, base, last_delta, latest, first_dirty, retain), done


def seeds(default: int) -> list[int]:
    if os.environ.get(SEEDS_ENV):
        return [int(s) for s in os.environ[SEEDS_ENV].split(",")]
    return list(range(default))


@pytest.mark.parametrize("mutated", [False, True], ids=["random batches", "mutations"])
def test_the_native_passes_agree_with_the_reference(mutated):
    failures, refused = [], 0
    chosen = seeds(MUTATIONS if mutated else RANDOM_BATCHES)
    for seed in chosen:
        (payload, count, base, last_delta, latest, first_dirty, retain), done = case(seed, mutated)
        expected = reference_collect(payload, count, base, last_delta, first_dirty, latest)
        got = native_collect(payload, count, base, last_delta, first_dirty, latest)
        expected_keep = reference_keep(payload, count, base, last_delta, latest, retain)
        got_keep = native_keep(payload, count, base, last_delta, latest, retain)
        refused += expected_keep[0] == "refused"
        if got != expected or got_keep != expected_keep:
            failures.append(f"seed {seed} ({', '.join(done)}): native {got!r} / {got_keep!r} != reference "
                            f"{expected!r} / {expected_keep!r}\n  replay: {SEEDS_ENV}={seed} .venv/bin/pytest -q "
                            f"{THIS}::test_the_native_passes_agree_with_the_reference")
    assert not failures, f"{len(failures)} of {len(chosen)} seeds disagree:\n" + "\n".join(failures[:10])
    if len(chosen) == MUTATIONS and mutated:   # the mutations reach the refusals, and not only them
        assert MUTATIONS * 0.3 < refused < MUTATIONS * 0.95
    elif len(chosen) == RANDOM_BATCHES:        # valid batches: only the offset overflow refuses
        assert refused < RANDOM_BATCHES * 0.3


# --- what the differential test relies on, shown once --------------------------------------

def batch(entries, base_offset=0):
    data = build_batch([(k, v, None, T + i) for i, (k, v) in enumerate(entries)], base_offset)
    return parse_header(data), memoryview(data)[HEADER_SIZE:]


def test_the_native_passes_are_built_not_a_fallback():
    assert _record_filter.__file__.endswith(".so")
    assert OffsetMap is _record_filter.OffsetMap


def test_collect_keys_keeps_each_keys_last_offset_from_the_first_dirty_one_on():
    header, payload = batch([(b"a", b"1"), (b"b", b"2"), (b"a", b"3"), (None, b"4"), (b"c", None)], base_offset=10)
    found = OffsetMap()
    assert collect_keys(header, payload, 11, found) == 5
    assert sorted(found.items()) == [(b"a", 12), (b"b", 11), (b"c", 14)]


def test_keep_records_answers_none_when_all_survive_and_the_bytes_of_those_that_do():
    header, payload = batch([(b"a", b"1"), (b"b", b"2"), (b"c", None)], base_offset=10)
    assert keep_records(header, payload, OffsetMap(), True) == (3, 3, None, 2)
    latest = offset_map_of({b"a": 50})
    records = split_records(bytes(payload), 3, 10, 2)
    assert keep_records(header, payload, latest, True) == (3, 2, bytes(payload[records[1].start:]), 2)
    # past the delete horizon the tombstone goes too; nothing left: no bytes, no timestamp
    assert keep_records(header, payload, latest, False) == (3, 1, bytes(payload[records[1].start:records[1].end]), 1)
    assert keep_records(header, payload, offset_map_of({b"a": 50, b"b": 50, b"c": 50}), True) == (3, 0, b"", None)


def test_a_batch_that_cannot_be_read_adds_no_key_and_names_its_record():
    header, payload = batch([(b"a", b"1"), (b"b", b"2")], base_offset=10)
    found = offset_map_of({b"z": 1})
    with pytest.raises(CorruptRecordError, match=r"batch at offset 10: record 1: length 8 does not fit the payload"):
        collect_keys(header, bytes(payload)[:-2], 0, found)   # record 0 was readable: its key is not kept either
    assert found.items() == [(b"z", 1)]
    with pytest.raises(CorruptRecordError, match=r"record 0: offsetDelta 0 outside the batch's 0..-1"):
        keep_records(header._replace(last_offset_delta=-1), payload, found, True)


def test_the_offset_map_holds_many_keys_exactly():
    m = OffsetMap()
    keys = [b"key-%d" % i for i in range(50_000)] + [b"", b"\x00", b"\x00\x00", b"x" * 10_000]
    for offset, key in enumerate(keys):
        m.put(key, offset)
    m.put(b"key-7", 10**12)
    assert len(m) == len(keys)
    assert m.get(b"key-7") == 10**12 and m.get(b"") == 50_000 and m.get(b"\x00\x00") == 50_002
    assert m.get(b"missing") is None and m.get(b"missing", -1) == -1
    assert dict(m.items()) == {**{k: i for i, k in enumerate(keys)}, b"key-7": 10**12}
    assert m.__sizeof__() >= 24 * len(keys)


def test_merging_a_segments_map_counts_and_takes_its_new_keys():
    latest, found = offset_map_of({b"a": 1, b"b": 2}), offset_map_of({b"b": 5, b"c": 6})
    assert latest.new_keys(found) == 1 and found.new_keys(latest) == 1
    latest.update(found)
    latest.update(latest)
    assert sorted(latest.items()) == [(b"a", 1), (b"b", 5), (b"c", 6)]


def test_what_is_not_an_offset_map_or_a_buffer_is_refused():
    header, payload = batch([(b"a", b"1")])
    with pytest.raises(TypeError):
        _record_filter.keep_records(payload, 1, 0, 0, {b"a": 1}, True)
    with pytest.raises(TypeError):
        _record_filter.collect_keys("text", 1, 0, 0, 0, OffsetMap())
    with pytest.raises(TypeError):
        OffsetMap().update({b"a": 1})
    with pytest.raises(TypeError):
        OffsetMap(5)
