"""Decompressing record batch payloads, for the few paths that read records.

Batches are stored and served as they came. Looking up an offset by
timestamp (ListOffsets) needs each record's timestamp, so it decompresses one
batch at a time through here. The leader's produce validation decompresses
with bounded output of its own (record_validation.py).
Formats are the ones Kafka's clients write: gzip; snappy in the xerial
framing of snappy-java (or raw); the LZ4 frame format; zstd frames.
"""

from __future__ import annotations

import struct
import zlib

from kafkactl.cluster import fatal

CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD = 1, 2, 3, 4
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER_SIZE = 16  # magic, version int32, compatible version int32
# A decompressed batch cannot exceed what a batch may hold; bounds zstd output.
MAX_DECOMPRESSED_BYTES = 1 << 30


class DecompressionError(ValueError):
    pass


def decompress(codec: int, payload: bytes) -> bytes:
    try:
        if codec == CODEC_GZIP:
            return zlib.decompress(payload, 47)  # 32 + 15: gzip or zlib header
        if codec == CODEC_SNAPPY:
            return _snappy(payload)
        if codec == CODEC_LZ4:
            import lz4.frame
            return lz4.frame.decompress(payload)
        if codec == CODEC_ZSTD:
            import zstandard
            return zstandard.ZstdDecompressor().decompress(payload, max_output_size=MAX_DECOMPRESSED_BYTES)
    except DecompressionError:
        raise
    except Exception as error:  # each library raises its own kinds
        fatal.halt_if_fatal(error, f"decompressing codec {codec}")
        raise DecompressionError(f"codec {codec}: {error}") from None
    raise DecompressionError(f"unknown codec {codec}")


def _snappy(payload: bytes) -> bytes:
    import snappy

    if not payload.startswith(_XERIAL_MAGIC):
        return snappy.uncompress(payload)
    out = bytearray()
    position = _XERIAL_HEADER_SIZE
    while position < len(payload):
        if position + 4 > len(payload):
            raise DecompressionError("snappy: truncated xerial block length")
        (length,) = struct.unpack_from(">i", payload, position)
        position += 4
        if length < 0 or position + length > len(payload):
            raise DecompressionError("snappy: xerial block runs past the payload")
        out += snappy.uncompress(payload[position:position + length])
        position += length
    return bytes(out)


def compress(codec: int, data: bytes) -> bytes:
    """The inverse, in the formats clients write (used to build test batches)."""
    if codec == CODEC_GZIP:
        import gzip
        return gzip.compress(data, mtime=0)
    if codec == CODEC_SNAPPY:
        import snappy
        block = snappy.compress(data)
        return _XERIAL_MAGIC + struct.pack(">ii", 1, 1) + struct.pack(">i", len(block)) + block
    if codec == CODEC_LZ4:
        import lz4.frame
        return lz4.frame.compress(data)
    if codec == CODEC_ZSTD:
        import zstandard
        return zstandard.ZstdCompressor().compress(data)
    raise ValueError(f"unknown codec {codec}")
