"""Connecting to ZooKeeper with bounded waits.

kazoo's synchronous calls wait as long as the connection lives; every call
here goes through the asynchronous API with a deadline instead, so no thread
can hang on ZooKeeper for longer than `operation_timeout_s`.
"""

from __future__ import annotations

import logging
import socket

from kazoo.client import KazooClient
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.retry import KazooRetry

log = logging.getLogger(__name__)


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
    retry = dict(max_tries=3, delay=0.1, backoff=2, max_delay=2.0)
    client = KazooClient(
        hosts=hosts,
        timeout=session_timeout_ms / 1000,
        connection_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=2.0),
        command_retry=KazooRetry(**retry),
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
