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
