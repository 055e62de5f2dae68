"""What the SSH transport (ssh.py) gives back: its errors, a command's
result and the bounded buffer of its output, and the one-line messages built
from them. Pure: no paramiko, no I/O.

Every error is an `SshError` whose text is one line starting with
`host NAME (ADDRESS:PORT): `; its subclass says what went wrong.
"""

from __future__ import annotations

import collections
import shlex
from dataclasses import dataclass
from typing import Sequence

from kafkactl.cluster.deploy.inventory import Connection

COMMAND_SHOWN_CHARS = 80
TAIL_LINES = 3
TAIL_CHARS = 300


def endpoint(address: str, port: int) -> str:
    return f"[{address}]:{port}" if ":" in address else f"{address}:{port}"


def one_line(text: str, limit: int = 2000) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"


def reason(error: BaseException) -> str:
    """What an exception says, or its type when it says nothing (EOFError())."""
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return str(error) or type(error).__name__


class SshError(Exception):
    """One line: `host NAME (ADDRESS:PORT): problem`."""

    def __init__(self, name: str, connection: Connection, problem: str):
        self.host = name
        self.connection = connection
        self.problem = one_line(problem)
        super().__init__(f"host {name} ({endpoint(connection.address, connection.port)}): {self.problem}")


class HostKeyUnknown(SshError): pass
class HostKeyMismatch(SshError): pass
class Unreachable(SshError): pass
class AuthenticationFailed(SshError): pass
class CommandTimeout(SshError): pass
class CommandFailed(SshError): pass
class TransferFailed(SshError): pass


@dataclass(frozen=True)
class CommandResult:
    exit_status: int   # -1: the command ended without one (killed by a signal)
    stdout: str
    stderr: str


# ---------------------------------------------------------------- small pure helpers

def shell_join(argv: Sequence[str]) -> str:
    """A command line for the remote shell, every word quoted."""
    return shlex.join(argv)


def shorten_command(command: str) -> str:
    flat = one_line(command)
    return flat if len(flat) <= COMMAND_SHOWN_CHARS else flat[:COMMAND_SHOWN_CHARS - 1] + "…"


def output_tail(stdout: str, stderr: str) -> str:
    """The last lines of stderr (else stdout), as one line for an error message."""
    for text in (stderr, stdout):
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        if lines:
            tail = " / ".join(lines[-TAIL_LINES:])
            return tail if len(tail) <= TAIL_CHARS else "…" + tail[-(TAIL_CHARS - 1):]
    return "(no output)"


def failure_message(command: str, result: CommandResult) -> str:
    status = "ended without an exit status" if result.exit_status < 0 else f"exited {result.exit_status}"
    return f"`{shorten_command(command)}` {status}: {output_tail(result.stdout, result.stderr)}"


class OutputBuffer:
    """At most `limit` bytes of one output stream: its head and its tail, with
    the count of the bytes dropped between them (memory stays bounded)."""

    def __init__(self, limit: int):
        self.limit = limit
        self._head_limit = limit - limit // 2
        self._tail_limit = limit // 2
        self._head = bytearray()
        self._tail: collections.deque[bytes] = collections.deque()
        self._tail_size = 0
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self._head_limit - len(self._head)
        self._head += chunk[:room]
        rest = chunk[room:] if room > 0 else chunk
        if rest and self._tail_limit:
            self._tail.append(rest)
            self._tail_size += len(rest)
            while self._tail_size - len(self._tail[0]) >= self._tail_limit:
                self._tail_size -= len(self._tail.popleft())

    def text(self) -> str:
        tail = b"".join(self._tail)[-self._tail_limit:] if self._tail_limit else b""
        dropped = self.total - len(self._head) - len(tail)
        if not dropped:   # one piece: a character may span head and tail
            return (bytes(self._head) + tail).decode(errors="replace")
        head = self._head.decode(errors="replace")
        marker = f"\n[kafkactl: {dropped} bytes of output dropped here, over max_output_bytes={self.limit}]\n"
        return head + marker + tail.decode(errors="replace")
