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
from dataclasses import dataclass
from typing import Union

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError, RolledBackError

from kafkactl.cluster.zk import codecs, layout, multi_read
from kafkactl.cluster.zk.client import wait

log = logging.getLogger(__name__)

DEFAULT_BATCH_SIZE = 1000         # ~150 KB of partition states, well under jute.maxbuffer (1 MB)
DEFAULT_TIMEOUT_S = 10.0
ELECTION_RETRIES = 5


class ControllerMovedError(RuntimeError):
    """/controller_epoch changed under us: another controller took over."""


@dataclass(frozen=True, slots=True)
class SetData:
    path: str
    data: bytes
    version: int = -1


@dataclass(frozen=True, slots=True)
class Create:
    path: str
    data: bytes = b""
    sequential: bool = False


@dataclass(frozen=True, slots=True)
class Delete:
    path: str
    version: int = -1


ZkOp = Union[SetData, Create, Delete]


@dataclass(frozen=True, slots=True)
class ControllerEpoch:
    epoch: int
    zk_version: int   # of /controller_epoch after our bump: the fencing token


@dataclass(frozen=True, slots=True)
class OpResult:
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
        batches = [ops[i:i + self.batch_size] for i in range(0, len(ops), self.batch_size)]
        pending = [(batch, self._commit_async(batch, controller_epoch)) for batch in batches]
        results: list[OpResult] = []
        for batch, future in pending:
            outcome = wait(future, self.timeout_s)
            self._raise_if_fenced(outcome)
            if any(isinstance(r, Exception) for r in outcome):
                results.extend(self._one_by_one(batch, controller_epoch))
            else:
                results.extend(_result(op, r) for op, r in zip(batch, outcome[1:]))
        return results

    def _commit_async(self, ops: list[ZkOp], controller_epoch: ControllerEpoch):
        transaction = self.client.transaction()
        transaction.check(layout.CONTROLLER_EPOCH, controller_epoch.zk_version)
        for op in ops:
            _add(transaction, op)
        return transaction.commit_async()

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


def _result(op: ZkOp, raw) -> OpResult:
    if isinstance(raw, RolledBackError):
        return OpResult(op, raw)
    if isinstance(op, SetData):
        return OpResult(op, zk_version=raw.version)
    if isinstance(op, Create):
        return OpResult(op, zk_version=0, created_path=raw)
    return OpResult(op)


def _raise_if_error(node):
    if isinstance(node, Exception):
        raise node
    return node
