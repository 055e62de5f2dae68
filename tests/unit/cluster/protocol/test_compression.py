import pytest

from kafkactl.cluster.log.config import LogConfig
from kafkactl.cluster.log.log import Log
from kafkactl.cluster.protocol.compression import DecompressionError, compress, decompress
from kafkactl.cluster.protocol.record_batch import (
    CODEC_GZIP, CODEC_LZ4, CODEC_SNAPPY, CODEC_ZSTD, build_batch, decode_records, validate_batches,
)

CODECS = [CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD]
T = 1_700_000_000_000


@pytest.mark.parametrize("codec", CODECS)
def test_round_trip(codec):
    data = b"kafka " * 5000
    packed = compress(codec, data)
    assert len(packed) < len(data) // 10
    assert decompress(codec, packed) == data


def test_snappy_uses_the_xerial_framing_clients_write():
    assert compress(CODEC_SNAPPY, b"x" * 100).startswith(b"\x82SNAPPY\x00")


@pytest.mark.parametrize("codec", CODECS)
def test_garbage_is_a_typed_error(codec):
    with pytest.raises(DecompressionError):
        decompress(codec, b"\x00not compressed at all" * 3)


@pytest.mark.parametrize("codec", CODECS)
def test_compressed_batches_decode_and_validate(codec):
    records = [(b"k%d" % i, b"v" * 50, [("h", b"1")], T + 10 * i) for i in range(20)]
    batch = build_batch(records, codec=codec)
    assert validate_batches(batch, 1 << 20)[0].codec == codec
    assert [(r.key, r.timestamp, r.headers) for r in decode_records(batch)] == [
        (k, ts, h) for k, _, h, ts in records]


@pytest.mark.parametrize("codec", CODECS)
def test_offset_for_timestamp_is_exact_inside_compressed_batches(tmp_path, codec):
    log = Log.open(str(tmp_path / "t-0"), "t", 0, LogConfig(), lambda: T, 0, True)
    for first in range(0, 60, 20):
        log.append_as_leader(build_batch(
            [(None, b"v", None, T + 10 * i) for i in range(first, first + 20)], codec=codec), 0)
    assert log.offset_for_timestamp(T + 1) == (1, T + 10)
    assert log.offset_for_timestamp(T - 5) == (0, T)
    assert log.offset_for_timestamp(T + 255) == (26, T + 260)
    assert log.offset_for_timestamp(T + 10_000) is None
    log.close()
