"""known_hosts, read and appended as OpenSSH does (the host key rules of ssh.py).

- The host field is the address on port 22, `[ADDRESS]:PORT` on any other
  (`known_hosts_name`); a key is shown as its type and OpenSSH's fingerprint,
  `SHA256:` and the unpadded base64 of the key blob's SHA-256.
- Reading (`read_known_hosts`) holds a shared flock, so a line being appended
  is never read half-written; a missing file has no keys. Lines OpenSSH would
  skip (bad base64, unknown key types) are skipped; hashed host names match;
  `@cert-authority` lines are ignored (no host certificates are used) and
  the keys of `@revoked` lines are collected, to be refused for every host.
- Appending (`record_host_key`, for trust on first use) holds an exclusive
  flock and re-reads the file under it: parallel writers (threads or
  processes) record a key once, and a different key recorded meanwhile is a
  conflict, never a second line. The file is created 0600 and its directory
  0700 when missing; the line ends with a newline, and one is added first if
  the file did not end with one.
- Every lock wait is bounded (`lock_timeout_s`); the file is read up to
  MAX_KNOWN_HOSTS_BYTES.
- A refused key's message (unknown, mismatch, revoked) names the key by
  type and fingerprint and says how to go on safely.
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import os
import shlex
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Callable

import paramiko
from paramiko.hostkeys import HostKeyEntry, InvalidHostKey

MAX_KNOWN_HOSTS_BYTES = 16 << 20
LOCK_POLL_INTERVAL_S = 0.02

Clock = Callable[[], float]


class KnownHostsError(Exception):
    """known_hosts cannot be read or written; the message names the file."""


class KnownHostsConflict(KnownHostsError):
    def __init__(self, path: Path, name: str, recorded: str):
        self.recorded = recorded   # "TYPE SHA256:..." of the key already recorded for `name`
        super().__init__(f"{path} already records another key for {name}: {recorded}")


def fingerprint_sha256(key_blob: bytes) -> str:
    """OpenSSH's fingerprint of a public key blob: `SHA256:` and unpadded base64."""
    return "SHA256:" + base64.b64encode(hashlib.sha256(key_blob).digest()).decode().rstrip("=")


def describe_key(key: paramiko.PKey) -> str:
    return f"{key.get_name()} {fingerprint_sha256(key.asbytes())}"


def known_hosts_name(address: str, port: int) -> str:
    """The host field OpenSSH writes and looks up: the address alone on port 22."""
    return address if port == 22 else f"[{address}]:{port}"


def known_hosts_line(address: str, port: int, key_type: str, key_base64: str) -> str:
    return f"{known_hosts_name(address, port)} {key_type} {key_base64}\n"


@dataclass(frozen=True)
class KnownHosts:
    keys: paramiko.HostKeys
    revoked: frozenset[bytes]   # key blobs of `@revoked` lines


def parse_known_hosts(text: str) -> KnownHosts:
    keys, revoked = paramiko.HostKeys(), set()
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        marker = None
        if line.startswith("@"):
            marker, _, line = line.partition(" ")
            line = line.strip()
        try:
            entry = HostKeyEntry.from_line(line, number)
        except (InvalidHostKey, paramiko.SSHException, ValueError):
            continue   # as OpenSSH: a line it cannot read is skipped
        if entry is None or entry.key is None:
            continue
        if marker == "@revoked":
            revoked.add(entry.key.asbytes())
        elif marker is None:
            for name in entry.hostnames:
                keys.add(name, entry.key.get_name(), entry.key)
    return KnownHosts(keys, frozenset(revoked))


def _flock(file: IO[Any], kind: int, path: Path, timeout_s: float, clock: Clock = time.monotonic) -> None:
    deadline = clock() + timeout_s
    while True:
        try:
            fcntl.flock(file, kind | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if clock() >= deadline:
                raise KnownHostsError(f"{path}: still locked by another process after {timeout_s:g} s") from None
            time.sleep(LOCK_POLL_INTERVAL_S)


def _read_locked(file: IO[bytes], path: Path) -> str:
    file.seek(0)
    data = file.read(MAX_KNOWN_HOSTS_BYTES + 1)
    if len(data) > MAX_KNOWN_HOSTS_BYTES:
        raise KnownHostsError(f"{path}: over {MAX_KNOWN_HOSTS_BYTES} bytes, not a known_hosts file?")
    return data.decode(errors="replace")


def read_known_hosts(path: Path, lock_timeout_s: float) -> KnownHosts:
    """The file's keys, read under a shared lock; a missing file has none."""
    try:
        with open(path, "rb") as file:
            _flock(file, fcntl.LOCK_SH, path, lock_timeout_s)
            return parse_known_hosts(_read_locked(file, path))
    except FileNotFoundError:
        return parse_known_hosts("")
    except OSError as error:
        raise KnownHostsError(f"{path}: {error.strerror or error}") from error


def record_host_key(path: Path, address: str, port: int, key_type: str, key_base64: str,
                    lock_timeout_s: float) -> bool:
    """Appends the host's key to known_hosts, unless it is there already
    (False). Raises KnownHostsConflict when another key is recorded for it."""
    name = known_hosts_name(address, port)
    try:
        if not path.parent.exists():
            path.parent.mkdir(parents=True, mode=0o700, exist_ok=True)
            os.chmod(path.parent, 0o700)   # whatever the umask
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "a+b") as file:
            _flock(file, fcntl.LOCK_EX, path, lock_timeout_s)
            text = _read_locked(file, path)   # again: another writer may have been first
            for key in (parse_known_hosts(text).keys.lookup(name) or {}).values():
                if key.get_name() == key_type and key.get_base64() == key_base64:
                    return False
                raise KnownHostsConflict(path, name, describe_key(key))
            separator = "\n" if text and not text.endswith("\n") else ""
            file.write((separator + known_hosts_line(address, port, key_type, key_base64)).encode())
            file.flush()
            os.fsync(file.fileno())
            return True
    except OSError as error:
        raise KnownHostsError(f"{path}: {error.strerror or error}") from error


# ---------------------------------------------------------------- what a refusal says

def unknown_key_message(address: str, port: int, key: paramiko.PKey, known_hosts: Path) -> str:
    return (f"host key {describe_key(key)} is not in {known_hosts}: refused. If that is the host's key "
            f"(`ssh-keygen -lf` of its /etc/ssh/ssh_host_*_key.pub shows it), run again with "
            f"--trust-on-first-use, or add it with `ssh-keyscan -p {port} {address} >> {known_hosts}`")


def mismatch_message(address: str, port: int, offered: paramiko.PKey, recorded: paramiko.PKey,
                     known_hosts: Path) -> str:
    name = known_hosts_name(address, port)
    return (f"host key {describe_key(offered)} is not the key {known_hosts} records for {name} "
            f"({describe_key(recorded)}): refused. Someone may be intercepting the connection; if the host "
            f"was re-installed, check its new key and remove the old one with "
            f"`ssh-keygen -R {shlex.quote(name)} -f {known_hosts}`")


def revoked_message(key: paramiko.PKey, known_hosts: Path) -> str:
    return f"host key {describe_key(key)} is marked @revoked in {known_hosts}: refused"
