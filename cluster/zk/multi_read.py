"""Reading many znodes in few requests: ZooKeeper's multiRead (3.6+).

kazoo sends one request per get_async and wakes its I/O thread for each, so
10,000 partition states cost 10,000 requests and as many Python round trips
through that thread (3.6 s here). multiRead (opcode 22) carries many getData
operations in one request and answers them in one response, each with its own
result: a missing znode fails only its own operation. kazoo has no call for it,
so this module defines the request and hands it to kazoo's request queue.
ZooKeeper before 3.6 answers UNIMPLEMENTED; `get_many` then falls back to
pipelined get_async calls.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from kazoo.exceptions import EXCEPTIONS, NoNodeError, UnimplementedError
from kazoo.protocol.paths import _prefix_root
from kazoo.protocol.states import ZnodeStat

from kafkactl.cluster.zk.client import wait

MULTI_READ = 22
GET_DATA = 4
ERROR = -1
PATHS_PER_REQUEST = 1000          # a response of 1,000 partition states is ~200 KB

_HEADER = struct.Struct("!iBi")   # type, done, err
_INT = struct.Struct("!i")
_STAT = struct.Struct("!qqqqiiiqiiq")


class MultiRead(NamedTuple):
    """A kazoo request object (type, serialize, deserialize) for multiRead of getData."""

    paths: tuple[str, ...]
    type: int = MULTI_READ

    def serialize(self) -> bytes:
        parts = []
        for path in self.paths:
            encoded = path.encode()
            parts += (_HEADER.pack(GET_DATA, False, -1), _INT.pack(len(encoded)), encoded, b"\x00")  # no watch
        parts.append(_HEADER.pack(-1, True, -1))
        return b"".join(parts)

    @staticmethod
    def deserialize(buffer, offset: int) -> list:
        """One entry per path: (data, ZnodeStat), or the exception kazoo would raise."""
        results = []
        while True:
            kind, done, _ = _HEADER.unpack_from(buffer, offset)
            offset += _HEADER.size
            if done:
                return results
            if kind == GET_DATA:
                (length,) = _INT.unpack_from(buffer, offset)
                offset += _INT.size
                data = b"" if length < 0 else bytes(buffer[offset:offset + length])
                offset += max(length, 0)
                results.append((data, ZnodeStat._make(_STAT.unpack_from(buffer, offset))))
                offset += _STAT.size
            elif kind == ERROR:
                (code,) = _INT.unpack_from(buffer, offset)
                offset += _INT.size
                results.append(EXCEPTIONS[code]())
            else:
                raise ValueError(f"multiRead response with an operation of type {kind}")


def get_many(client, paths: list[str], timeout_s: float) -> list:
    """(data, stat) or an exception (NoNodeError…) for each path, in order."""
    if not hasattr(client, "_call"):          # not kazoo (the unit tests' stand-in)
        return _one_by_one(client, paths, timeout_s)
    chunks = [paths[i:i + PATHS_PER_REQUEST] for i in range(0, len(paths), PATHS_PER_REQUEST)]
    pending = [_send(client, chunk) for chunk in chunks]
    results: list = []
    for chunk, result in zip(chunks, pending):
        try:
            answered = wait(result, timeout_s)
        except UnimplementedError:            # ZooKeeper before 3.6
            return _one_by_one(client, paths, timeout_s)
        if len(answered) != len(chunk):
            raise ValueError(f"multiRead of {len(chunk)} paths answered {len(answered)} results")
        results += answered
    return results


def _send(client, paths: list[str]):
    async_result = client.handler.async_result()
    client._call(MultiRead(tuple(_prefix_root(client.chroot, p) for p in paths)), async_result)
    return async_result


def _one_by_one(client, paths: list[str], timeout_s: float) -> list:
    pending = [client.get_async(path) for path in paths]
    results = []
    for result in pending:
        try:
            results.append(wait(result, timeout_s))
        except NoNodeError as error:  # per path, as multiRead answers it
            results.append(error)
    return results
