"""Free loopback TCP ports for listeners, picked once when a cluster is created.

They are picked below the kernel's ephemeral range
(net.ipv4.ip_local_port_range): the kernel gives ports in that range to
every outgoing connection on the machine, so a listener's port taken from it
may be in use by some client's connection by the time a stopped broker
starts again on it. Below the range only another listener can take it.
"""

import random
import socket
from contextlib import ExitStack
from pathlib import Path

LOWEST_PORT = 10000              # clear of the well-known and most registered service ports
EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
MAX_TRIES_PER_PORT = 200


def free_loopback_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """Return `count` distinct ports that were free on `host` a moment ago.

    All sockets stay bound until every port is picked, so no two are the
    same; the candidates are random, so concurrent callers rarely try the
    same one. Falls back to ports the kernel picks when none is found.
    """
    candidates = _candidates(host)
    with ExitStack() as stack:
        ports: list[int] = []
        for _ in range(count):
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            ports.append(_bind_one(sock, host, candidates))
        return ports


def _candidates(host: str) -> list[int]:
    ephemeral_low = _ephemeral_low()
    if ephemeral_low - LOWEST_PORT < 1000:
        return []
    return random.Random().sample(range(LOWEST_PORT, ephemeral_low), k=MAX_TRIES_PER_PORT * 4)


def _bind_one(sock: socket.socket, host: str, candidates: list[int]) -> int:
    for _ in range(min(MAX_TRIES_PER_PORT, len(candidates))):
        port = candidates.pop()
        try:
            sock.bind((host, port))
            return port
        except OSError:
            continue
    sock.bind((host, 0))
    return sock.getsockname()[1]


def _ephemeral_low() -> int:
    try:
        return int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768             # Linux's default


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    """True when something already listens on host:port (or binding fails)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # Servers set SO_REUSEADDR, so leftover TIME_WAIT connections of a
        # process we just killed do not stop them binding; mimic that.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return True
        return False
