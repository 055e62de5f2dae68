import socket
from pathlib import Path

import paramiko
import pytest
from paramiko.ssh_exception import NoValidConnectionsError

from kafkactl.cluster.deploy.inventory import Connection
from kafkactl.cluster.deploy.known_hosts import fingerprint_sha256, unknown_key_message
from kafkactl.cluster.deploy.ssh import POLL_INTERVAL_S, SshOptions, check_remote_path, connect_error, pump
from kafkactl.cluster.deploy.ssh_results import AuthenticationFailed, HostKeyMismatch, OutputBuffer, Unreachable

CONNECTION = Connection("10.0.0.5", 2222, "deploy", "/keys/deploy")
OPTIONS = SshOptions(Path("/home/op/.ssh/known_hosts"), connect_timeout_s=3)


# --- messages

def test_the_unknown_key_message_gives_the_fingerprint_and_both_ways_to_accept_it():
    key = paramiko.ECDSAKey.generate()
    message = unknown_key_message("10.0.0.5", 2222, key, Path("/k/known_hosts"))
    assert f"host key ecdsa-sha2-nistp256 {fingerprint_sha256(key.asbytes())} is not in /k/known_hosts" in message
    assert "--trust-on-first-use" in message
    assert "`ssh-keyscan -p 2222 10.0.0.5 >> /k/known_hosts`" in message


# --- what connecting raised, as an SshError

def test_a_different_host_key_is_a_mismatch_naming_both_keys_and_the_fix():
    offered, recorded = paramiko.ECDSAKey.generate(), paramiko.ECDSAKey.generate()
    error = connect_error("kafka-1", CONNECTION, OPTIONS,
                          paramiko.BadHostKeyException("[10.0.0.5]:2222", offered, recorded), True)
    assert isinstance(error, HostKeyMismatch)
    assert str(error).startswith("host kafka-1 (10.0.0.5:2222): host key ecdsa-sha2-nistp256 "
                                 f"{fingerprint_sha256(offered.asbytes())} is not the key "
                                 "/home/op/.ssh/known_hosts records for [10.0.0.5]:2222 (ecdsa-sha2-nistp256 "
                                 f"{fingerprint_sha256(recorded.asbytes())}): refused.")
    assert "`ssh-keygen -R '[10.0.0.5]:2222' -f /home/op/.ssh/known_hosts`" in str(error)


def test_a_refused_login_names_the_user_and_the_key():
    error = connect_error("kafka-1", CONNECTION, OPTIONS, paramiko.AuthenticationException("Authentication failed."),
                          True)
    assert isinstance(error, AuthenticationFailed)
    assert str(error) == ("host kafka-1 (10.0.0.5:2222): user deploy was refused with key file /keys/deploy: "
                          "Authentication failed.")
    agent = connect_error("kafka-2", Connection("10.0.0.6"), OPTIONS,
                          paramiko.SSHException("No authentication methods available"), True)
    assert isinstance(agent, AuthenticationFailed)
    assert "user root could not log in with the SSH agent's keys and the default key files" in str(agent)


@pytest.mark.parametrize("raised, problem", [
    (NoValidConnectionsError({("10.0.0.5", 2222): ConnectionRefusedError(111, "Connection refused")}),
     "cannot connect: Connection refused"),
    (TimeoutError("timed out"), "no answer within 3 s"),
    (socket.gaierror(-2, "Name or service not known"), "cannot resolve 10.0.0.5: Name or service not known"),
    (OSError(113, "No route to host"), "cannot connect: No route to host"),
    (paramiko.SSHException("Error reading SSH protocol banner"),
     "no SSH handshake within 3 s (Error reading SSH protocol banner)"),
    (EOFError(), "no SSH handshake within 3 s (EOFError)"),
])
def test_a_host_that_cannot_be_reached_is_unreachable(raised, problem):
    error = connect_error("kafka-1", CONNECTION, OPTIONS, raised, False)
    assert isinstance(error, Unreachable)
    assert str(error) == f"host kafka-1 (10.0.0.5:2222): {problem}"


# --- inputs

def test_options_refuse_unbounded_values():
    for field, value in (("connect_timeout_s", 0), ("command_timeout_s", -1.0), ("max_output_bytes", 1)):
        with pytest.raises(ValueError, match=rf"SshOptions\.{field}: must be"):
            SshOptions(Path("/k"), **{field: value})


def test_remote_paths_must_be_absolute_file_paths():
    check_remote_path("/opt/kafkactl/bin/kafka.tgz")
    for bad in ("opt/x", "/opt/dir/", "/opt/a\nb", "/opt/a\0b"):
        with pytest.raises(ValueError, match="remote path"):
            check_remote_path(bad)


# --- pump: one loop for stdin, stdout and stderr, with a deadline

class ScriptedChannel:
    """A command's channel as pump() sees it: its output comes in the given
    chunks, its stdin takes at most `window` bytes a send, and it exits once
    its stdin is closed and its output read (or at once: `exits_early`)."""

    def __init__(self, stdout=(), stderr=(), window=1000, exits=True, exits_early=False):
        self.stdout, self.stderr = list(stdout), list(stderr)
        self.window, self.exits, self.exits_early = window, exits, exits_early
        self.stdin = bytearray()
        self.write_closed = False
        self.closed = False

    def shutdown_write(self):
        assert not self.write_closed, "stdin closed twice"
        self.write_closed = True

    def send_ready(self):
        return not self.exits_early

    def send(self, data):
        taken = data[:self.window]
        self.stdin += taken
        return len(taken)

    def recv_ready(self):
        return bool(self.stdout)

    def recv(self, size):
        return self.stdout.pop(0)

    def recv_stderr_ready(self):
        return bool(self.stderr)

    def recv_stderr(self, size):
        return self.stderr.pop(0)

    def exit_status_ready(self):
        return self.exits_early or (self.exits and self.write_closed and not self.stdout and not self.stderr)

    @property
    def eof_received(self):
        return self.exit_status_ready()


class FakeClock:
    def __init__(self):
        self.now = 100.0
        self.waits = []

    def __call__(self):
        return self.now

    def wait(self, channel, timeout_s):
        self.waits.append(timeout_s)
        self.now += timeout_s


def test_pump_feeds_all_input_and_drains_both_streams():
    clock = FakeClock()
    data = bytes(range(256)) * 400
    channel = ScriptedChannel(stdout=[b"o1", b"o2"], stderr=[b"e1"], window=1000)
    out, err = OutputBuffer(100), OutputBuffer(100)
    assert pump(channel, data, out, err, deadline=clock() + 1.0, clock=clock, wait=clock.wait) is True
    assert bytes(channel.stdin) == data and channel.write_closed
    assert (out.text(), err.text()) == ("o1o2", "e1")
    assert clock.waits == []   # something moved on every turn: no idle wait


def test_pump_without_input_closes_stdin_at_once():
    clock = FakeClock()
    channel = ScriptedChannel(stdout=[b"done\n"])
    out, err = OutputBuffer(100), OutputBuffer(100)
    assert pump(channel, b"", out, err, deadline=clock() + 1.0, clock=clock, wait=clock.wait) is True
    assert channel.write_closed and channel.stdin == b"" and out.text() == "done\n"


def test_pump_stops_at_the_deadline_after_draining_what_came():
    clock = FakeClock()
    channel = ScriptedChannel(stdout=[b"partial"], exits=False)
    out, err = OutputBuffer(100), OutputBuffer(100)
    assert pump(channel, b"", out, err, deadline=clock() + 2.0, clock=clock, wait=clock.wait) is False
    assert out.text() == "partial" and clock.now >= 102.0
    assert clock.waits and max(clock.waits) <= POLL_INTERVAL_S


def test_pump_stops_feeding_a_command_that_exited_without_reading():
    clock = FakeClock()
    channel = ScriptedChannel(exits_early=True)
    out, err = OutputBuffer(100), OutputBuffer(100)
    assert pump(channel, b"x" * 10_000, out, err, deadline=clock() + 1.0, clock=clock, wait=clock.wait) is True
    assert channel.stdin == b""
