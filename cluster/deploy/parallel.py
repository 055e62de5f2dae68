"""Work on many hosts at once, each over its own SSH session (ssh.py).

`on_hosts(targets, work, options, parallel)` connects to each target, calls
`work(session)` and closes the session; at most `parallel` hosts at a time
(a bounded thread pool), one connection per host. The outcomes come back in
the targets' order, one per target, and a host's failure never stops the
others: its SshError (one line, naming the host) or any other exception
(made one line, naming the host) becomes that host's `error`. The caller
decides what a failed host means. A violated invariant is a bug, not a host
failure: it halts the process (fatal.py), as everywhere in cluster/.

Each host's time is bounded by the SSH timeouts of its connect and of the
commands its work runs. On an interrupt (Ctrl-C) hosts not yet started are
cancelled and the running ones finish their current work.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Generic, Sequence, TypeVar

from kafkactl.cluster import fatal
from kafkactl.cluster.deploy.inventory import Connection
from kafkactl.cluster.deploy.ssh import HostSession, SshOptions, connect
from kafkactl.cluster.deploy.ssh_results import SshError, endpoint, one_line

T = TypeVar("T")
Connect = Callable[[str, Connection, SshOptions], HostSession]


@dataclass(frozen=True)
class HostOutcome(Generic[T]):
    name: str
    value: T | None       # what work returned; None when it failed
    error: str | None     # one line naming the host; None when it succeeded

    @property
    def ok(self) -> bool:
        return self.error is None


def on_hosts(targets: Sequence[tuple[str, Connection]], work: Callable[[HostSession], T], options: SshOptions,
             parallel: int = 8, *, connect: Connect = connect) -> list[HostOutcome[T]]:
    """work(session) on every (name, connection), in at most `parallel` threads."""
    if parallel < 1:
        raise ValueError(f"parallel: at least 1, not {parallel}")
    if not targets:
        return []
    pool = ThreadPoolExecutor(max_workers=min(parallel, len(targets)), thread_name_prefix="kafkactl-ssh")
    futures: list[Future[HostOutcome[T]]] = []
    try:
        for name, connection in targets:
            futures.append(pool.submit(_on_host, name, connection, work, options, connect))
        return [future.result() for future in futures]
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _on_host(name: str, connection: Connection, work: Callable[[HostSession], T], options: SshOptions,
             connect: Connect) -> HostOutcome[T]:
    try:
        with connect(name, connection, options) as session:
            return HostOutcome(name, work(session), None)
    except SshError as error:
        return HostOutcome(name, None, str(error))
    except Exception as error:   # a host's failure stays that host's
        fatal.halt_if_fatal(error, f"deploy work on host {name}")
        where = endpoint(connection.address, connection.port)
        said = f": {error}" if str(error) else ""
        return HostOutcome(name, None, one_line(f"host {name} ({where}): {type(error).__name__}{said}"))
