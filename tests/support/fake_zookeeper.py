"""An in-memory stand-in for the part of kazoo's client the admin code uses.

Unit tests of the CLI's argument handling and formatting run against it, so
they need no ZooKeeper process. It keeps znodes with data and versions, and
answers kazoo's async calls (get, get_children, exists, create, set, delete,
ensure_path) and transactions with the exceptions kazoo raises. A
transaction is all or nothing, as ZooKeeper's multi is. Integration tests use
a real ZooKeeper instead.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError, NotEmptyError


@dataclass
class Stat:
    version: int
    czxid: int
    mzxid: int
    ctime: int = 0
    mtime: int = 0
    numChildren: int = 0


class Result:
    """What kazoo's *_async calls return: get() gives the value or raises."""

    def __init__(self, value=None, error: Exception | None = None) -> None:
        self.value, self.error = value, error

    def get(self, block: bool = True, timeout: float | None = None):
        if self.error is not None:
            raise self.error
        return self.value


class FakeZooKeeper:
    def __init__(self, tree: dict[str, bytes | str] | None = None) -> None:
        self.nodes: dict[str, tuple[bytes, Stat]] = {"/": (b"", Stat(0, 0, 0))}
        self._zxid = itertools.count(1)
        self._sequence = itertools.count(0)
        for path, data in sorted((tree or {}).items()):
            self.ensure_path(_parent(path))
            self.create(path, data.encode() if isinstance(data, str) else data)

    # ---- synchronous calls (tests use them to set up and to look) ----

    def create(self, path: str, value: bytes = b"", ephemeral: bool = False, sequence: bool = False,
               makepath: bool = False) -> str:
        if sequence:
            path = f"{path}{next(self._sequence):010d}"
        if path in self.nodes:
            raise NodeExistsError(path)
        if _parent(path) not in self.nodes:
            if not makepath:
                raise NoNodeError(_parent(path))
            self.ensure_path(_parent(path))
        zxid = next(self._zxid)
        self.nodes[path] = (bytes(value), Stat(0, zxid, zxid))
        return path

    def ensure_path(self, path: str) -> None:
        parts = [p for p in path.split("/") if p]
        for i in range(1, len(parts) + 1):
            prefix = "/" + "/".join(parts[:i])
            if prefix not in self.nodes:
                self.create(prefix)

    def get(self, path: str) -> tuple[bytes, Stat]:
        if path not in self.nodes:
            raise NoNodeError(path)
        data, stat = self.nodes[path]
        return data, Stat(stat.version, stat.czxid, stat.mzxid, numChildren=len(self.get_children(path)))

    def get_children(self, path: str) -> list[str]:
        if path not in self.nodes:
            raise NoNodeError(path)
        prefix = path.rstrip("/") + "/"
        return sorted(p[len(prefix):] for p in self.nodes if p.startswith(prefix) and "/" not in p[len(prefix):])

    def exists(self, path: str) -> Stat | None:
        return self.get(path)[1] if path in self.nodes else None

    def set(self, path: str, value: bytes, version: int = -1) -> Stat:
        _, stat = self.get(path)
        if version != -1 and version != stat.version:
            raise BadVersionError(path)
        self.nodes[path] = (bytes(value), Stat(stat.version + 1, stat.czxid, next(self._zxid)))
        return self.nodes[path][1]

    def delete(self, path: str, version: int = -1, recursive: bool = False) -> None:
        _, stat = self.get(path)
        if version != -1 and version != stat.version:
            raise BadVersionError(path)
        children = self.get_children(path)
        if children and not recursive:
            raise NotEmptyError(path)
        for child in children:
            self.delete(f"{path.rstrip('/')}/{child}", recursive=True)
        del self.nodes[path]

    def data(self, path: str) -> str:
        """The znode's data as text (a test helper, not kazoo's API)."""
        return self.get(path)[0].decode()

    def snapshot(self) -> dict[str, bytes]:
        """Every znode's data, to assert that a refused command wrote nothing."""
        return {path: data for path, (data, _) in self.nodes.items()}

    # ---- kazoo's async calls, as the admin code makes them ----

    def _async(self, call, *args, **kwargs) -> Result:
        try:
            return Result(call(*args, **kwargs))
        except Exception as error:  # noqa: BLE001 - handed to the caller, as kazoo does
            return Result(error=error)

    def get_async(self, path: str, watch=None) -> Result:
        return self._async(self.get, path)

    def get_children_async(self, path: str, watch=None, include_data: bool = False) -> Result:
        return self._async(self.get_children, path)

    def exists_async(self, path: str, watch=None) -> Result:
        return self._async(self.exists, path)

    def create_async(self, path: str, value: bytes = b"", acl=None, ephemeral: bool = False,
                     sequence: bool = False, makepath: bool = False, include_data: bool = False) -> Result:
        return self._async(self.create, path, value, ephemeral=ephemeral, sequence=sequence, makepath=makepath)

    def set_async(self, path: str, value: bytes, version: int = -1) -> Result:
        return self._async(self.set, path, value, version)

    def delete_async(self, path: str, version: int = -1) -> Result:
        return self._async(self.delete, path, version)

    def ensure_path_async(self, path: str, acl=None) -> Result:
        return self._async(self.ensure_path, path)

    def transaction(self) -> "Transaction":
        return Transaction(self)

    def stop(self) -> None:
        pass

    def close(self) -> None:
        pass


class Transaction:
    """ZooKeeper's multi: every operation or none (kazoo's TransactionRequest)."""

    def __init__(self, zookeeper: FakeZooKeeper) -> None:
        self.zookeeper = zookeeper
        self.operations: list[tuple] = []

    def create(self, path: str, value: bytes = b"", acl=None, ephemeral: bool = False, sequence: bool = False):
        self.operations.append(("create", path, value, sequence))

    def set_data(self, path: str, value: bytes, version: int = -1):
        self.operations.append(("set", path, value, version))

    def delete(self, path: str, version: int = -1):
        self.operations.append(("delete", path, version))

    def check(self, path: str, version: int):
        self.operations.append(("check", path, version))

    def commit_async(self) -> Result:
        saved_nodes = dict(self.zookeeper.nodes)
        results: list = []
        for operation in self.operations:
            try:
                results.append(self._apply(operation))
            except Exception as error:  # noqa: BLE001 - kazoo reports errors per operation
                results.append(error)
        if any(isinstance(r, Exception) for r in results):
            self.zookeeper.nodes = saved_nodes
            # kazoo: the failing operation's error, RolledBackError for the others.
            from kazoo.exceptions import RolledBackError

            results = [r if isinstance(r, Exception) else RolledBackError() for r in results]
        return Result(results)

    def commit(self) -> list:
        return self.commit_async().get()

    def _apply(self, operation: tuple):
        kind, path, *rest = operation
        if kind == "create":
            value, sequence = rest
            return self.zookeeper.create(path, value, sequence=sequence)
        if kind == "set":
            value, version = rest
            return self.zookeeper.set(path, value, version)
        if kind == "delete":
            self.zookeeper.delete(path, rest[0])
            return True
        version = rest[0]
        if self.zookeeper.get(path)[1].version != version:
            raise BadVersionError(path)
        return True


def _parent(path: str) -> str:
    parent = path.rsplit("/", 1)[0]
    return parent or "/"


def record_commits(zookeeper: FakeZooKeeper, monkeypatch, saved_first: Path) -> list[list[tuple]]:
    """The operations of every multi `zookeeper` commits from now on, one list
    per commit; each commit asserts `saved_first` exists (a rollback file must
    be saved before anything is written)."""
    commits: list[list[tuple]] = []

    class Recording(Transaction):
        def commit_async(self) -> Result:
            assert saved_first.exists(), "the rollback file must be saved before writing"
            commits.append(list(self.operations))
            return super().commit_async()

    monkeypatch.setattr(zookeeper, "transaction", lambda: Recording(zookeeper))
    return commits
