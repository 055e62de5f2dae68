"""The SSH transport of `kafkactl deploy`: commands and files on one host (paramiko).

`connect(name, connection, options)` opens a `HostSession` to one inventory
host; `parallel.on_hosts` runs work on many. Every failure is an `SshError`
(ssh_results.py) whose text is one line starting with `host NAME (ADDRESS:PORT): `;
its subclass says what went wrong, for the caller to decide (and the CLI to print).

Host keys (as OpenSSH's StrictHostKeyChecking; known_hosts.py reads and
writes the file):
- Only `options.known_hosts` is read; a missing file is an empty one.
- A host with no recorded key: `HostKeyUnknown`, naming the key type, its
  `SHA256:` fingerprint and how to accept it. With `trust_on_first_use` the
  key is accepted and appended, as OpenSSH writes it (`ADDRESS` on port 22,
  `[ADDRESS]:PORT` otherwise), once however many connects add it at once.
- A key other than the recorded one (paramiko raises BadHostKeyException
  before any policy runs), or a key of a `@revoked` line: `HostKeyMismatch`,
  never accepted, also not with trust_on_first_use.

Authentication: `connection.key_file` alone when set; otherwise the SSH agent
and the default key files. A refusal is `AuthenticationFailed` naming the user.

Bounds: `connect_timeout_s` bounds the TCP connect, the SSH banner, the key
exchange, authentication and each channel opening; a host that cannot be
reached that way is `Unreachable`. (A host *name* is resolved by the system
resolver, which paramiko does not bound: inventories of addresses avoid it.)
Every command has a deadline (`timeout_s`, default `command_timeout_s`): its
stdin is fed and both output streams drained in one loop, so no stream's
full window can stall the other; at the deadline the channel is closed and
`CommandTimeout` raised. The command is not killed by that (paramiko cannot
send signals): it runs on until it ends or writes to its closed output. The
session stays usable. Each output stream keeps at most `max_output_bytes`:
its head and tail, with a marker saying how much was dropped between them.
A keepalive goes every KEEPALIVE_INTERVAL_S.

Commands are strings for the remote user's shell: build them with
`shell_join` (every value quoted), never by pasting values in.

Files: `upload` and `write_file` put the data in `PATH.part` over SFTP, check
its sha256 on the host (`sha256sum`), set its mode, then `posix_rename` it
over PATH: a reader sees the old file or the new one, never a part. A file
that already has the content and mode is left alone (False, nothing sent);
the right content with another mode only gets chmod. The parent directory is
created when missing. A digest mismatch or an SFTP error removes the part:
`TransferFailed`. A transfer has the command deadline (each SFTP request is
bounded by the time left): `CommandTimeout` when it passes.

A HostSession is used by one thread at a time.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import logging
import posixpath
import re
import select
import shlex
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Callable

import paramiko
from paramiko.ssh_exception import NoValidConnectionsError

from kafkactl.cluster.deploy.inventory import Connection
from kafkactl.cluster.deploy.ssh_results import (
    AuthenticationFailed, CommandFailed, CommandResult, CommandTimeout, HostKeyMismatch, HostKeyUnknown,
    OutputBuffer, SshError, TransferFailed, Unreachable, failure_message, one_line, reason, shell_join,
    shorten_command,
)
from kafkactl.cluster.deploy.known_hosts import (
    KnownHosts, KnownHostsConflict, KnownHostsError, describe_key, mismatch_message, read_known_hosts,
    record_host_key, revoked_message, unknown_key_message,
)

KEEPALIVE_INTERVAL_S = 15
POLL_INTERVAL_S = 0.05          # longest idle wait between two looks at a command's channel
CHUNK_BYTES = 32 << 10          # one SSH packet's worth
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_TRANSPORT_ERRORS = (paramiko.SSHException, OSError, EOFError)

Clock = Callable[[], float]

# paramiko logs a failed handshake with its traceback; without a handler of
# the program's, Python's last-resort handler would print that to stderr
# next to the one-line SshError. The program's own handlers still get it.
logging.getLogger("paramiko").addHandler(logging.NullHandler())


@dataclass(frozen=True)
class SshOptions:
    known_hosts: Path            # the CLI passes ~/.ssh/known_hosts expanded by default
    trust_on_first_use: bool = False
    connect_timeout_s: float = 10.0
    command_timeout_s: float = 300.0
    max_output_bytes: int = 4 << 20   # per output stream of a command

    def __post_init__(self) -> None:
        for field in ("connect_timeout_s", "command_timeout_s"):
            if not getattr(self, field) > 0:
                raise ValueError(f"SshOptions.{field}: must be > 0, not {getattr(self, field)!r}")
        if self.max_output_bytes < 2:
            raise ValueError(f"SshOptions.max_output_bytes: must be >= 2, not {self.max_output_bytes!r}")


# ---------------------------------------------------------------- host keys

class _HostKeyPolicy(paramiko.MissingHostKeyPolicy):
    """Called by paramiko for a host with no recorded key (a different
    recorded key never gets here: paramiko raises BadHostKeyException)."""

    def __init__(self, name: str, connection: Connection, options: SshOptions, known: KnownHosts):
        self.name, self.connection, self.options, self.known = name, connection, options, known

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey) -> None:
        file = self.options.known_hosts
        if key.asbytes() in self.known.revoked:
            raise HostKeyMismatch(self.name, self.connection, revoked_message(key, file))
        if not self.options.trust_on_first_use:
            raise HostKeyUnknown(self.name, self.connection,
                                 unknown_key_message(self.connection.address, self.connection.port, key, file))
        try:
            record_host_key(file, self.connection.address, self.connection.port, key.get_name(),
                            key.get_base64(), self.options.connect_timeout_s)
        except KnownHostsConflict as conflict:
            raise HostKeyMismatch(self.name, self.connection,
                                  f"host key {describe_key(key)} is not the one recorded meanwhile: "
                                  f"{conflict}: refused") from conflict
        except KnownHostsError as error:
            raise SshError(self.name, self.connection, f"cannot record the host key: {error}") from error


# ---------------------------------------------------------------- connecting

def connect(name: str, connection: Connection, options: SshOptions, *, clock: Clock = time.monotonic) -> HostSession:
    """An authenticated session to the host, host key checked (module doc)."""
    try:
        known = read_known_hosts(options.known_hosts, options.connect_timeout_s)
    except KnownHostsError as error:
        raise SshError(name, connection, f"known_hosts: {error}") from error
    client = paramiko.SSHClient()
    for host_name in known.keys.keys():
        for key in known.keys.lookup(host_name).values():
            client.get_host_keys().add(host_name, key.get_name(), key)
    client.set_missing_host_key_policy(_HostKeyPolicy(name, connection, options, known))
    key_file = connection.key_file
    timeout_s = options.connect_timeout_s
    try:
        client.connect(connection.address, connection.port, username=connection.user, key_filename=key_file,
                       allow_agent=key_file is None, look_for_keys=key_file is None, timeout=timeout_s,
                       banner_timeout=timeout_s, auth_timeout=timeout_s, channel_timeout=timeout_s)
    except SshError:
        client.close()
        raise
    except _TRANSPORT_ERRORS as error:
        transport = client.get_transport()
        handshake_done = transport is not None and transport.host_key is not None
        client.close()
        raise connect_error(name, connection, options, error, handshake_done) from error
    transport = client.get_transport()
    if transport is None:   # connect() returned, so paramiko made one
        client.close()
        raise SshError(name, connection, "paramiko returned no transport")
    key = transport.get_remote_server_key()
    if key.asbytes() in known.revoked:   # also recorded as the host's: @revoked wins, as in OpenSSH
        client.close()
        raise HostKeyMismatch(name, connection, revoked_message(key, options.known_hosts))
    transport.set_keepalive(KEEPALIVE_INTERVAL_S)
    return HostSession(name, connection, options, client, clock)


def connect_error(name: str, connection: Connection, options: SshOptions, error: BaseException,
                  handshake_done: bool) -> SshError:
    """The SshError for what paramiko or the socket raised while connecting."""
    if isinstance(error, paramiko.BadHostKeyException):
        return HostKeyMismatch(name, connection, mismatch_message(connection.address, connection.port, error.key,
                                                                  error.expected_key, options.known_hosts))
    how = (f"key file {connection.key_file}" if connection.key_file
           else "the SSH agent's keys and the default key files")
    if isinstance(error, paramiko.AuthenticationException):
        return AuthenticationFailed(name, connection,
                                    f"user {connection.user} was refused with {how}: {reason(error)}")
    if isinstance(error, socket.gaierror):
        return Unreachable(name, connection, f"cannot resolve {connection.address}: {reason(error)}")
    if isinstance(error, TimeoutError):
        return Unreachable(name, connection, f"no answer within {options.connect_timeout_s:g} s")
    if isinstance(error, NoValidConnectionsError):
        reasons = sorted({cause.strerror or str(cause) for cause in error.errors.values()})
        return Unreachable(name, connection, f"cannot connect: {', '.join(reasons) or error}")
    if isinstance(error, OSError):
        return Unreachable(name, connection, f"cannot connect: {reason(error)}")
    if handshake_done:   # the host's key was checked: what failed is logging in
        return AuthenticationFailed(name, connection, f"user {connection.user} could not log in with {how}: "
                                                      f"{reason(error)}")
    return Unreachable(name, connection, f"no SSH handshake within {options.connect_timeout_s:g} s "
                                         f"({reason(error)})")


# ---------------------------------------------------------------- a command's channel

class _Watchdog:
    """Calls `on_expiry` if still armed after `timeout_s`: for paramiko calls
    that wait for the server with no bound of their own (exec, subsystem)."""

    def __init__(self, timeout_s: float, on_expiry: Callable[[], None]):
        self.fired = False
        self._on_expiry = on_expiry
        self._timer = threading.Timer(max(timeout_s, 0.0), self._fire)
        self._timer.daemon = True

    def _fire(self) -> None:
        self.fired = True
        self._on_expiry()

    def __enter__(self) -> _Watchdog:
        self._timer.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._timer.cancel()


def _wait_readable(channel: Any, timeout_s: float) -> None:
    select.select([channel], [], [], timeout_s)   # a paramiko channel's fileno() signals stdout and stderr


def _ended(channel: Any) -> bool:
    return (channel.exit_status_ready() and (channel.eof_received or channel.closed)
            and not channel.recv_ready() and not channel.recv_stderr_ready())


def pump(channel: Any, data: bytes, stdout: OutputBuffer, stderr: OutputBuffer, deadline: float, clock: Clock,
         wait: Callable[[Any, float], None] = _wait_readable) -> bool:
    """Feeds `data` to a running command's stdin and drains its stdout and
    stderr in one loop, so that neither direction's full window stalls the
    other. True once the command has exited and its output ended; False when
    `clock()` reaches `deadline` first. Waits only when nothing moved."""
    sent = 0
    if not data:
        channel.shutdown_write()
    while True:
        moved = False
        if sent < len(data):
            if channel.closed or channel.exit_status_ready():
                sent = len(data)   # the command is gone: the rest has no reader
            elif channel.send_ready():
                try:
                    sent += channel.send(data[sent:sent + CHUNK_BYTES])
                except OSError:
                    if not channel.closed:
                        raise
                    sent = len(data)   # closed since the look above: as before
                moved = True
                if sent == len(data) and not channel.closed:
                    channel.shutdown_write()
        if channel.recv_ready():
            stdout.add(channel.recv(CHUNK_BYTES))
            moved = True
        if channel.recv_stderr_ready():
            stderr.add(channel.recv_stderr(CHUNK_BYTES))
            moved = True
        if not moved and _ended(channel):
            return True
        remaining_s = deadline - clock()
        if remaining_s <= 0:
            return False
        if not moved:
            wait(channel, min(remaining_s, POLL_INTERVAL_S))


class _Expired(Exception):
    """The deadline passed during an SFTP transfer (raised by its progress callback)."""


def check_remote_path(path: str) -> None:
    if not path.startswith("/") or path.endswith("/") or "\0" in path or "\n" in path:
        raise ValueError(f"remote path {path!r}: an absolute file path without NUL or newline")


# ---------------------------------------------------------------- a session

class HostSession:
    """One authenticated connection to one host (connect() makes it)."""

    def __init__(self, name: str, connection: Connection, options: SshOptions, client: paramiko.SSHClient,
                 clock: Clock = time.monotonic):
        self.name = name
        self.connection = connection
        self.options = options
        self._client = client
        self._clock = clock
        self._sftp: paramiko.SFTPClient | None = None
        self._closed = False

    def __enter__(self) -> HostSession:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._drop_sftp()
        self._client.close()

    def _error(self, kind: type[SshError], problem: str) -> SshError:
        return kind(self.name, self.connection, problem)

    def _timeout_s(self, timeout_s: float | None) -> float:
        if timeout_s is None:
            return self.options.command_timeout_s
        if not timeout_s > 0:
            raise ValueError(f"timeout_s: must be > 0, not {timeout_s!r}")
        return timeout_s

    def _open_channel(self, timeout_s: float, what: str) -> paramiko.Channel:
        transport = None if self._closed else self._client.get_transport()
        if transport is None or not transport.is_active():
            raise self._error(SshError, f"{what}: the SSH connection is closed")
        try:
            return transport.open_session(timeout=min(timeout_s, self.options.connect_timeout_s))
        except _TRANSPORT_ERRORS as error:
            raise self._error(SshError, f"{what}: cannot open a channel: {reason(error)}") from error

    # --- commands

    def run(self, command: str, *, input: bytes | str | None = None, timeout_s: float | None = None,
            check: bool = True) -> CommandResult:
        """Runs `command` with the remote user's shell; see the module doc."""
        timeout_s = self._timeout_s(timeout_s)
        data = input.encode() if isinstance(input, str) else (input or b"")
        deadline = self._clock() + timeout_s
        shown = f"`{shorten_command(command)}`"
        limit = self.options.max_output_bytes
        stdout, stderr = OutputBuffer(limit), OutputBuffer(limit)
        channel = self._open_channel(timeout_s, shown)
        watchdog = _Watchdog(deadline - self._clock(), channel.close)
        try:
            with watchdog:
                channel.exec_command(command)
            finished = pump(channel, data, stdout, stderr, deadline, self._clock)
        except _TRANSPORT_ERRORS as error:
            if not watchdog.fired:
                raise self._error(SshError, f"{shown}: the connection failed: {reason(error)}") from error
            finished = False
        finally:
            channel.close()
        if not finished:
            raise self._error(CommandTimeout, f"{shown} did not finish within {timeout_s:g} s: stopped waiting "
                                              "and closed its channel (the command itself may still run)")
        result = CommandResult(channel.recv_exit_status(), stdout.text(), stderr.text())
        if check and result.exit_status != 0:
            raise self._error(CommandFailed, failure_message(command, result))
        return result

    # --- files

    def upload(self, local_path: Path, remote_path: str, sha256: str, mode: int = 0o644, *,
               timeout_s: float | None = None) -> bool:
        """Installs the local file at remote_path; False when it is there already."""
        try:
            source = open(local_path, "rb")
        except OSError as error:
            raise self._error(TransferFailed, f"cannot read {local_path}: {reason(error)}") from error
        with source:
            return self._install(remote_path, sha256, mode, source, f"upload of {local_path}", timeout_s)

    def write_file(self, remote_path: str, data: bytes, mode: int = 0o644, *,
                   timeout_s: float | None = None) -> bool:
        """Writes `data` to remote_path, atomically; False when it has that already."""
        digest = hashlib.sha256(data).hexdigest()
        return self._install(remote_path, digest, mode, io.BytesIO(data), f"write of {remote_path}", timeout_s)

    def read_file(self, remote_path: str, max_bytes: int = 1 << 20, *,
                  timeout_s: float | None = None) -> bytes | None:
        """The file's content; None when it does not exist. TransferFailed when
        it is over max_bytes (a cut file would be read as a whole one)."""
        check_remote_path(remote_path)
        if max_bytes < 0:
            raise ValueError(f"max_bytes: must be >= 0, not {max_bytes!r}")
        timeout_s = self._timeout_s(timeout_s)
        deadline = self._clock() + timeout_s

        def read(sftp: paramiko.SFTPClient) -> bytes | None:
            try:
                with sftp.open(remote_path, "rb") as file:
                    return file.read(max_bytes + 1)
            except FileNotFoundError:
                return None

        data = self._sftp_call(f"read of {remote_path}", deadline, timeout_s, read)
        if data is not None and len(data) > max_bytes:
            raise self._error(TransferFailed, f"read of {remote_path}: over max_bytes={max_bytes} bytes")
        return data

    def _install(self, remote_path: str, sha256: str, mode: int, source: IO[bytes], what: str,
                 timeout_s: float | None) -> bool:
        check_remote_path(remote_path)
        if not _SHA256.match(sha256):
            raise ValueError(f"sha256 {sha256!r}: 64 lowercase hex digits")
        if not 0 <= mode <= 0o7777:
            raise ValueError(f"mode {mode:o}: a permission mode, 0..7777 octal")
        timeout_s = self._timeout_s(timeout_s)
        deadline = self._clock() + timeout_s
        state = self._file_state(remote_path, deadline, timeout_s, what)
        if state is not None and state[0] == sha256:
            if state[1] == mode:
                return False
            self.run(shell_join(["chmod", f"{mode:o}", "--", remote_path]),
                     timeout_s=self._remaining_s(deadline, timeout_s, what))
            return True
        part = remote_path + ".part"
        self.run(shell_join(["mkdir", "-p", "--", posixpath.dirname(remote_path)]),
                 timeout_s=self._remaining_s(deadline, timeout_s, what))
        try:
            self._sftp_call(what, deadline, timeout_s, lambda sftp: self._put(sftp, source, part, mode, deadline))
            got = self._file_state(part, deadline, timeout_s, what)
            if got is None or got[0] != sha256:
                raise self._error(TransferFailed, f"{what} to {remote_path}: the host has sha256 "
                                                  f"{got[0] if got else 'nothing'}, expected {sha256}: "
                                                  "nothing installed")
            self._sftp_call(what, deadline, timeout_s, lambda sftp: sftp.posix_rename(part, remote_path))
        except BaseException:
            self._discard(part)
            raise
        return True

    def _put(self, sftp: paramiko.SFTPClient, source: IO[bytes], part: str, mode: int, deadline: float) -> None:
        def progress(done: int, total: int) -> None:
            if self._clock() >= deadline:
                raise _Expired()
        sftp.putfo(source, part, callback=progress, confirm=True)
        sftp.chmod(part, mode)   # before the rename: the file never shows another mode

    def _file_state(self, path: str, deadline: float, timeout_s: float, what: str) -> tuple[str, int] | None:
        """(sha256, permission bits) of a regular file on the host; None if there is none."""
        quoted = shlex.quote(path)
        command = (f"if [ -f {quoted} ]; then {shell_join(['stat', '-L', '-c', '%a', '--', path])} "
                   f"&& sha256sum < {quoted}; fi")
        answer = self.run(command, timeout_s=self._remaining_s(deadline, timeout_s, what)).stdout.split()
        if not answer:
            return None
        if len(answer) < 2 or not re.fullmatch(r"[0-7]{1,4}", answer[0]) or not _SHA256.match(answer[1]):
            raise self._error(SshError, f"{what}: unexpected answer of stat/sha256sum for {path}: "
                                        f"{one_line(' '.join(answer), 200)}")
        return answer[1], int(answer[0], 8)

    def _remaining_s(self, deadline: float, timeout_s: float, what: str) -> float:
        remaining_s = deadline - self._clock()
        if remaining_s <= 0:
            raise self._error(CommandTimeout, f"{what} did not finish within {timeout_s:g} s")
        return remaining_s

    def _sftp_call(self, what: str, deadline: float, timeout_s: float,
                   call: Callable[[paramiko.SFTPClient], Any]) -> Any:
        """call(sftp), each SFTP request bounded by the time left; after any
        failure the SFTP channel is dropped (its state is unknown)."""
        remaining_s = self._remaining_s(deadline, timeout_s, what)
        sftp = self._sftp_client(remaining_s, what)
        sftp.get_channel().settimeout(remaining_s)
        try:
            return call(sftp)
        except (_Expired, TimeoutError) as error:
            self._drop_sftp()
            raise self._error(CommandTimeout, f"{what} did not finish within {timeout_s:g} s") from error
        except _TRANSPORT_ERRORS as error:
            self._drop_sftp()
            raise self._error(TransferFailed, f"{what}: {reason(error)}") from error

    def _sftp_client(self, timeout_s: float, what: str) -> paramiko.SFTPClient:
        if self._sftp is not None:
            return self._sftp
        channel = self._open_channel(timeout_s, f"{what}: SFTP")
        watchdog = _Watchdog(timeout_s, channel.close)
        try:
            with watchdog:
                channel.invoke_subsystem("sftp")
            channel.settimeout(timeout_s)   # bounds the version exchange below
            self._sftp = paramiko.SFTPClient(channel)
        except _TRANSPORT_ERRORS as error:
            channel.close()
            kind = CommandTimeout if watchdog.fired or isinstance(error, TimeoutError) else TransferFailed
            raise self._error(kind, f"{what}: no SFTP session: {reason(error)}") from error
        return self._sftp

    def _drop_sftp(self) -> None:
        sftp, self._sftp = self._sftp, None
        if sftp is not None:
            with contextlib.suppress(*_TRANSPORT_ERRORS):
                sftp.close()

    def _discard(self, part: str) -> None:
        """Best effort after a failed transfer: no part file stays behind."""
        with contextlib.suppress(SshError):
            self.run(shell_join(["rm", "-f", "--", part]), timeout_s=self.options.connect_timeout_s, check=False)
