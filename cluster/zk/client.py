"""Connecting to ZooKeeper with bounded waits: one policy for every client
(the broker's, the controller's, the CLI's, the local cluster's).

- Connecting waits at most the connection timeout. The attempts within it
  are bounded by that time, not by a count: a server that has just started
  may drop the first few sessions, and giving up after N quick tries would
  leave start() waiting out its whole timeout. They are 0.1 s apart at
  first, backing off to 1 s. An address where nothing listens fails at once
  (`refused_everywhere`).
- A connection lost later is retried the same way for as long as the client
  lives: a broker's session must outlive a ZooKeeper restart. What bounds a
  caller is the timeout on every call: kazoo's synchronous calls wait as long
  as the connection lives, so every call goes through the asynchronous API
  with a deadline instead (`wait`, `BoundedZk`), and no thread hangs on
  ZooKeeper for longer than that.
- kazoo's own command retries (`client.retry`): 3 tries, about 0.1 s then
  0.2 s apart.
- kazoo logs connection trouble at WARNING under "kazoo". Failures reach
  callers as exceptions (or session states), so a process that configured
  no logging (the local cluster used from a script) stays silent instead of
  falling through to logging's stderr last resort; where logging is
  configured (the broker's log), kazoo's lines reach it as before.

`connect` returns a started client for as long as the caller keeps it;
`session` is one for the length of a with-block.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from contextlib import contextmanager

from kazoo.client import KazooClient
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.retry import KazooRetry

log = logging.getLogger(__name__)
logging.getLogger("kazoo").addHandler(logging.NullHandler())

CONNECTION_RETRY = {"max_tries": -1, "delay": 0.1, "backoff": 2, "max_delay": 1.0}
COMMAND_RETRY = {"max_tries": 3, "delay": 0.1, "backoff": 2, "max_delay": 1.0}


class ZooKeeperUnavailable(RuntimeError):
    """ZooKeeper could not be reached within the deadline."""


def split_chroot(connect: str) -> tuple[str, str]:
    """'h1:2181,h2:2181/kafka' -> ('h1:2181,h2:2181', '/kafka')."""
    hosts, slash, chroot = connect.partition("/")
    return hosts, ("/" + chroot.rstrip("/")) if slash and chroot.strip("/") else ""


def connect(
    connect_string: str,
    session_timeout_ms: int = 18000,
    connection_timeout_ms: int = 18000,
    read_only: bool = False,
) -> KazooClient:
    """A started client rooted at the chroot, which is created if missing."""
    hosts, chroot = split_chroot(connect_string)
    if chroot:
        _ensure_chroot(hosts, chroot, session_timeout_ms, connection_timeout_ms)
    return _start(hosts + chroot, session_timeout_ms, connection_timeout_ms, read_only)


def refused_everywhere(hosts: str, probe_timeout_s: float = 1.0) -> bool:
    """Whether every address of `hosts` ("h:p,h:p") refuses a TCP connection.
    Kazoo would retry them until its timeout; a refusal is final (nothing
    listens there), so it is reported at once. Timeouts, unresolvable names
    and unreachable networks are left to kazoo's own bounded attempts."""
    for address in hosts.split(","):
        host, _, port = address.strip().rpartition(":")
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=probe_timeout_s):
                return False
        except ConnectionRefusedError:
            continue
        except (OSError, ValueError):
            return False
    return True


def _start(hosts: str, session_timeout_ms: int, connection_timeout_ms: int, read_only: bool) -> KazooClient:
    if refused_everywhere(hosts, min(1.0, connection_timeout_ms / 1000)):
        raise ZooKeeperUnavailable(f"cannot connect to ZooKeeper at {hosts}: connection refused")
    client = KazooClient(
        hosts=hosts,
        timeout=session_timeout_ms / 1000,
        connection_retry=KazooRetry(**CONNECTION_RETRY),
        command_retry=KazooRetry(**COMMAND_RETRY),
        read_only=read_only,
    )
    try:
        client.start(timeout=connection_timeout_ms / 1000)
    except KazooTimeoutError:
        client.close()
        raise ZooKeeperUnavailable(
            f"cannot connect to ZooKeeper at {hosts} within {connection_timeout_ms} ms"
        ) from None
    return client


def _ensure_chroot(hosts: str, chroot: str, session_timeout_ms: int, connection_timeout_ms: int) -> None:
    client = _start(hosts, session_timeout_ms, connection_timeout_ms, False)
    try:
        client.ensure_path(chroot)
    finally:
        client.stop()
        client.close()


@contextmanager
def session(connect_string: str, timeout_s: float, session_timeout_ms: int = 18000) -> Iterator[KazooClient]:
    """A started client for the length of a with-block, closed on the way out;
    ZooKeeperUnavailable when it cannot connect within `timeout_s`."""
    client = connect(connect_string, session_timeout_ms=session_timeout_ms,
                     connection_timeout_ms=max(int(timeout_s * 1000), 1))
    try:
        yield client
    finally:
        close(client)


def wait(async_result, timeout_s: float):
    """Result of a kazoo async call, or ZooKeeperUnavailable after the deadline."""
    try:
        return async_result.get(timeout=timeout_s)
    except KazooTimeoutError:
        raise ZooKeeperUnavailable(f"ZooKeeper did not answer within {timeout_s} s") from None


def close(client: KazooClient) -> None:
    try:
        client.stop()
    finally:
        client.close()


class BoundedZk:
    """kazoo's synchronous calls, each bounded by `timeout_s`.

    Raises what kazoo raises (NoNodeError, NodeExistsError, BadVersionError…)
    or ZooKeeperUnavailable when ZooKeeper does not answer in time.
    """

    def __init__(self, client: KazooClient, timeout_s: float) -> None:
        self.client = client
        self.timeout_s = timeout_s

    def create(self, path: str, value: bytes = b"", ephemeral: bool = False, makepath: bool = False,
               sequential: bool = False) -> str:
        return wait(self.client.create_async(path, value, ephemeral=ephemeral, sequence=sequential,
                                             makepath=makepath), self.timeout_s)

    def get(self, path: str):
        return wait(self.client.get_async(path), self.timeout_s)

    def set(self, path: str, value: bytes, version: int = -1):
        return wait(self.client.set_async(path, value, version), self.timeout_s)

    def exists(self, path: str):
        return wait(self.client.exists_async(path), self.timeout_s)

    def delete(self, path: str, version: int = -1) -> None:
        wait(self.client.delete_async(path, version), self.timeout_s)

    def ensure_path(self, path: str) -> None:
        wait(self.client.ensure_path_async(path), self.timeout_s)
