"""`kafkactl topics alter T --replication-factor N` against the in-memory
ZooKeeper: usage errors with nothing written, the plan (dry run, --out),
and what the run writes, as `reassign execute` does."""

import json

import pytest

from kafkactl.cli.main import main
from support.fake_zookeeper import record_commits


def cluster(zookeeper, brokers=(1, 2, 3), racks=None, topics=None):
    for broker_id in brokers:
        zookeeper.create(f"/brokers/ids/{broker_id}", json.dumps({
            "version": 5, "host": "h", "port": 9000 + broker_id, "jmx_port": -1, "timestamp": "1",
            "endpoints": [f"PLAINTEXT://h:{9000 + broker_id}"], "rack": (racks or {}).get(broker_id),
            "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"}, "features": {}}).encode(), makepath=True)
    for topic, assignment in (topics or {"t": {0: [1], 1: [2], 2: [3]}}).items():
        zookeeper.create(f"/brokers/topics/{topic}", json.dumps(
            {"version": 3, "partitions": {str(p): r for p, r in assignment.items()}, "adding_replicas": {},
             "removing_replicas": {}}).encode(), makepath=True)
        for partition, replicas in assignment.items():
            zookeeper.create(f"/brokers/topics/{topic}/partitions/{partition}/state", json.dumps(
                {"controller_epoch": 1, "leader": replicas[0], "version": 1, "leader_epoch": 0,
                 "isr": replicas}).encode(), makepath=True)
    zookeeper.ensure_path("/config/changes")


def one_line(err):
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kafkactl: error: "), err
    return lines[0]


def plan_of(document):
    return {(p["topic"], p["partition"]): p["replicas"] for p in document["partitions"]}


@pytest.mark.parametrize("args, message", [
    (["-p", "4", "-r", "2"], "give --partitions or --replication-factor, not both: one change at a time"),
    ([], "give --partitions (to add partitions) or --replication-factor"),
    (["-r", "2", "--replica-assignment", "1:2"], "--replica-assignment goes with --partitions"),
    (["-p", "4", "--throttle", "100"], "--throttle goes with --replication-factor"),
    (["-p", "4", "--yes"], "--yes goes with --replication-factor"),
    (["-r", "2", "--dry-run", "--out", "x.json"], "give --dry-run or --out, not both"),
    (["-r", "2", "--out", "x.json", "--wait"], "--wait: with --out nothing is started"),
    (["-r", "0"], "Invalid value for '--replication-factor' / '-r'"),
    (["-r", "2", "--throttle", "0"], "Invalid value for '--throttle'"),
    (["-r", "4", "--yes"], "--replication-factor 4: replication factor: 4 larger than available brokers: 3"),
    (["-r", "2", "--yes", "--rollback-file", "rb.json"], None),   # nope: the topic does not exist
])
def test_usage_errors_exit_2_in_one_line_and_write_nothing(fake_zookeeper, tmp_path, capsys, monkeypatch, args,
                                                           message):
    monkeypatch.chdir(tmp_path)
    cluster(fake_zookeeper)
    before = fake_zookeeper.snapshot()
    topic = "nope" if message is None else "t"
    assert main(["topics", "alter", topic, *args]) == 2
    assert (message or "topic 'nope' does not exist") in one_line(capsys.readouterr().err)
    assert fake_zookeeper.snapshot() == before
    assert not list(tmp_path.rglob("*.json"))      # no rollback or plan file either


def test_an_existing_out_file_is_refused(fake_zookeeper, tmp_path, capsys):
    cluster(fake_zookeeper)
    (tmp_path / "plan.json").write_text("mine")
    assert main(["topics", "alter", "t", "-r", "2", "--out", str(tmp_path / "plan.json")]) == 2
    assert "exists; give a new file" in one_line(capsys.readouterr().err)
    assert (tmp_path / "plan.json").read_text() == "mine"


def test_without_a_terminal_it_needs_yes_and_writes_nothing(fake_zookeeper, tmp_path, capsys):
    cluster(fake_zookeeper)
    before = fake_zookeeper.snapshot()
    assert main(["topics", "alter", "t", "-r", "2", "--rollback-file", str(tmp_path / "rb.json")]) == 2
    out, err = capsys.readouterr()
    assert "rerun with --yes" in one_line(err)
    assert "replication factor 1 -> 2" in out          # the plan was shown before asking
    assert fake_zookeeper.snapshot() == before and not (tmp_path / "rb.json").exists()


def test_the_same_factor_is_nothing_to_do(fake_zookeeper, capsys):
    cluster(fake_zookeeper, topics={"t": {0: [1, 2], 1: [2, 3]}})
    before = fake_zookeeper.snapshot()
    assert main(["topics", "alter", "t", "-r", "2", "--yes"]) == 0
    assert "topic t has replication factor 2 already; nothing to do" in capsys.readouterr().out
    assert fake_zookeeper.snapshot() == before


def test_dry_run_prints_the_plan_and_writes_nothing(fake_zookeeper, tmp_path, capsys):
    cluster(fake_zookeeper)
    before = fake_zookeeper.snapshot()
    assert main(["topics", "alter", "t", "-r", "2", "--dry-run", "--throttle", "1000", "-o", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert plan_of(result["current"]) == {("t", 0): [1], ("t", 1): [2], ("t", 2): [3]}
    assert plan_of(result["proposed"]) == {("t", 0): [1, 2], ("t", 1): [2, 3], ("t", 2): [3, 1]}
    assert result["dry_run"] is True and result["replication_factors_now"] == [1]
    assert sorted(result["throttled_entities"]) == ["brokers/1", "brokers/2", "brokers/3", "topics/t"]
    assert main(["topics", "alter", "t", "-r", "2", "--dry-run"]) == 0
    text = capsys.readouterr().out
    assert "topic t: replication factor 1 -> 2, 3 partitions change" in text and "dry run: nothing was written" in text
    assert fake_zookeeper.snapshot() == before
    assert not (tmp_path / "home" / "state").exists()


def test_out_writes_a_plan_that_reassign_execute_takes(fake_zookeeper, tmp_path, capsys):
    cluster(fake_zookeeper, brokers=(1, 2, 3, 4), racks={1: "a", 2: "a", 3: "b", 4: "b"},
            topics={"t": {0: [1, 2, 3]}, "u": {0: [3], 1: [4]}})
    before = fake_zookeeper.snapshot()
    out = tmp_path / "plan.json"
    assert main(["topics", "alter", "t", "-r", "2", "--out", str(out)]) == 0
    assert "kafkactl reassign execute --plan" in capsys.readouterr().out
    assert plan_of(json.loads(out.read_text())) == {("t", 0): [1, 3]}      # 2 doubled rack a
    assert fake_zookeeper.snapshot() == before
    assert main(["reassign", "execute", "--plan", str(out), "--rollback-file", str(tmp_path / "rb.json")]) == 0
    assert plan_of(json.loads(fake_zookeeper.data("/admin/reassign_partitions"))) == {("t", 0): [1, 3]}


def test_yes_saves_the_rollback_then_writes_throttles_and_the_reassignment_in_one_checked_multi(
        fake_zookeeper, tmp_path, capsys, monkeypatch):
    cluster(fake_zookeeper)
    commits = record_commits(fake_zookeeper, monkeypatch, saved_first=tmp_path / "rb.json")
    assert main(["topics", "alter", "t", "--replication-factor", "3", "--yes", "--throttle", "5000",
                 "--rollback-file", str(tmp_path / "rb.json"), "-o", "json"]) == 0
    out, err = capsys.readouterr()
    result = json.loads(out)
    [operations] = commits
    assert operations[0] == ("check", "/brokers/topics/t", 0)     # the topic is as it was when planned
    assert operations[-1][1] == "/admin/reassign_partitions"
    znode = plan_of(json.loads(fake_zookeeper.data("/admin/reassign_partitions")))
    assert znode == {("t", 0): [1, 2, 3], ("t", 1): [2, 1, 3], ("t", 2): [3, 1, 2]}
    assert all(znode[("t", p)][0] == p + 1 for p in range(3))      # the leaders stay first
    assert json.loads(fake_zookeeper.data("/config/topics/t"))["config"] == {
        "leader.replication.throttled.replicas": "0:1,1:2,2:3",
        "follower.replication.throttled.replicas": "0:2,0:3,1:1,1:3,2:1,2:2"}
    assert json.loads(fake_zookeeper.data("/config/brokers/2"))["config"] == {
        "leader.replication.throttled.rate": "5000", "follower.replication.throttled.rate": "5000"}
    assert plan_of(json.loads((tmp_path / "rb.json").read_text())) == {("t", 0): [1], ("t", 1): [2], ("t", 2): [3]}
    assert f"current assignment saved to {tmp_path / 'rb.json'}" in err
    assert plan_of(json.loads(open(result["plan_file"]).read())) == znode
    assert "kafkactl/reassignments/plan-" in result["plan_file"]


def test_refused_while_another_reassignment_runs(fake_zookeeper, tmp_path, capsys):
    cluster(fake_zookeeper)
    fake_zookeeper.create("/admin/reassign_partitions",
                          b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[2]}]}', makepath=True)
    before = fake_zookeeper.snapshot()
    assert main(["topics", "alter", "t", "-r", "2", "--yes", "--rollback-file", str(tmp_path / "rb.json")]) == 1
    assert "a reassignment is already running" in one_line(capsys.readouterr().err)
    assert fake_zookeeper.snapshot() == before and not (tmp_path / "rb.json").exists()


def test_a_topic_changed_while_confirming_is_not_reassigned(fake_zookeeper, tmp_path, capsys, monkeypatch):
    cluster(fake_zookeeper)
    from kafkactl.cli import replication_factor

    def someone_adds_a_partition(prompt, yes):
        fake_zookeeper.set("/brokers/topics/t", json.dumps(
            {"version": 3, "partitions": {"0": [1], "1": [2], "2": [3], "3": [1]}}).encode())

    monkeypatch.setattr(replication_factor, "confirm_or_refuse", someone_adds_a_partition)
    assert main(["topics", "alter", "t", "-r", "2", "--throttle", "10",
                 "--rollback-file", str(tmp_path / "rb.json")]) == 1
    assert "ZooKeeper changed while kafkactl was writing" in one_line(capsys.readouterr().err)
    assert not fake_zookeeper.exists("/admin/reassign_partitions")
    assert not fake_zookeeper.exists("/config/topics/t")


def test_wait_follows_to_the_end_and_removes_the_throttles(fake_zookeeper, tmp_path, capsys, monkeypatch):
    cluster(fake_zookeeper, topics={"t": {0: [1, 2, 3], 1: [2, 3, 1]}})
    from kafkactl.cluster.admin import reassignment

    looks = []
    original = reassignment.wait_until_complete

    def controller_finishes(client, targets, *args, **kwargs):
        looks.append(dict(targets))
        fake_zookeeper.set("/brokers/topics/t", json.dumps(
            {"version": 3, "partitions": {str(p): r for (_, p), r in targets.items()}}).encode())
        fake_zookeeper.delete("/admin/reassign_partitions")
        return original(client, targets, *args, **kwargs)

    monkeypatch.setattr(reassignment, "wait_until_complete", controller_finishes)
    assert main(["topics", "alter", "t", "-r", "1", "--yes", "--wait", "--throttle", "100", "-o", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert looks == [{("t", 0): [1], ("t", 1): [2]}]           # down to the preferred leaders
    assert [p["status"] for p in result["partitions"]] == ["complete", "complete"]
    assert sorted(result["throttles_removed"]) == ["brokers/1", "brokers/2", "brokers/3", "topics/t"]
    assert json.loads(fake_zookeeper.data("/config/topics/t"))["config"] == {}
    assert json.loads(fake_zookeeper.data("/config/brokers/1"))["config"] == {}


# --- through the Admin API (-b): cli/replication_factor_steps.py over an AdminApiBackend

REPLICAS = {("t", 0): [1], ("t", 1): [2], ("t", 2): [3], ("u", 0): [1, 2]}


@pytest.fixture
def admin(monkeypatch):
    """The command's back end is a FakeAdminBackend with REPLICAS (brokers 1-3 live)."""
    from contextlib import contextmanager

    from kafkactl.cli import replication_factor
    from support.fake_admin_backend import FakeAdminBackend

    backend = FakeAdminBackend(dict(REPLICAS), {}, live=(1, 2, 3))

    @contextmanager
    def given(ctx, *args, **kwargs):
        yield backend

    monkeypatch.setattr(replication_factor, "cluster_backend", given)
    return backend


def alter_b(*args):
    return main(["topics", "alter", *args, "-b", "127.0.0.1:1"])


def zookeeper_dry_run(fake_zookeeper, capsys, *args):
    """What -z proposes for the same cluster as REPLICAS (leaders the first replicas)."""
    cluster(fake_zookeeper, topics={"t": {0: [1], 1: [2], 2: [3]}, "u": {0: [1, 2]}})
    assert main(["topics", "alter", "t", *args, "--dry-run", "-o", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_through_the_admin_api_the_throttles_go_before_the_move_with_the_plan_of_zookeeper(
        admin, fake_zookeeper, tmp_path, capsys):
    from kafkactl.cluster.admin import configs

    planned = plan_of(zookeeper_dry_run(fake_zookeeper, capsys, "-r", "3")["proposed"])
    assert alter_b("t", "-r", "3", "--yes", "--throttle", "5000", "--rollback-file", str(tmp_path / "rb.json"),
                   "-o", "json") == 0
    result = json.loads(capsys.readouterr().out)
    assert admin.asked == planned and plan_of(json.loads(open(result["plan_file"]).read())) == planned
    assert all(planned[("t", p)][0] == p + 1 for p in range(3))      # the leaders stay first
    assert [call[0] for call in admin.calls] == ["IncrementalAlterConfigs"] * 4 + ["AlterPartitionReassignments"]
    assert result["throttled_entities"] == ["topics/t", "brokers/1", "brokers/2", "brokers/3"]
    assert admin.stored[configs.topic_entity("t")]["leader.replication.throttled.replicas"] == "0:1,1:2,2:3"
    assert plan_of(json.loads((tmp_path / "rb.json").read_text())) == {("t", 0): [1], ("t", 1): [2], ("t", 2): [3]}


def test_through_the_admin_api_a_topic_changed_while_confirming_is_not_reassigned(admin, tmp_path, capsys,
                                                                                  monkeypatch):
    from kafkactl.cli import replication_factor

    def someone_moves_a_partition(prompt, yes):
        admin.replicas[("t", 1)] = [3]

    monkeypatch.setattr(replication_factor, "confirm_or_refuse", someone_moves_a_partition)
    assert alter_b("t", "-r", "2", "--throttle", "10", "--rollback-file", str(tmp_path / "rb.json")) == 1
    assert one_line(capsys.readouterr().err) == (
        "kafkactl: error: topic 't' partition 1 has replicas [3] now, [2] when the plan was made: the plan was "
        "made from the topic as it was; nothing was changed, run the command again")
    assert admin.calls == [] and not (tmp_path / "rb.json").exists()


@pytest.mark.parametrize("ongoing, code, message", [
    ({("u", 0): "running"}, 1, "a reassignment is already running (1 partition listed by "
                               "ListPartitionReassignments); wait for it"),
    ({}, 2, "topic 'nope' does not exist (see `kafkactl topics list`)"),
])
def test_through_the_admin_api_the_same_refusals(admin, tmp_path, capsys, ongoing, code, message):
    from kafkactl.cluster.admin import admin_protocol as ap

    admin.ongoing = {tp: ap.Reassignment((1, 2, 3), adding=(3,), removing=()) for tp in ongoing}
    assert alter_b("nope" if code == 2 else "t", "-r", "2", "--yes",
                   "--rollback-file", str(tmp_path / "rb.json")) == code
    assert message in one_line(capsys.readouterr().err)
    assert admin.calls == [] and not (tmp_path / "rb.json").exists()


def test_through_the_admin_api_dry_run_says_what_zookeeper_says_and_writes_nothing(admin, fake_zookeeper, capsys):
    expected = zookeeper_dry_run(fake_zookeeper, capsys, "-r", "2", "--throttle", "1000")
    assert alter_b("t", "-r", "2", "--dry-run", "--throttle", "1000", "-o", "json") == 0
    assert json.loads(capsys.readouterr().out) == expected
    assert expected["throttled_entities"] == ["topics/t", "brokers/1", "brokers/2", "brokers/3"]
    assert admin.calls == []
