"""The simulation's fake ZooKeeper: znodes with versions, and watches.

Znodes carry data, a version (bumped by every setData: conditional writes
compare it) and a czxid (the zxid of their creation: a broker registration's
czxid is the broker epoch). Parents are implicit: the children of a path are
whatever lies directly below it.

Watches follow ZooKeeper (as the controller's client, kazoo, sees them),
because the controller's correctness depends on exactly these rules:
- a data watch is left by getData on an existing znode, and by exists on any
  path; it fires on the znode's creation, data change or deletion;
- getData on a missing znode leaves no watch (the trap behind issue 12.2);
- a child watch is left by getChildren; it fires when a child is created or
  deleted, or when the znode itself is deleted;
- a watch fires once and is gone: the client must read again to re-arm it;
- each registered callback is called (kazoo keeps a set of callbacks per
  path: the same callback twice counts once, two different ones both run).
A fired watch does not reach the controller at once: the notification
travels to the client and the callback only queues an event, so the
simulation delivers notifications at later steps (in order, as one session
receives them), while other writes go on in between.

Only the controller's session sets watches here; a new controller gets a
new session (`new_session`), and the old one's watches and undelivered
notifications are dropped, as the old controller ignores them once it has
resigned.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Callable, NamedTuple

from kafkactl.cluster.controller.model import WriteResult
from kafkactl.cluster.invariant import invariant
from kafkactl.cluster.zk import layout

CREATED, CHANGED, DELETED, CHILD = "CREATED", "CHANGED", "DELETED", "CHILD"

# Znodes an admin tool writes for the controller to act on (checked to have
# been read by the controller: see Simulation._check_admin_read).
ADMIN_PATHS = (layout.REASSIGN_PARTITIONS, layout.PREFERRED_REPLICA_ELECTION)


def is_admin_path(path: str) -> bool:
    return path in ADMIN_PATHS or path.startswith(layout.DELETE_TOPICS + "/")


@dataclass
class Znode:
    data: bytes
    version: int
    czxid: int
    owner: int | None = None            # broker id owning an ephemeral node
    decoded: object = None              # the decoded value, dropped on every write


class Stat(NamedTuple):
    """What a read returns with the data (a kazoo ZnodeStat has these): a
    copy, so later writes do not change what was read."""
    czxid: int
    version: int


class WatchedEvent(NamedTuple):
    type: str
    path: str


@dataclass
class Notification:
    """A fired watch on its way to the client."""
    callback: Callable
    event: WatchedEvent
    zxid: int                           # ZooKeeper's zxid when it fired
    reads: int                          # the controller's reads of the path by then


class FakeZooKeeper:
    def __init__(self) -> None:
        self.nodes: dict[str, Znode] = {}
        self.zxid = 0
        self.sequence = 0
        self.data_watches: dict[str, dict[Callable, None]] = {}    # path -> callbacks, in registration order
        self.child_watches: dict[str, dict[Callable, None]] = {}
        self.notifications: deque[Notification] = deque()
        self.reads: dict[str, int] = {}                             # path -> the controller's reads of it
        self.unread_admin: dict[str, tuple[int, int]] = {}          # admin path -> (czxid, step) not read yet
        self.piled_up: list[str] = []                               # see _add_watch
        self.step = 0

    # --- the znodes

    def get(self, path: str) -> Znode | None:
        return self.nodes.get(path)

    def create(self, path: str, data: bytes = b"", owner: int | None = None) -> Znode:
        invariant(path not in self.nodes, f"create {path}: exists")
        self.zxid += 1
        node = Znode(data, 0, self.zxid, owner)
        self.nodes[path] = node
        if is_admin_path(path):
            self.unread_admin[path] = (node.czxid, self.step)
        self._fire(self.data_watches, path, CREATED)
        self._fire(self.child_watches, _parent(path), CHILD)
        return node

    def create_sequential(self, prefix: str, data: bytes) -> str:
        self.sequence += 1
        path = f"{prefix}{self.sequence:010d}"
        self.create(path, data)
        return path

    def set(self, path: str, data: bytes, expected_version: int = -1) -> WriteResult:
        node = self.nodes.get(path)
        if node is None:
            return WriteResult.NO_NODE
        if expected_version != -1 and node.version != expected_version:
            return WriteResult.BAD_VERSION
        self.zxid += 1
        node.data, node.version, node.decoded = data, node.version + 1, None
        self._fire(self.data_watches, path, CHANGED)
        return WriteResult.OK

    def delete(self, path: str, recursive: bool = False) -> None:
        if recursive:
            for child in sorted((p for p in self.nodes if p.startswith(path + "/")), reverse=True):
                self._delete(child)
        self._delete(path)

    def _delete(self, path: str) -> None:
        if self.nodes.pop(path, None) is None:
            return
        self.zxid += 1
        unread = self.unread_admin.pop(path, None)
        invariant(unread is None, f"{path} (created at step {unread and unread[1]}) was deleted "
                                  f"without the controller ever reading it")
        self._fire(self.data_watches, path, DELETED)
        self._fire(self.child_watches, path, DELETED)
        self._fire(self.child_watches, _parent(path), CHILD)

    def children(self, path: str) -> list[str]:
        prefix = path.rstrip("/") + "/"
        return sorted({p[len(prefix):].split("/", 1)[0] for p in self.nodes if p.startswith(prefix)})

    # --- watches (the controller's session)

    def new_session(self) -> None:
        self.data_watches.clear()
        self.child_watches.clear()
        self.notifications.clear()

    def watch_data(self, path: str, callback: Callable) -> None:
        self._add_watch(self.data_watches, path, callback)

    def watch_children(self, path: str, callback: Callable) -> None:
        self._add_watch(self.child_watches, path, callback)

    def _add_watch(self, watches: dict[str, dict[Callable, None]], path: str, callback: Callable) -> None:
        callbacks = watches.setdefault(path, {})
        if callback not in callbacks:
            # Two callbacks queuing the same event: each read left a new one
            # while the znode did not change, and its next change will queue
            # the event once per read since (an event storm that grows).
            event = getattr(callback, "event", callback)
            if any(getattr(c, "event", None) == event for c in callbacks):
                self.piled_up.append(f"{path}: a {event} watch callback added to {len(callbacks)} armed ones")
            callbacks[callback] = None

    def read(self, path: str, node: Znode | None) -> None:
        """The controller read `path` (and got `node`): for the checks."""
        self.reads[path] = self.reads.get(path, 0) + 1
        if node is not None and path in self.unread_admin and self.unread_admin[path][0] == node.czxid:
            del self.unread_admin[path]

    def _fire(self, watches: dict[str, dict[Callable, None]], path: str, kind: str) -> None:
        callbacks = watches.pop(path, None)
        if callbacks:
            event, reads = WatchedEvent(kind, path), self.reads.get(path, 0)
            self.notifications.extend(Notification(c, event, self.zxid, reads) for c in callbacks)

    def deliver(self) -> Notification | None:
        """The oldest fired watch reaches the client: its callback runs."""
        if not self.notifications:
            return None
        notification = self.notifications.popleft()
        notification.callback(notification.event)
        return notification


def _parent(path: str) -> str:
    return path.rsplit("/", 1)[0] or "/"
