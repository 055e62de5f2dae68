"""`kafkactl reassign` through the Admin API (cli/reassign_admin.py): the
refusals that need no cluster, and how ListPartitionReassignments' answer
becomes the same partition views and targets as ZooKeeper's."""

import pytest

from kafkactl.cli import reassign_admin
from kafkactl.cli.errors import CliError
from kafkactl.cli.main import main
from kafkactl.cluster.admin import admin_protocol as ap
from kafkactl.cluster.admin.admin_backend import AdminApiBackend
from kafkactl.cluster.admin.topics import PartitionInfo


class Backend(AdminApiBackend):
    """AdminApiBackend's own partition views over Metadata's replicas (no
    adding/removing) and the controller's answers, both given here."""

    def __init__(self, replicas: dict, ongoing: dict, refused: dict | None = None):
        self.replicas, self.ongoing, self.refused = replicas, ongoing, refused or {}
        self.asked = None

    def describe_topics(self, names):
        return {t: [PartitionInfo(t, p, list(r), r[0], 0, list(r)) for (tt, p), r in self.replicas.items() if tt == t]
                for t in names}

    def list_reassignments(self):
        return self.ongoing

    def alter_reassignments(self, targets):
        self.asked = dict(targets)
        return {tp: self.refused.get(tp, ap.Outcome(None)) for tp in targets}


def one_line(err: str) -> str:
    [line] = err.strip().splitlines()
    return line


def test_throttle_with_bootstrap_servers_is_refused_before_anything(tmp_path, capsys):
    plan = tmp_path / "plan.json"
    plan.write_text('{"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1]}]}')
    assert main(["reassign", "execute", "--plan", str(plan), "--throttle", "5", "-b", "127.0.0.1:1"]) == 2
    line = one_line(capsys.readouterr().err)
    assert line.startswith("kafkactl: error: --throttle: ") and "ZooKeeper configs" in line


def test_cancel_rollback_file_with_bootstrap_servers_is_refused(tmp_path, capsys):
    assert main(["reassign", "cancel", "--yes", "--rollback-file", str(tmp_path / "rb.json"),
                 "-b", "127.0.0.1:1"]) == 2
    assert one_line(capsys.readouterr().err).startswith("kafkactl: error: --rollback-file: with -b ")


def test_a_moving_partition_shows_its_adding_and_removing_replicas_and_target():
    backend = Backend({("t", 0): [1, 2, 3], ("t", 1): [2, 3]},
                      {("t", 0): ap.Reassignment((3, 1, 2), adding=(3,), removing=(2,))})
    running, views = reassign_admin.look(backend, {"t"})
    assert running == {("t", 0): [3, 1]}
    assert (views["t", 0].replicas, views["t", 0].adding, views["t", 0].removing) == ((3, 1, 2), (3,), (2,))
    assert views["t", 0].original == (1, 2) and not views["t", 1].is_moving
    [state] = reassign_admin.states_of(backend, running)
    assert (state.status, state.target) == ("in progress", (3, 1))


def test_a_refused_partition_is_named_with_kafkas_error():
    backend = Backend({}, {}, {("t", 1): ap.Outcome("invalid_replica_assignment", "duplicate replica")})
    with pytest.raises(CliError) as refused:
        reassign_admin.start(backend, {("t", 0): [1], ("t", 1): [2, 2]})
    assert str(refused.value) == ("the controller refused topic 't' partition 1: INVALID_REPLICA_ASSIGNMENT "
                                  "(duplicate replica) (1 partition refused, the others started; "
                                  "see `kafkactl reassign status`)")


def saved_replicas(path: str) -> dict:
    import json
    from pathlib import Path

    return {(p["topic"], p["partition"]): p["replicas"] for p in json.loads(Path(path).read_text())["partitions"]}


def test_cancel_saves_the_complete_replicas_as_its_rollback_not_the_targets_in_flight(monkeypatch):
    # t-0 moves from [1, 2] to [3, 1]: 3 is being added (a partial copy), 2 removed.
    backend = Backend({("t", 0): [3, 1, 2], ("t", 1): [2, 3]},
                      {("t", 0): ap.Reassignment((3, 1, 2), adding=(3,), removing=(2,))})
    shown = []
    monkeypatch.setattr(reassign_admin, "emit", lambda ctx, data, table: shown.append(data))
    reassign_admin.cancel(None, backend, wait=False, yes=True)
    [result] = shown
    assert backend.asked == {("t", 0): None}               # KIP-455: no target
    assert saved_replicas(result["rollback_file"]) == {("t", 0): [1, 2]}
    assert saved_replicas(result["revert_plan"]) == {("t", 0): [1, 2]}
