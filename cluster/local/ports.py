"""Free loopback TCP ports, picked once when a cluster is created."""

import socket
from contextlib import ExitStack


def free_loopback_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """Return `count` distinct ports that were free on `host` a moment ago.

    All sockets stay bound until every port is picked, so the kernel cannot
    hand out the same port twice within one call.
    """
    with ExitStack() as stack:
        ports = []
        for _ in range(count):
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind((host, 0))
            ports.append(sock.getsockname()[1])
        return ports


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
