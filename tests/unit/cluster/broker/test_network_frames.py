"""Receive buffers hold only what arrived; queued.max.request.bytes bounds the
bytes of requests being read (network/frames.py)."""

import socket
import struct
import threading

import pytest

from kafkactl.cluster.broker.network.frames import (
    ConnectionClosed, FrameBuffer, FrameReader, MemoryPool, receive_into,
)
from kafkactl.cluster.protocol.framing import FrameError

HUGE_PREFIX = bytes.fromhex("06400000 00030001")   # 100 MiB announced, 4 bytes of header sent


def frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


def test_a_100_mb_size_prefix_then_4_bytes_holds_8_bytes():
    client, server = socket.socketpair()
    try:
        client.sendall(HUGE_PREFIX)
        frames = FrameBuffer(max_frame_bytes=104857600)
        pool = MemoryPool()
        scratch = memoryview(bytearray(64 * 1024))
        assert receive_into(server, frames, pool, scratch) == 8
        assert len(frames) == 8 and pool.used == 8
        assert frames.wanted() == 104857600 - 4 and frames.next_frame() is None
    finally:
        client.close()
        server.close()


def test_the_blocking_reader_grows_with_the_bytes_received():
    client, server = socket.socketpair()
    server.settimeout(0.5)
    reader = FrameReader(server, max_frame_bytes=104857600)
    try:
        client.sendall(HUGE_PREFIX)
        with pytest.raises(socket.timeout):
            reader.read()                     # waits for the rest; holds what came
        assert reader.held_bytes() == 8
    finally:
        client.close()
        server.close()


def test_frames_are_cut_whole_from_what_arrived_in_any_pieces():
    frames = FrameBuffer(1 << 20)
    a, b, c = b"\x00\x03\x00\x01" + b"a" * 10, b"\x00\x03\x00\x01" + b"b" * 100_000, b"\x00\x03\x00\x01" + b"c" * 6
    stream = frame(a) + frame(b) + frame(c)
    received = []
    for start in range(0, len(stream), 7_777):
        frames.append(stream[start:start + 7_777])
        while (view := frames.next_frame()) is not None:
            received.append(bytes(view))
            assert view.readonly
    assert received == [a, b, c] and len(frames) == 0


def test_a_frame_larger_than_socket_request_max_bytes_is_refused_from_its_prefix():
    frames = FrameBuffer(max_frame_bytes=1000)
    frames.append(struct.pack(">i", 1001))
    with pytest.raises(FrameError, match="socket.request.max.bytes=1000"):
        frames.wanted()


def test_end_of_stream_is_connection_closed():
    client, server = socket.socketpair()
    client.close()
    with pytest.raises(ConnectionClosed):
        receive_into(server, FrameBuffer(100), MemoryPool(), memoryview(bytearray(16)))
    server.close()


def test_the_pool_grants_up_to_its_bound_and_forced_reservations_pass():
    pool = MemoryPool(bound_bytes=100)
    assert pool.reserve(60) == 60
    assert pool.reserve(60) == 40          # only what is left
    assert pool.reserve(10) == 0
    assert pool.reserve(10, force=True) == 10   # inter-broker: never stopped
    assert pool.used == 110
    pool.release(70)
    assert pool.reserve(60) == 60 and pool.used == 100
    unbounded = MemoryPool()
    assert unbounded.reserve(10**9) == 10**9


def test_an_exhausted_pool_reads_nothing_and_a_release_resumes():
    client, server = socket.socketpair()
    try:
        client.sendall(b"x" * 300)
        pool = MemoryPool(bound_bytes=128)
        frames = FrameBuffer(1 << 20)
        scratch = memoryview(bytearray(1024))
        assert receive_into(server, frames, pool, scratch) == 128
        assert receive_into(server, frames, pool, scratch) == 0      # nothing read, nothing lost
        assert len(frames) == 128 and pool.used == 128
        pool.release(frames.clear())
        assert receive_into(server, frames, pool, scratch) == 128
    finally:
        client.close()
        server.close()
