"""Blocking socket helpers for tests that speak the wire protocol by hand."""

from __future__ import annotations

import socket


def read_exactly(sock: socket.socket, size: int) -> bytes:
    """`size` bytes from `sock`; ConnectionError if it closes first."""
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("closed by the peer")
        data += chunk
    return bytes(data)


def closed_by_peer(sock: socket.socket, timeout_s: float) -> bool:
    """Whether the peer closes (or resets) `sock` within `timeout_s`; a byte
    it sends instead counts as not closed."""
    sock.settimeout(timeout_s)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False
