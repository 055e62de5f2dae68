"""The SSH transport of `kafkactl deploy` against real sshd hosts (tests/support/ssh_hosts.py).

Host keys are checked as OpenSSH does (and OpenSSH accepts what trust on
first use writes); commands and transfers are bounded and atomic; on_hosts
works on the hosts at once. What happened on a host is checked through the
host itself (`host.run`, no SSH), so a broken transport cannot hide its bug.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shutil
import socket
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest

from kafkactl.cluster.deploy.inventory import Connection
from kafkactl.cluster.deploy.parallel import on_hosts
from kafkactl.cluster.deploy.ssh import SshOptions, connect
from kafkactl.cluster.deploy.ssh_results import (
    AuthenticationFailed, CommandFailed, CommandTimeout, HostKeyMismatch, HostKeyUnknown, TransferFailed, Unreachable,
    shell_join,
)

CONNECT_TIMEOUT_S = 5.0


def options(known_hosts: Path, **overrides) -> SshOptions:
    return SshOptions(known_hosts, **{"connect_timeout_s": CONNECT_TIMEOUT_S, "command_timeout_s": 60.0, **overrides})


def connection(host, **overrides) -> Connection:
    return Connection(**{"address": host.address, "port": host.port, "user": host.user,
                         "key_file": str(host.private_key), **overrides})


def fingerprint(public_key: str, tmp_path: Path) -> str:
    """What OpenSSH shows for a key: `ssh-keygen -lf`."""
    path = tmp_path / f"key-{uuid.uuid4().hex[:8]}.pub"
    path.write_text(public_key + "\n")
    shown = subprocess.run(["ssh-keygen", "-lf", str(path)], capture_output=True, text=True, timeout=10, check=True)
    return shown.stdout.split()[1]


def remote_path(host, *parts: str) -> str:
    return "/".join([host.install_root, f"t-{uuid.uuid4().hex[:8]}", *parts])


# --- commands

def test_runs_commands_with_their_output_exit_status_and_input(ssh_hosts, known_hosts):
    host = ssh_hosts.hosts[0]
    with connect(host.name, connection(host), options(known_hosts, max_output_bytes=8 << 20)) as session:
        assert session.name == host.name
        assert session.run("hostname").stdout.strip() == host.name
        result = session.run("echo out; echo err >&2; exit 7", check=False)
        assert (result.exit_status, result.stdout, result.stderr) == (7, "out\n", "err\n")
        assert session.run("tr a-z A-Z", input="hello").stdout == "HELLO"
        quoted = shell_join(["printf", "%s", "a b; echo injected $(hostname)"])
        assert session.run(quoted).stdout == "a b; echo injected $(hostname)"
        # input and output of several windows' size at once: neither direction stalls the other
        data = base64.b64encode(os.urandom(3 << 20)).decode()   # 4 MiB of text
        assert session.run("cat", input=data).stdout == data
        blob = os.urandom(5 << 20)
        assert session.run("sha256sum", input=blob).stdout.split()[0] == hashlib.sha256(blob).hexdigest()


def test_a_failed_command_names_the_host_the_status_and_its_last_lines(ssh_hosts, known_hosts):
    host = ssh_hosts.hosts[0]
    with connect(host.name, connection(host), options(known_hosts)) as session:
        with pytest.raises(CommandFailed) as error:
            session.run("echo one >&2; echo two >&2; exit 3")
    assert str(error.value) == (f"host {host.name} ({host.address}:22): "
                                "`echo one >&2; echo two >&2; exit 3` exited 3: one / two")


def test_a_command_over_its_timeout_is_stopped_and_the_session_stays_usable(ssh_hosts, known_hosts):
    host = ssh_hosts.hosts[0]
    duration = f"120.{uuid.uuid4().int % 10**6:06d}"   # a sleep of its own, to find it on the host
    command = f"echo started; sleep {duration}; echo done"
    try:
        with connect(host.name, connection(host), options(known_hosts)) as session:
            with pytest.raises(CommandTimeout) as error:
                session.run(command, timeout_s=1)
            assert str(error.value) == (f"host {host.name} ({host.address}:22): `{command}` did not finish within "
                                        "1 s: stopped waiting and closed its channel (the command itself may still "
                                        "run)")
            assert session.run("echo still usable").stdout == "still usable\n"
    finally:
        host.run(f"pkill -x -f 'sleep {duration}' || true")   # the timeout does not kill the remote command


def test_output_beyond_max_output_bytes_is_dropped_with_a_marker(ssh_hosts, known_hosts):
    host = ssh_hosts.hosts[1]
    limit = 1 << 20
    with connect(host.name, connection(host), options(known_hosts, max_output_bytes=limit)) as session:
        result = session.run("head -c 10485760 /dev/zero | tr '\\0' x; echo end >&2")
    head, marker, tail = re.fullmatch(r"(x*)\n(\[kafkactl: [^\]]*\])\n(x*)", result.stdout).groups()
    assert len(head) + len(tail) == limit
    assert marker == f"[kafkactl: {(10 << 20) - limit} bytes of output dropped here, over max_output_bytes={limit}]"
    assert result.stderr == "end\n"


# --- host keys

def test_an_unknown_host_key_is_refused_with_its_fingerprint_and_nothing_is_written(ssh_hosts, tmp_path):
    host = ssh_hosts.hosts[0]
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    for path in (empty, tmp_path / "missing" / "known_hosts"):
        with pytest.raises(HostKeyUnknown) as error:
            connect(host.name, connection(host), options(path))
        message = str(error.value)
        assert message.startswith(f"host {host.name} ({host.address}:22): host key ssh-ed25519 "
                                  f"{fingerprint(host.host_public_key, tmp_path)} is not in {path}: refused.")
        assert "--trust-on-first-use" in message and f"`ssh-keyscan -p 22 {host.address} >> {path}`" in message
    assert empty.read_text() == "" and not (tmp_path / "missing").exists()


def test_trust_on_first_use_records_the_key_as_openssh_writes_it(ssh_hosts, tmp_path):
    host = ssh_hosts.hosts[0]
    path = tmp_path / "ssh" / "known_hosts"
    with connect(host.name, connection(host), options(path, trust_on_first_use=True)) as session:
        assert session.run("hostname").stdout.strip() == host.name
    assert path.read_text() == f"{host.address} {host.host_public_key}\n"
    assert (path.stat().st_mode & 0o777, path.parent.stat().st_mode & 0o777) == (0o600, 0o700)
    with connect(host.name, connection(host), options(path)) as session:   # now strict checking knows it
        assert session.run("hostname").stdout.strip() == host.name
    openssh = subprocess.run(host.ssh_argv(path, "true"), capture_output=True, text=True, timeout=30)
    assert openssh.returncode == 0, openssh.stderr


def test_parallel_first_connects_record_each_host_once(ssh_hosts, tmp_path):
    path = tmp_path / "known_hosts"
    targets = [(host.name, connection(host)) for host in ssh_hosts.hosts for _ in range(2)]  # each host twice at once
    outcomes = on_hosts(targets, lambda session: session.run("hostname").stdout.strip(),
                        options(path, trust_on_first_use=True), parallel=len(targets))
    assert [(o.value, o.error) for o in outcomes] == [(name, None) for name, _ in targets]
    assert sorted(path.read_text().splitlines()) == sorted(h.known_hosts_line() for h in ssh_hosts.hosts)


def test_a_key_other_than_the_recorded_one_is_refused_even_with_trust_on_first_use(ssh_hosts, tmp_path):
    first, second = ssh_hosts.hosts[:2]
    path = tmp_path / "known_hosts"
    recorded = f"{first.address} {second.host_public_key}\n"
    path.write_text(recorded)
    for trust in (False, True):
        with pytest.raises(HostKeyMismatch) as error:
            connect(first.name, connection(first), options(path, trust_on_first_use=trust))
        assert str(error.value).startswith(
            f"host {first.name} ({first.address}:22): host key ssh-ed25519 "
            f"{fingerprint(first.host_public_key, tmp_path)} is not the key {path} records for {first.address} "
            f"(ssh-ed25519 {fingerprint(second.host_public_key, tmp_path)}): refused.")
    assert path.read_text() == recorded


def test_a_revoked_key_is_refused_even_where_it_is_also_recorded(ssh_hosts, tmp_path):
    host = ssh_hosts.hosts[1]
    revoked = f"@revoked * {host.host_public_key}\n"
    for recorded in ("", host.known_hosts_line() + "\n"):
        path = tmp_path / "known_hosts"
        path.write_text(recorded + revoked)
        with pytest.raises(HostKeyMismatch) as error:
            connect(host.name, connection(host), options(path, trust_on_first_use=True))
        assert str(error.value) == (f"host {host.name} ({host.address}:22): host key ssh-ed25519 "
                                    f"{fingerprint(host.host_public_key, tmp_path)} is marked @revoked in {path}: "
                                    "refused")
        assert path.read_text() == recorded + revoked


def test_a_hashed_known_hosts_file_is_read(ssh_hosts, known_hosts, tmp_path):
    host = ssh_hosts.hosts[2]
    hashed = tmp_path / "known_hosts"
    shutil.copy(known_hosts, hashed)
    subprocess.run(["ssh-keygen", "-H", "-f", str(hashed)], capture_output=True, timeout=10, check=True)
    assert host.address not in hashed.read_text()
    with connect(host.name, connection(host), options(hashed)) as session:
        assert session.run("hostname").stdout.strip() == host.name


# --- authentication and reachability

def test_a_key_the_host_does_not_accept_fails_naming_the_user(ssh_hosts, known_hosts, tmp_path):
    host = ssh_hosts.hosts[0]
    stranger = tmp_path / "stranger_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(stranger)], timeout=10, check=True)
    with pytest.raises(AuthenticationFailed) as error:
        connect(host.name, connection(host, key_file=str(stranger)), options(known_hosts))
    assert str(error.value).startswith(f"host {host.name} ({host.address}:22): user root was refused with "
                                       f"key file {stranger}")


def test_no_host_at_the_address_and_a_closed_port_are_unreachable_within_the_connect_timeout(ssh_hosts, known_hosts):
    host = ssh_hosts.hosts[0]
    nobody = host.address.rsplit(".", 1)[0] + ".250"   # on the hosts' subnet, no host there
    timeout_s = 2.0
    for name, target, problem in (("ghost", connection(host, address=nobody), "no answer within 2 s"),
                                  ("closed", connection(host, port=1), "cannot connect: Connection refused")):
        started = time.monotonic()
        with pytest.raises(Unreachable) as error:
            connect(name, target, options(known_hosts, connect_timeout_s=timeout_s))
        assert time.monotonic() - started < 5 * timeout_s   # a bound against a hang, not a speed test
        assert str(error.value) in (f"host {name} ({target.address}:{target.port}): {problem}",
                                    f"host {name} ({target.address}:{target.port}): cannot connect: No route to host")


def test_a_listener_that_never_speaks_ssh_is_unreachable_within_the_connect_timeout(known_hosts):
    with socket.create_server(("127.0.0.1", 0)) as silent:   # the kernel completes the TCP handshake
        port = silent.getsockname()[1]
        target = Connection("127.0.0.1", port, "root", None)
        started = time.monotonic()
        with pytest.raises(Unreachable) as error:
            connect("silent", target, options(known_hosts, connect_timeout_s=1.0))
        assert time.monotonic() - started < 5 * 1.0   # a bound against a hang, not a speed test
    assert str(error.value).startswith(f"host silent (127.0.0.1:{port}): no SSH handshake within 1 s (")


# --- files

def test_upload_installs_a_file_once_with_its_digest_and_mode(ssh_hosts, known_hosts, tmp_path):
    host = ssh_hosts.hosts[1]
    local = tmp_path / "big.bin"
    local.write_bytes(os.urandom(20 << 20))
    digest = hashlib.sha256(local.read_bytes()).hexdigest()
    target = remote_path(host, "lib", "big.bin")    # its directories do not exist yet
    with connect(host.name, connection(host), options(known_hosts)) as session:
        assert session.upload(local, target, digest, 0o640) is True
        assert host.run(f"sha256sum {target}").stdout.split()[0] == digest
        assert host.run(f"stat -c %a {target}").stdout.strip() == "640"
        assert host.run(f"ls -A {os.path.dirname(target)}").stdout.split() == ["big.bin"]   # no .part left
        modified = host.run(f"stat -c %y {target}").stdout
        assert session.upload(local, target, digest, 0o640) is False
        assert session.upload(local, target, digest, 0o600) is True    # only the mode changes
        assert host.run(f"stat -c '%a %y' {target}").stdout == f"600 {modified}"   # nothing sent again


def test_an_upload_that_arrives_with_another_digest_installs_nothing(ssh_hosts, known_hosts, tmp_path):
    host = ssh_hosts.hosts[1]
    good, other = tmp_path / "good", tmp_path / "other"
    good.write_bytes(b"good\n")
    other.write_bytes(b"other\n")
    expected, arrived = hashlib.sha256(b"expected\n").hexdigest(), hashlib.sha256(b"other\n").hexdigest()
    target, fresh = remote_path(host, "app.bin"), remote_path(host, "new.bin")
    with connect(host.name, connection(host), options(known_hosts)) as session:
        session.upload(good, target, hashlib.sha256(b"good\n").hexdigest())
        for path in (target, fresh):
            with pytest.raises(TransferFailed) as error:
                session.upload(other, path, expected)
            assert str(error.value) == (f"host {host.name} ({host.address}:22): upload of {other} to {path}: the "
                                        f"host has sha256 {arrived}, expected {expected}: nothing installed")
    assert host.run(f"cat {target}").stdout == "good\n"     # the installed file is untouched
    assert host.run(f"test ! -e {fresh} && test ! -e {fresh}.part && test ! -e {target}.part",
                    check=False).returncode == 0


def test_write_file_replaces_atomically_and_leaves_equal_content_alone(ssh_hosts, known_hosts):
    host = ssh_hosts.hosts[2]
    target = remote_path(host, "conf", "server.properties")
    with connect(host.name, connection(host), options(known_hosts)) as session:
        assert session.write_file(target, b"broker.id=1\n", 0o600) is True
        first_inode = host.run(f"stat -c '%i %a' {target}").stdout.split()
        assert first_inode[1] == "600"
        assert session.write_file(target, b"broker.id=1\n", 0o600) is False
        assert host.run(f"stat -c '%i %a' {target}").stdout.split() == first_inode
        assert session.write_file(target, b"broker.id=2\n", 0o600) is True
        # renamed over the old file: a new inode, never the old one rewritten in place
        assert host.run(f"stat -c %i {target}").stdout.split()[0] != first_inode[0]
        assert host.run(f"cat {target}").stdout == "broker.id=2\n"
        assert host.run(f"ls -A {os.path.dirname(target)}").stdout.split() == ["server.properties"]
        assert session.read_file(target) == b"broker.id=2\n"
        assert session.read_file(target + ".missing") is None
        with pytest.raises(TransferFailed, match=rf"read of {re.escape(target)}: over max_bytes=4 bytes"):
            session.read_file(target, max_bytes=4)


# --- many hosts

def test_on_hosts_works_on_the_hosts_at_once_and_reports_each_failure_in_order(ssh_hosts, known_hosts):
    first, second, third = ssh_hosts.hosts
    all_started = threading.Barrier(3)

    def work(session):
        all_started.wait(timeout=30)   # passes only when the three hosts' work runs at the same time
        return session.run("hostname").stdout.strip()

    targets = [(first.name, connection(first)), ("bogus", connection(first, port=1)),
               (second.name, connection(second)), (third.name, connection(third))]
    outcomes = on_hosts(targets, work, options(known_hosts), parallel=8)
    assert [(o.name, o.value) for o in outcomes] == [(first.name, first.name), ("bogus", None),
                                                     (second.name, second.name), (third.name, third.name)]
    assert [o.ok for o in outcomes] == [True, False, True, True]
    assert outcomes[1].error == f"host bogus ({first.address}:1): cannot connect: Connection refused"
