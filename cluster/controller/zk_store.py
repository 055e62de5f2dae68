"""The controller's ZooKeeper access: election, fenced writes, pipelined reads.

Election is one multi: create the ephemeral `/controller` and bump
`/controller_epoch` conditionally on its version. Every later write is fenced
by a check of `/controller_epoch`'s version, so a controller that has been
replaced (its epoch bumped by a successor) can no longer change anything:
the check fails and `ControllerMovedError` tells it to resign.

Writes go in batches of `batch_size` operations per multi, several multis in
flight at once: thousands of partition-state updates cost a handful of round
trips instead of one each. A multi is all-or-nothing, so when a batch fails
(say one partition's version moved), its operations are retried one multi
each to learn exactly which failed; the others still succeed.
"""

from __future__ import annotations

import logging
import struct
from dataclasses import dataclass
from typing import NamedTuple, Union

from kazoo.exceptions import EXCEPTIONS, BadVersionError, NodeExistsError, NoNodeError, RolledBackError
from kazoo.protocol.paths import _prefix_root
from kazoo.security import OPEN_ACL_UNSAFE

from kafkactl.cluster.zk import codecs, layout, multi_read
from kafkactl.cluster.zk.client import wait

log = logging.getLogger(__name__)

DEFAULT_BATCH_SIZE = 1000         # ~150 KB of partition states, well under jute.maxbuffer (1 MB)
DEFAULT_TIMEOUT_S = 10.0
ELECTION_RETRIES = 5


class ControllerMovedError(RuntimeError):
    """/controller_epoch changed under us: another controller took over."""


# Operations are tuples: a failover writes 10,000s of states, one operation
# each, and a tuple is built faster than a frozen dataclass. Each kind is its
# own class (dispatch is by type, never by comparing operations).

class SetData(NamedTuple):
    path: str
    data: bytes
    version: int = -1


class Create(NamedTuple):
    path: str
    data: bytes = b""
    sequential: bool = False


class Delete(NamedTuple):
    path: str
    version: int = -1


ZkOp = Union[SetData, Create, Delete]


@dataclass(frozen=True, slots=True)
class ControllerEpoch:
    epoch: int
    zk_version: int   # of /controller_epoch after our bump: the fencing token


class OpResult(NamedTuple):
    # A tuple: a failover writes 10,000s of states, one result each, and a
    # tuple is built several times faster than a frozen dataclass.
    op: ZkOp
    error: Exception | None = None
    zk_version: int = -1          # new version for SetData; 0 for Create
    created_path: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


class ZkControllerStore:
    def __init__(self, client, timeout_s: float = DEFAULT_TIMEOUT_S,
                 batch_size: int = DEFAULT_BATCH_SIZE) -> None:
        self.client = client
        self.timeout_s = timeout_s
        self.batch_size = batch_size

    # --- election

    def elect(self, broker_id: int, timestamp_ms: int) -> ControllerEpoch | None:
        """Become controller, or None if another broker is controller now."""
        for _ in range(ELECTION_RETRIES):
            epoch, version = self._read_controller_epoch()
            transaction = self.client.transaction()
            transaction.create(layout.CONTROLLER, codecs.encode_controller(broker_id, timestamp_ms),
                               ephemeral=True)
            transaction.set_data(layout.CONTROLLER_EPOCH, codecs.encode_controller_epoch(epoch + 1), version)
            results = wait(transaction.commit_async(), self.timeout_s)
            if not any(isinstance(r, Exception) for r in results):
                return ControllerEpoch(epoch + 1, results[1].version)
            if isinstance(results[0], NodeExistsError):
                return None
            log.info("controller epoch moved during election; retrying")
        return None

    def _read_controller_epoch(self) -> tuple[int, int]:
        try:
            data, stat = wait(self.client.get_async(layout.CONTROLLER_EPOCH), self.timeout_s)
            return codecs.decode_controller_epoch(data), stat.version
        except NoNodeError:
            try:
                wait(self.client.create_async(layout.CONTROLLER_EPOCH, codecs.encode_controller_epoch(0)),
                     self.timeout_s)
            except NodeExistsError:
                pass
            return self._read_controller_epoch()

    # --- fenced writes

    def write(self, ops: list[ZkOp], controller_epoch: ControllerEpoch) -> list[OpResult]:
        """Apply ops fenced by the controller epoch; one result per op, in order."""
        # Each batch is queued as soon as it is encoded: kazoo's I/O thread
        # sends the first while the next ones are encoded.
        pending = []
        for i in range(0, len(ops), self.batch_size):
            batch = ops[i:i + self.batch_size]
            pending.append((batch, self._commit_async(batch, controller_epoch)))
        results: list[OpResult] = []
        for batch, future in pending:
            outcome = wait(future, self.timeout_s)
            self._raise_if_fenced(outcome)
            if any(isinstance(r, Exception) for r in outcome):
                results.extend(self._one_by_one(batch, controller_epoch))
            else:
                results.extend(map(_result, batch, outcome[1:]))
        return results

    def _commit_async(self, ops: list[ZkOp], controller_epoch: ControllerEpoch):
        """One multi: the /controller_epoch check first, then `ops`."""
        client = self.client
        if not hasattr(client, "_call"):          # not kazoo: its own transaction API
            transaction = client.transaction()
            transaction.check(layout.CONTROLLER_EPOCH, controller_epoch.zk_version)
            for op in ops:
                _add(transaction, op)
            return transaction.commit_async()
        # Encoded here, straight to the bytes kazoo's Transaction would send:
        # kazoo builds a request object per operation and serializes them one
        # by one, which for 10,000 operations costs more than the decision.
        acl = client.default_acl or OPEN_ACL_UNSAFE
        request = EncodedMulti(encode_multi(ops, controller_epoch.zk_version, client.chroot or "", acl), len(ops))
        async_result = client.handler.async_result()
        client._call(request, async_result)
        return async_result

    def _one_by_one(self, ops: list[ZkOp], controller_epoch: ControllerEpoch) -> list[OpResult]:
        pending = [(op, self._commit_async([op], controller_epoch)) for op in ops]
        results = []
        for op, future in pending:
            outcome = wait(future, self.timeout_s)
            self._raise_if_fenced(outcome)
            error = outcome[1] if isinstance(outcome[1], Exception) else None
            results.append(OpResult(op, error) if error else _result(op, outcome[1]))
        return results

    @staticmethod
    def _raise_if_fenced(outcome: list) -> None:
        if isinstance(outcome[0], BadVersionError):
            raise ControllerMovedError("/controller_epoch moved: another controller was elected")
        if isinstance(outcome[0], NoNodeError):
            raise ControllerMovedError("/controller_epoch is gone")

    # --- pipelined reads

    def get_many(self, paths: list[str], watch=None) -> dict[str, tuple[bytes, object] | None]:
        if watch is None and len(paths) > 1:
            # A failover reads every partition state: few multiRead requests.
            return {path: None if isinstance(node, NoNodeError) else _raise_if_error(node)
                    for path, node in zip(paths, multi_read.get_many(self.client, paths, self.timeout_s))}
        pending = {path: self.client.get_async(path, watch=watch) for path in paths}
        results = {}
        for path, future in pending.items():
            try:
                results[path] = wait(future, self.timeout_s)
            except NoNodeError:
                results[path] = None
        return results

    def children(self, path: str, watch=None) -> list[str]:
        try:
            return wait(self.client.get_children_async(path, watch=watch), self.timeout_s)
        except NoNodeError:
            return []

    def exists(self, path: str, watch=None):
        return wait(self.client.exists_async(path, watch=watch), self.timeout_s)


def _add(transaction, op: ZkOp) -> None:
    if isinstance(op, SetData):
        transaction.set_data(op.path, op.data, op.version)
    elif isinstance(op, Create):
        transaction.create(op.path, op.data, sequence=op.sequential)
    elif isinstance(op, Delete):
        transaction.delete(op.path, op.version)
    else:
        raise TypeError(f"not a ZooKeeper op: {op!r}")


_new_tuple = tuple.__new__


def _result(op: ZkOp, raw) -> OpResult:
    if type(raw) is int and type(op) is SetData:
        return _new_tuple(OpResult, (op, None, raw, None))     # the common case, without keyword parsing
    if isinstance(raw, RolledBackError):
        return OpResult(op, raw)
    if isinstance(op, SetData):
        # EncodedMulti answers the new version; kazoo's Transaction a ZnodeStat.
        return OpResult(op, zk_version=raw if type(raw) is int else raw.version)
    if isinstance(op, Create):
        return OpResult(op, zk_version=0, created_path=raw)
    return OpResult(op)


def _raise_if_error(node):
    if isinstance(node, Exception):
        raise node
    return node


# --- the multi request (ZooKeeper opcode 14), encoded directly
#
# Jute, ZooKeeper's wire format: ints big-endian; a string or buffer is its
# int length and bytes (length -1: null; kazoo also writes -1 for an empty
# string, and so do we, to send exactly its bytes). A multi is a sequence of
# (header, operation) pairs closed by a header with done set:
#   header   type int, done bool (1 byte), err int (-1 in requests)
#   check    path, version int                        (type 13)
#   setData  path, data buffer, version int           (type 5)
#   create   path, data, acl vector, flags int        (type 1)
#   delete   path, version int                        (type 2)
# The response has the same shape: per operation a header and its result
# (create: the path; setData: the znode's stat; check, delete: nothing; a
# failed or rolled-back operation: type -1 and its error code).

MULTI = 14
OP_CREATE, OP_DELETE, OP_SET_DATA, OP_CHECK, OP_ERROR = 1, 2, 5, 13, -1
FLAG_SEQUENTIAL = 2

_INT = struct.Struct(">i")
_HEADER = struct.Struct(">iBi")
_OP_AND_LENGTH = struct.Struct(">iBii")        # an operation's header and its path's length
_CLOSE = _HEADER.pack(-1, True, -1)
_STAT_SIZE = 68                                  # czxid..pzxid: 4 longs, 3 ints, a long, 2 ints, a long
_STAT_VERSION_AT = 32                            # after czxid, mzxid, ctime, mtime
_OP_TYPES = (SetData, Create, Delete)


def _string(text: str) -> bytes:
    if not text:
        return b"\xff\xff\xff\xff"
    encoded = text.encode()
    return _INT.pack(len(encoded)) + encoded


def _chrooted(root: str, path: str) -> str:
    """`path` under the client's chroot, as kazoo's _prefix_root makes it:
    for an already normal absolute path that is plain concatenation; anything
    else (relative, doubled or trailing slashes, dots) goes through kazoo."""
    if path[:1] == "/" and "//" not in path and "/." not in path and path[-1] != "/":
        return root + path
    return _prefix_root(root, path)


def encode_multi(ops: list[ZkOp], check_version: int, chroot: str = "", acl=OPEN_ACL_UNSAFE,
                 check_path: str = layout.CONTROLLER_EPOCH) -> bytes:
    """The body of a multi request (what follows the xid and the opcode):
    check(`check_path`, `check_version`) and then `ops`, byte for byte what
    kazoo's Transaction.serialize returns for the same operations."""
    root = _prefix_root(chroot, "/") if chroot else ""
    if root == "/":
        root = ""
    pack_op, pack_int = _OP_AND_LENGTH.pack, _INT.pack
    acl_bytes = _INT.pack(len(acl)) + b"".join(
        _INT.pack(entry.perms) + _string(entry.id.scheme) + _string(entry.id.id) for entry in acl)
    path = _chrooted(root, check_path).encode()
    parts = [pack_op(OP_CHECK, False, -1, len(path)), path, pack_int(check_version)]
    append = parts.append
    for op in ops:
        kind = type(op)
        if kind not in _OP_TYPES:
            raise TypeError(f"not a ZooKeeper op: {op!r}")
        path = _chrooted(root, op.path).encode()
        if kind is not Delete:
            # setData and create both start with the path and the data (a
            # length of -1 for none).
            append(pack_op(OP_SET_DATA if kind is SetData else OP_CREATE, False, -1, len(path)))
            append(path)
            data = op.data
            append(b"\xff\xff\xff\xff" if data is None else pack_int(len(data)))
            if data:
                append(data)
            if kind is SetData:
                append(pack_int(op.version))
            else:
                append(acl_bytes)
                append(pack_int(FLAG_SEQUENTIAL if op.sequential else 0))
        else:
            append(pack_op(OP_DELETE, False, -1, len(path)))
            append(path)
            append(pack_int(op.version))
    append(_CLOSE)
    return b"".join(parts)


def decode_multi_response(buffer, offset: int) -> list:
    """One result per operation, in order: True for check and delete, the new
    version (an int) for setData, the created path for create, and for a
    failed or rolled-back operation the exception kazoo would give."""
    results = []
    unpack_header, unpack_int = _HEADER.unpack_from, _INT.unpack_from
    while True:
        kind, done, _ = unpack_header(buffer, offset)
        offset += 9
        if done:
            return results
        if kind == OP_SET_DATA:
            results.append(unpack_int(buffer, offset + _STAT_VERSION_AT)[0])
            offset += _STAT_SIZE
        elif kind == OP_CHECK or kind == OP_DELETE:
            results.append(True)
        elif kind == OP_ERROR:
            code = unpack_int(buffer, offset)[0]
            offset += 4
            results.append(EXCEPTIONS[code]())
        elif kind == OP_CREATE:
            length = unpack_int(buffer, offset)[0]
            offset += 4
            results.append(bytes(buffer[offset:offset + max(length, 0)]).decode())
            offset += max(length, 0)
        else:
            raise ValueError(f"multi response with an operation of type {kind}")


class EncodedMulti:
    """A multi already in wire form, for kazoo's request queue (it needs
    `type`, `serialize` and `deserialize`). Its type being the multi opcode,
    kazoo strips the chroot from created paths as for its own Transaction."""

    __slots__ = ("body", "count")
    type = MULTI

    def __init__(self, body: bytes, count: int) -> None:
        self.body = body
        self.count = count

    def serialize(self) -> bytes:
        return self.body

    @staticmethod
    def deserialize(buffer, offset: int) -> list:
        return decode_multi_response(buffer, offset)

    def __repr__(self) -> str:       # kazoo logs requests; not 150 KB of bytes
        return f"EncodedMulti({self.count} operations, {len(self.body)} bytes)"
