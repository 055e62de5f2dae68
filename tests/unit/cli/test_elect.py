"""`kafkactl elect` against the in-memory ZooKeeper: triggers, refusals and the report."""

import json

import pytest

from kafkactl.cli.main import main


def cluster(zookeeper, live=(1, 2, 3), partitions=None):
    for broker_id in live:
        zookeeper.create(f"/brokers/ids/{broker_id}", json.dumps({
            "version": 5, "host": "h", "port": 9000 + broker_id, "timestamp": "1",
            "endpoints": [f"PLAINTEXT://h:{9000 + broker_id}"]}).encode(), makepath=True)
    partitions = partitions or {0: ([1, 2], 2, [1, 2]), 1: ([2, 3], 2, [2, 3]), 2: ([3, 1], 1, [1])}
    zookeeper.create("/brokers/topics/t", json.dumps(
        {"version": 1, "partitions": {str(p): r for p, (r, _, _) in partitions.items()}}).encode(), makepath=True)
    for partition, (_, leader, isr) in partitions.items():
        set_state(zookeeper, partition, leader, isr, epoch=4, create=True)
    zookeeper.ensure_path("/config/changes")


def set_state(zookeeper, partition, leader, isr, epoch, create=False):
    path = f"/brokers/topics/t/partitions/{partition}/state"
    data = json.dumps({"controller_epoch": 1, "leader": leader, "version": 1, "leader_epoch": epoch,
                       "isr": isr}).encode()
    zookeeper.create(path, data, makepath=True) if create else zookeeper.set(path, data)


def one_line(err):
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kafkactl: error: "), err
    return lines[0]


@pytest.fixture
def controller(monkeypatch):
    """Stands in for the controller: runs `act` when the command starts waiting."""
    from kafkactl.cluster.admin import election

    actions = []
    real_wait_for = election.wait_for

    def wait_for(condition, deadline):
        for act in actions:
            act()
        return real_wait_for(condition, deadline)

    monkeypatch.setattr(election, "wait_for", wait_for)
    return actions


def test_preferred_writes_only_what_can_move_and_reports_every_partition(fake_zookeeper, capsys, controller):
    cluster(fake_zookeeper)
    written = []

    def act():
        written.append(json.loads(fake_zookeeper.data("/admin/preferred_replica_election")))
        set_state(fake_zookeeper, 0, 1, [1, 2], epoch=5)
        fake_zookeeper.delete("/admin/preferred_replica_election")

    controller.append(act)
    assert main(["elect", "preferred", "--topic", "t", "-o", "json", "--timeout", "2"]) == 1
    # t-0 can move; t-1 is led by its preferred replica; t-2's preferred (3) is out of the ISR.
    assert written == [{"version": 1, "partitions": [{"topic": "t", "partition": 0}]}]
    captured = capsys.readouterr()
    rows = {r["partition"]: r for r in json.loads(captured.out)}
    assert rows[0] == {"topic": "t", "partition": 0, "status": "elected", "old_leader": 2, "new_leader": 1,
                       "leader_epoch": 5, "reason": ""}
    assert (rows[1]["status"], rows[1]["reason"]) == ("not needed", "preferred replica 2 already leads")
    assert (rows[2]["status"], rows[2]["reason"]) == ("failed", "preferred replica 3 is not in the ISR 1")
    assert "t-2: preferred replica 3 is not in the ISR" in one_line(captured.err)


def test_preferred_is_refused_while_one_is_in_progress(fake_zookeeper, capsys):
    cluster(fake_zookeeper)
    fake_zookeeper.create("/admin/preferred_replica_election", b'{"version":1,"partitions":[]}', makepath=True)
    before = fake_zookeeper.snapshot()
    assert main(["elect", "preferred", "--all"]) == 1
    assert "in progress" in one_line(capsys.readouterr().err)
    assert fake_zookeeper.snapshot() == before


@pytest.mark.parametrize("args, fragment", [
    ([], "choose exactly one of --all"),
    (["--all", "--topic", "t"], "(got --all and --topic)"),
    (["--partition", "0", "--all"], "--partition needs --topic"),
    (["--topic", "x"], "--topic: topic 'x' does not exist"),
    (["--topic", "t", "--partition", "7"], "--partition: topic 't' has no partition 7"),
])
def test_bad_selections_exit_2(fake_zookeeper, capsys, args, fragment):
    cluster(fake_zookeeper)
    before = fake_zookeeper.snapshot()
    assert main(["elect", "preferred", *args]) == 2
    assert fragment in one_line(capsys.readouterr().err)
    assert fake_zookeeper.snapshot() == before


def test_election_plans_are_checked(fake_zookeeper, tmp_path, capsys, controller):
    cluster(fake_zookeeper)
    before = fake_zookeeper.snapshot()
    plan = tmp_path / "e.json"
    plan.write_text('{"partitions":[{"topic":"t","partition":0},{"topic":"t","partition":9}]}')
    assert main(["elect", "preferred", "--plan", str(plan)]) == 2
    assert "partitions[1] (topic 't' partition 9): \"partition\"" in one_line(capsys.readouterr().err)
    assert fake_zookeeper.snapshot() == before
    plan.write_text('{"partitions":[{"topic":"t","partition":0}]}')
    assert main(["elect", "preferred", "--plan", str(plan), "--no-wait", "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["status"] == "requested"
    assert json.loads(fake_zookeeper.data("/admin/preferred_replica_election"))["partitions"] == \
        [{"topic": "t", "partition": 0}]


def test_unclean_needs_yes_and_refuses_no_wait(fake_zookeeper, capsys):
    cluster(fake_zookeeper, live=(2,), partitions={0: ([1, 2], -1, [1])})
    before = fake_zookeeper.snapshot()
    assert main(["elect", "unclean", "--topic", "t"]) == 2
    assert "--yes" in one_line(capsys.readouterr().err)
    assert main(["elect", "unclean", "--topic", "t", "--yes", "--no-wait"]) == 2
    assert "--no-wait" in one_line(capsys.readouterr().err)
    assert fake_zookeeper.snapshot() == before


def test_unclean_enables_the_topic_setting_waits_then_restores_it(fake_zookeeper, capsys, controller):
    # t-0: leader gone, only 2 (out of the ISR) alive; t-1: no live replica; t-2: led by a live broker.
    cluster(fake_zookeeper, live=(2, 3), partitions={0: ([1, 2], -1, [1]), 1: ([1, 4], -1, [1]),
                                                     2: ([3, 1], 3, [3])})
    fake_zookeeper.create("/config/topics/t", b'{"version":1,"config":{"retention.ms":"5"}}', makepath=True)
    seen = []

    def act():
        seen.append(json.loads(fake_zookeeper.data("/config/topics/t"))["config"])
        set_state(fake_zookeeper, 0, 2, [2], epoch=5)

    controller.append(act)
    assert main(["elect", "unclean", "--topic", "t", "--yes", "-o", "json", "--timeout", "2"]) == 1
    assert seen == [{"retention.ms": "5", "unclean.leader.election.enable": "true"}]
    assert json.loads(fake_zookeeper.data("/config/topics/t"))["config"] == {"retention.ms": "5"}
    entity_paths = [json.loads(fake_zookeeper.data(f"/config/changes/{c}"))["entity_path"]
                    for c in fake_zookeeper.get_children("/config/changes")]
    assert entity_paths == ["topics/t", "topics/t"]
    rows = {r["partition"]: r for r in json.loads(capsys.readouterr().out)}
    assert (rows[0]["status"], rows[0]["old_leader"], rows[0]["new_leader"], rows[0]["leader_epoch"]) == \
        ("elected", -1, 2, 5)
    assert (rows[1]["status"], rows[1]["reason"]) == ("failed", "no live replica (replicas 1,4 are all down)")
    assert rows[2]["status"] == "not needed"
