"""The length pre-check in front of kio: every request the broker accepts, valid
frames pass whole, hostile lengths are refused before kio sees them.

Each case prints its replay line on failure: the api key, version and seed.
"""

from __future__ import annotations

import random
import struct
import subprocess
import sys

import pytest

from kafkactl.cluster.broker.broker_client import encode_request
from kafkactl.cluster.protocol import apis, control
from kafkactl.cluster.protocol.bounds import check_request_body, read_uvarint
from kafkactl.cluster.protocol.codec import decode_request, request_class
from kafkactl.cluster.protocol.framing import FrameError
from support.kio_samples import sample

SEEDS_PER_VERSION = 25


def accepted_versions() -> list[tuple[int, int]]:
    """Every (api_key, version) the dispatcher hands to a decoder."""
    pairs = [(key, version)   # served, or read to answer UNSUPPORTED_VERSION
             for key, versions in apis.SUPPORTED.items()
             for version in versions.decoded()]
    pairs += list(control.VERSIONS.items())
    return sorted(pairs)


def frame_of(request) -> memoryview:
    """The request frame without its size prefix, as the network layer hands it over."""
    return memoryview(encode_request(request, 7, "client")[4:])


def body_offset(frame: memoryview) -> int:
    """Where the body starts: after the header (v2 when flexible)."""
    api_key, version = struct.unpack_from(">hh", frame, 0)
    (client_id_length,) = struct.unpack_from(">h", frame, 8)
    offset = 10 + max(client_id_length, 0)
    return offset + (1 if request_class(api_key, version).__flexible__ else 0)


@pytest.mark.parametrize("api_key,version", accepted_versions())
def test_valid_requests_of_every_accepted_version_pass_whole(api_key, version):
    cls = request_class(api_key, version)
    for seed in range(SEEDS_PER_VERSION):
        frame = frame_of(sample(cls, random.Random(seed)))
        try:
            check_request_body(cls, frame, body_offset(frame))
            if api_key != apis.PRODUCE or version < 3:   # Produce v3+ bodies have their own reader
                decode_request(frame, api_key, version)
        except FrameError as error:
            pytest.fail(f"replay: api_key={api_key} version={version} seed={seed}: {error}")


# The reproducers of issue 11, each a whole frame with its size prefix.
ABORTING_FRAMES = {
    "DescribeConfigs v4 configuration_keys count 0xfffffffe":
        "00000014002000040000000900017800020201ffffffff0f",
    "Metadata v12 topics count 0xfffffffe":
        "000000110003000c0000000900017800ffffffff0f",
    "Fetch v12 topics count 0xfffffffe":
        "0000002a0001000c0000000900017800ffffffff000001f400000001000003e80000000000ffffffffffffffff0f",
    "DescribeConfigs v4 resources null":
        "0000001000200004000000090001780000000000",
}


DECODE_IN_A_CHILD = """
import struct, sys
from kafkactl.cluster.protocol.codec import decode_request
from kafkactl.cluster.protocol.framing import FrameError
frame = memoryview(bytes.fromhex(sys.argv[1])[4:])
try:
    decode_request(frame, *struct.unpack_from(">hh", frame, 0))
except FrameError as error:
    print("FrameError:", error)
"""


@pytest.mark.parametrize("name", sorted(ABORTING_FRAMES))
def test_the_frames_that_aborted_the_broker_are_parse_errors(name):
    # In a child process: before the pre-check these aborted the interpreter itself.
    child = subprocess.run([sys.executable, "-c", DECODE_IN_A_CHILD, ABORTING_FRAMES[name]],
                           capture_output=True, text=True, timeout=60)
    assert child.returncode == 0, f"{name}: the decoder died ({child.returncode}): {child.stderr[-500:]}"
    assert child.stdout.startswith("FrameError: malformed"), child.stdout


def test_the_message_names_the_field_and_the_bytes_that_remain():
    frame = memoryview(bytes.fromhex(ABORTING_FRAMES["Metadata v12 topics count 0xfffffffe"])[4:])
    with pytest.raises(FrameError, match=r"MetadataRequest\.topics: array length 4294967294"):
        decode_request(frame, 3, 12)


def legacy_array_count_frame(count: int) -> memoryview:
    """Metadata v1 (not flexible) with an int32 topics count and no elements."""
    return memoryview(struct.pack(">hhih", 3, 1, 9, 0) + struct.pack(">i", count))


@pytest.mark.parametrize("count", [2**31 - 1, 1000, 1, -2])
def test_a_legacy_array_count_beyond_the_remaining_bytes_is_refused(count):
    with pytest.raises(FrameError):
        decode_request(legacy_array_count_frame(count), 3, 1)


def test_an_array_whose_elements_cannot_fit_is_refused_before_any_is_read():
    # 3 remaining bytes cannot hold 2 topics of at least 2 bytes each (an int16 name length).
    frame = memoryview(struct.pack(">hhih", 3, 1, 9, 0) + struct.pack(">i", 2) + b"\x00\x01x")
    with pytest.raises(FrameError, match="at least 2 bytes"):
        decode_request(frame, 3, 1)


def test_a_string_longer_than_what_remains_is_refused():
    frame = memoryview(struct.pack(">hhih", 3, 1, 9, 0) + struct.pack(">ih", 1, 30000) + b"abc")
    with pytest.raises(FrameError, match="MetadataRequestTopic.name"):
        decode_request(frame, 3, 1)


def test_null_where_the_schema_forbids_it_is_refused_and_allowed_where_nullable():
    nullable_topics = memoryview(struct.pack(">hhih", 3, 1, 9, 0) + struct.pack(">i", -1))
    _, request = decode_request(nullable_topics, 3, 1)   # Metadata v1: topics are nullable
    assert request.topics is None
    fetch_topics_null = bytes.fromhex(ABORTING_FRAMES["Fetch v12 topics count 0xfffffffe"])[4:]
    with pytest.raises(FrameError, match="null where the schema requires"):
        decode_request(memoryview(fetch_topics_null.replace(b"\xff\xff\xff\xff\x0f", b"\x00", 1)), 1, 12)


@pytest.mark.parametrize("encoded,ok", [
    (b"\x7f", 127), (b"\xff\xff\xff\xff\x0f", 2**32 - 1),
    (b"\xff\xff\xff\xff\xff\x01", None),   # 6 bytes: Kafka refuses it
    (b"\x80", None),                        # runs past the end
])
def test_unsigned_varints_are_at_most_five_bytes(encoded, ok):
    view = memoryview(encoded)
    if ok is None:
        with pytest.raises(FrameError):
            read_uvarint(view, 0, len(view))
    else:
        assert read_uvarint(view, 0, len(view)) == (ok, len(encoded))


def test_a_tagged_field_must_fit_and_a_known_one_fill_its_bytes():
    # Fetch v12 with tagged field 0 (cluster_id, a compact string) declared 5 bytes long
    # whose string says 1 byte: the known tag does not fill its size.
    cls = request_class(1, 12)
    good = frame_of(sample(cls, random.Random(1)))
    offset = body_offset(good)
    body = bytes(good[offset:])
    assert body.endswith(b"\x00")   # the sample set no top-level tag (seed 1)
    head = bytes(good[:offset]) + body[:-1]
    for tags, refused in [(b"\x01\x00\x03\x02x\x00", True),    # the string ends before the tag's size
                          (b"\x01\x00\x09\x02x", True),         # the size runs past the frame
                          (b"\x01\x00\x02\x02x", False)]:       # exact
        frame = memoryview(head + tags)
        if refused:
            with pytest.raises(FrameError):
                check_request_body(cls, frame, offset)
        else:
            check_request_body(cls, frame, offset)


def mutations(frame: bytes, rng: random.Random):
    """Edits that hit declared lengths: bytes set to extremes, varints widened, cuts."""
    data = bytearray(frame)
    for _ in range(rng.randint(1, 3)):
        kind = rng.random()
        if len(data) <= 8:
            break   # cut down to the header: nothing left to edit
        position = rng.randrange(8, len(data))
        if kind < 0.4:
            data[position] = rng.choice((0x00, 0x7F, 0x80, 0xFF, 0xFE, 0x01))
        elif kind < 0.6:
            data[position:position] = rng.choice((b"\xff\xff\xff\xff\x0f", b"\x7f\xff\xff\xff",
                                                  b"\xff\xff\xff\xff\xff\xff\x01"))
        elif kind < 0.8:
            del data[position:]
        else:
            data[position:position + 4] = rng.randbytes(4)
    return bytes(data)


@pytest.mark.parametrize("api_key,version", accepted_versions())
def test_mutated_frames_decode_or_raise_frame_error_never_anything_else(api_key, version):
    cls = request_class(api_key, version)
    for seed in range(40):
        rng = random.Random(seed)
        frame = memoryview(mutations(bytes(frame_of(sample(cls, rng))), rng))
        try:
            decode_request(frame, api_key, version)
        except FrameError:
            pass
        except Exception as error:   # a TypeError here would reach a handler as a traceback
            pytest.fail(f"replay: api_key={api_key} version={version} seed={seed}: "
                        f"{type(error).__name__}: {error}")
