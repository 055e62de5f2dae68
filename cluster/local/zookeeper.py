"""A private standalone ZooKeeper server from Debian's `zookeeper` package.

It runs straight from the jar with our own zoo.cfg, so nothing under /etc is
touched and no system service is involved.
"""

import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kafkactl.cluster.local.errors import StartupError
from kafkactl.cluster.local.procs import log_tail

MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
# Kafka brokers ask for 18 s sessions and tests may ask for more; the server
# default cap is 20 ticks = 40 s.
MAX_SESSION_TIMEOUT_MS = 60_000
TICK_TIME_MS = 2_000
PROBE_TIMEOUT_S = 1.0
PROBE_INTERVAL_S = 0.1
FOUR_LETTER_MAX_BYTES = 64 * 1024


def _default_classpath() -> list[str]:
    entries = ["/etc/zookeeper/conf", "/usr/share/java/zookeeper.jar"]
    # Without an SLF4J binding ZooKeeper logs nothing at all; slf4j-simple
    # sends its log to stderr, which lands in our log file.
    if os.path.exists("/usr/share/java/slf4j-simple.jar"):
        entries.append("/usr/share/java/slf4j-simple.jar")
    return entries


@dataclass(frozen=True, slots=True)
class ZooKeeperCommand:
    """How to run the server; override for a ZooKeeper installed elsewhere."""

    java: str = field(default_factory=lambda: os.environ.get("KAFKACTL_JAVA", "java"))
    classpath: tuple[str, ...] = field(default_factory=lambda: tuple(_default_classpath()))
    # A small heap and the client JIT: a test server needs little, and starts faster.
    jvm_options: tuple[str, ...] = ("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")

    def argv(self, config_file: Path, log_dir: Path) -> list[str]:
        return [
            self.java, *self.jvm_options, "-cp", ":".join(self.classpath),
            f"-Dzookeeper.log.dir={log_dir}", MAIN_CLASS, str(config_file),
        ]


def zoo_cfg(data_dir: Path, port: int, host: str = "127.0.0.1") -> str:
    return "\n".join([
        "# Written by kafkactl for a local cluster; rewritten on every `cluster up`.",
        f"tickTime={TICK_TIME_MS}",
        f"dataDir={data_dir}",
        f"clientPort={port}",
        f"clientPortAddress={host}",
        f"maxSessionTimeout={MAX_SESSION_TIMEOUT_MS}",
        # The admin server would also bind port 8080.
        "admin.enableServer=false",
        "4lw.commands.whitelist=ruok,srvr,mntr",
        # Keep the data dir from growing without bound in long-lived clusters.
        "autopurge.snapRetainCount=3",
        "autopurge.purgeInterval=1",
        "",
    ])


def four_letter(host: str, port: int, command: str, timeout_s: float = PROBE_TIMEOUT_S) -> str:
    """Send a four-letter command and return the whole answer (server closes)."""
    with socket.create_connection((host, port), timeout=timeout_s) as sock:
        sock.sendall(command.encode())
        chunks, size = [], 0
        while size < FOUR_LETTER_MAX_BYTES:
            chunk = sock.recv(4096)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    return b"".join(chunks).decode(errors="replace")


def is_ok(host: str, port: int, timeout_s: float = PROBE_TIMEOUT_S) -> bool:
    """Ready for clients: `ruok` answers `imok` and `srvr` reports a mode.

    `imok` alone only says the process listens: while it still loads its
    database it answers `imok` yet drops client sessions, and `srvr` says
    "not currently serving requests" instead of "Mode: standalone".
    """
    try:
        return (four_letter(host, port, "ruok", timeout_s) == "imok"
                and "Mode:" in four_letter(host, port, "srvr", timeout_s))
    except OSError:
        return False


def wait_ready(host: str, port: int, timeout_s: float, still_running: Callable[[], bool],
               log_file: Path, log_offset: int) -> None:
    """Poll `ruok` until `imok`; fail early if the process exits."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if is_ok(host, port, min(PROBE_TIMEOUT_S, max(deadline - time.monotonic(), 0.01))):
            return
        if not still_running():
            raise StartupError(f"ZooKeeper exited during start-up; see {log_file}",
                               str(log_file), log_tail(log_file, log_offset))
        time.sleep(PROBE_INTERVAL_S)
    raise StartupError(f"ZooKeeper did not answer 'ruok' on {host}:{port} within {timeout_s:g} s; "
                       f"see {log_file}", str(log_file), log_tail(log_file, log_offset))
