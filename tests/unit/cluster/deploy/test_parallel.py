"""on_hosts' own logic, with connect() replaced by sessions that record their
use (tests/integration/deploy/test_ssh_transport.py runs it on real hosts)."""

import threading
from pathlib import Path

import pytest

from kafkactl.cluster import fatal
from kafkactl.cluster.deploy.inventory import Connection
from kafkactl.cluster.deploy.parallel import HostOutcome, on_hosts
from kafkactl.cluster.deploy.ssh import SshOptions
from kafkactl.cluster.deploy.ssh_results import Unreachable
from kafkactl.cluster.invariant import InvariantViolation

OPTIONS = SshOptions(Path("/k/known_hosts"))


class RecordedSession:
    def __init__(self, name):
        self.name = name
        self.closed = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.closed += 1


class Connector:
    """connect() for on_hosts: a RecordedSession, or Unreachable for `unreachable` names."""

    def __init__(self, unreachable=()):
        self.unreachable = set(unreachable)
        self.sessions = []
        self.lock = threading.Lock()

    def __call__(self, name, connection, options):
        assert options is OPTIONS
        if name in self.unreachable:
            raise Unreachable(name, connection, "cannot connect: Connection refused")
        session = RecordedSession(name)
        with self.lock:
            self.sessions.append(session)
        return session


def targets(*names):
    return [(name, Connection(f"10.0.0.{i}")) for i, name in enumerate(names, 1)]


def test_outcomes_come_in_the_targets_order_with_each_hosts_failure_kept_to_that_host():
    connector = Connector(unreachable={"k4"})

    def work(session):
        if session.name == "k2":
            raise Unreachable("k2", Connection("10.0.0.2"), "the connection failed: EOF")
        if session.name == "k3":
            raise ValueError("bad\nvalue")
        if session.name == "k5":
            raise KeyError()
        return session.name.upper()

    outcomes = on_hosts(targets("k1", "k2", "k3", "k4", "k5"), work, OPTIONS, parallel=3, connect=connector)
    assert outcomes == [
        HostOutcome("k1", "K1", None),
        HostOutcome("k2", None, "host k2 (10.0.0.2:22): the connection failed: EOF"),
        HostOutcome("k3", None, "host k3 (10.0.0.3:22): ValueError: bad value"),
        HostOutcome("k4", None, "host k4 (10.0.0.4:22): cannot connect: Connection refused"),
        HostOutcome("k5", None, "host k5 (10.0.0.5:22): KeyError"),
    ]
    assert sorted((s.name, s.closed) for s in connector.sessions) == [("k1", 1), ("k2", 1), ("k3", 1), ("k5", 1)]


def test_no_more_hosts_run_at_once_than_parallel():
    lock, running, most = threading.Lock(), [0], [0]
    pairs = threading.Barrier(2)

    def work(session):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        pairs.wait(timeout=30)   # two at a time do run together
        with lock:
            running[0] -= 1
        return session.name

    names = [f"k{i}" for i in range(6)]
    outcomes = on_hosts(targets(*names), work, OPTIONS, parallel=2, connect=Connector())
    assert [o.value for o in outcomes] == names and all(o.ok for o in outcomes)
    assert most[0] == 2


def test_no_targets_and_a_bad_parallel():
    assert on_hosts([], lambda session: None, OPTIONS, connect=Connector()) == []
    with pytest.raises(ValueError, match="parallel: at least 1, not 0"):
        on_hosts(targets("k1"), lambda session: None, OPTIONS, parallel=0, connect=Connector())


class Halted(SystemExit):
    pass


def test_a_violated_invariant_halts_instead_of_becoming_a_host_failure(monkeypatch):
    seen = []

    def exit_(status):   # fatal._exit is where the process would end
        seen.append(status)
        raise Halted(status)
    monkeypatch.setattr(fatal, "_exit", exit_)

    def work(session):
        raise InvariantViolation("two controllers")

    with pytest.raises(Halted):
        on_hosts(targets("k1"), work, OPTIONS, connect=Connector())
    assert seen == [fatal.EXIT_STATUS]
