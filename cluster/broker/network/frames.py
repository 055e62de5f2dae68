"""Request frames as their bytes arrive, and the bound on bytes being read.

A connection's buffer holds only what was received: a 4-byte size prefix
announcing 100 MB costs 4 bytes until the 100 MB actually arrive (the size is
still checked against `socket.request.max.bytes` as soon as the prefix is
in). Nothing is allocated for the declared size up front.

`MemoryPool` is KIP-72's `queued.max.request.bytes`: the bytes held by
requests being read or handled, broker-wide. When it is exhausted a client
connection is not read until memory is released; -1 (Kafka's default) leaves
it unbounded, and then memory stays proportional to the bytes received.
"""

from __future__ import annotations

import select
import socket
import threading

from kafkactl.cluster.protocol.framing import check_frame_size

RECEIVE_CHUNK_BYTES = 64 * 1024   # at most this much is received per read


class ConnectionClosed(Exception):
    pass


class FrameBuffer:
    """Bytes received on one connection and not yet handed out as frames.

    Owned by whichever thread owns the connection at the time (the selector
    while it is idle, a worker while its requests are handled)."""

    __slots__ = ("_data", "_max_frame_bytes")

    def __init__(self, max_frame_bytes: int) -> None:
        self._data = bytearray()
        self._max_frame_bytes = max_frame_bytes

    def __len__(self) -> int:
        return len(self._data)

    def append(self, chunk) -> None:
        # bytearray grows by about 1/8 beyond what it holds, so the buffer
        # stays within ~1.125x the bytes received.
        self._data += chunk

    def wanted(self) -> int:
        """Bytes still missing from the frame being received (the size prefix
        counts); FrameError when its size is out of bounds."""
        data = self._data
        if len(data) < 4:
            return 4 - len(data)
        size = check_frame_size(data[:4], self._max_frame_bytes)
        return max(4 + size - len(data), 0)

    def has_frame(self) -> bool:
        return self.wanted() == 0

    def next_frame(self) -> memoryview | None:
        """The next whole frame (after its size prefix) as a read-only view it
        alone refers to, or None while it is incomplete."""
        if self.wanted():
            return None
        data = self._data
        end = 4 + int.from_bytes(data[:4], "big")
        if len(data) == end:
            self._data = bytearray()
        elif len(data) - end <= end:
            self._data = data[end:]    # the next frames' first bytes: the smaller part moves
            del data[end:]
        else:
            frame = data[:end]
            del data[:end]             # cheap: bytearray drops a prefix without moving the rest
            data = frame
        return memoryview(data)[4:].toreadonly()

    def clear(self) -> int:
        """Drop everything; returns how many bytes were held."""
        held = len(self._data)
        self._data = bytearray()
        return held


class MemoryPool:
    """Bytes held by requests being read or handled, across the broker.

    `reserve` is asked before every receive; the bytes not received, and a
    frame's bytes once it is handled, are given back with `release`. A bound
    of -1 never refuses (the count is still kept, for tests and metrics).
    Inter-broker connections reserve with `force`: replication is never
    stopped by client requests holding the pool."""

    def __init__(self, bound_bytes: int = -1) -> None:
        self.bound_bytes = bound_bytes
        self._used = 0
        self._lock = threading.Lock()

    @property
    def used(self) -> int:
        return self._used

    def reserve(self, wanted: int, force: bool = False) -> int:
        with self._lock:
            if self.bound_bytes < 0 or force:
                granted = wanted
            else:
                granted = max(min(wanted, self.bound_bytes - self._used), 0)
            self._used += granted
            return granted

    def release(self, count: int) -> None:
        if count:
            with self._lock:
                self._used -= count


def receive_into(connection: socket.socket, frames: FrameBuffer, pool: MemoryPool,
                 scratch: memoryview, force: bool = False) -> int:
    """One receive of what the socket has, accounted in `pool`: the bytes
    received (0: the pool is exhausted, nothing was read). ConnectionClosed at
    end of stream; BlockingIOError and socket.timeout pass through."""
    granted = pool.reserve(len(scratch), force)
    if not granted:
        # Nothing may be read, but a peer that went away must still be seen
        # (its connection would otherwise hold its bytes of the pool), also
        # with unread bytes queued before its FIN: POLLRDHUP tells.
        if peer_gone(connection):
            raise ConnectionClosed()
        return 0
    count = 0
    try:
        count = connection.recv_into(scratch, granted)
    finally:
        pool.release(granted - count)
    if count == 0:
        raise ConnectionClosed()
    frames.append(scratch[:count])
    return count


def peer_gone(connection: socket.socket) -> bool:
    poller = select.poll()
    poller.register(connection, select.POLLRDHUP)
    return bool(poller.poll(0))


class FrameReader:
    """Blocking reads of one connection's frames, on the same incremental
    buffer (the socket's timeout bounds each receive)."""

    def __init__(self, connection: socket.socket, max_frame_bytes: int) -> None:
        self._connection = connection
        self._frames = FrameBuffer(max_frame_bytes)
        self._pool = MemoryPool()
        self._scratch = memoryview(bytearray(RECEIVE_CHUNK_BYTES))

    def held_bytes(self) -> int:
        return len(self._frames)

    def read(self) -> memoryview:
        while True:
            frame = self._frames.next_frame()
            if frame is not None:
                return frame
            receive_into(self._connection, self._frames, self._pool, self._scratch)


def recv_exactly_into(connection: socket.socket, view: memoryview, closed=ConnectionClosed) -> None:
    """Fill `view` from the connection; `closed()` is raised at end of stream.

    No SO_RCVLOWAT at the frame's size, though it would wake the reader
    once per frame rather than once per loopback segment: tried, a follower
    was seen asleep with 870 KB of a 1 MB response queued and its leader done
    sending, until the request timed out (the kernel wakes a reader, and
    poll() reports it readable, only once the mark is reached; and setting
    the mark clamps the receive window to it)."""
    received, size = 0, len(view)
    while received < size:
        count = connection.recv_into(view[received:], size - received)
        if count == 0:
            raise closed()
        received += count
