"""`kafkactl reassign` against the in-memory ZooKeeper: plans refused with
nothing written, what execute writes (one multi), generate, verify, status, cancel."""

import json
from pathlib import Path

import pytest

from kafkactl.cli.main import main
from support.fake_zookeeper import record_commits


def cluster(zookeeper, brokers=(1, 2, 3, 4), topics=None):
    for broker_id in brokers:
        zookeeper.create(f"/brokers/ids/{broker_id}", json.dumps({
            "version": 5, "host": "h", "port": 9000 + broker_id, "jmx_port": -1, "timestamp": "1",
            "endpoints": [f"PLAINTEXT://h:{9000 + broker_id}"], "rack": "ab"[broker_id % 2],
            "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"}, "features": {}}).encode(), makepath=True)
    for topic, assignment in (topics or {"t": {0: [1, 2], 1: [2, 3]}}).items():
        zookeeper.create(f"/brokers/topics/{topic}", json.dumps(
            {"version": 1, "partitions": {str(p): r for p, r in assignment.items()}}).encode(), makepath=True)
        for partition, replicas in assignment.items():
            zookeeper.create(f"/brokers/topics/{topic}/partitions/{partition}/state", json.dumps(
                {"controller_epoch": 1, "leader": replicas[0], "version": 1, "leader_epoch": 0,
                 "isr": replicas}).encode(), makepath=True)
    zookeeper.ensure_path("/config/changes")


def write_plan(tmp_path, *entries, name="plan.json"):
    path = tmp_path / name
    path.write_text(json.dumps({"version": 1, "partitions": list(entries)}))
    return str(path)


def one_line(err):
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kafkactl: error: "), err
    return lines[0]


@pytest.mark.parametrize("entry, fragment", [
    ({"topic": "nope", "partition": 0, "replicas": [1]}, "partitions[1] (topic 'nope' partition 0): \"topic\""),
    ({"topic": "t", "partition": 9, "replicas": [1]}, "partitions[1] (topic 't' partition 9): \"partition\""),
    ({"topic": "t", "partition": 0, "replicas": [1, 7]}, "\"replicas\": broker 7 is not registered"),
    ({"topic": "t", "partition": 0, "replicas": [1, 1]}, "\"replicas\" lists broker 1 more than once"),
    ({"topic": "t", "partition": 0, "replicas": [1, 2], "log_dirs": ["any"]}, "\"log_dirs\" has 1 entries"),
    ({"topic": "t", "partition": 0}, "missing key \"replicas\""),
])
def test_bad_plans_exit_2_naming_entry_and_key_and_write_nothing(fake_zookeeper, tmp_path, capsys, entry, fragment):
    cluster(fake_zookeeper)
    before = fake_zookeeper.snapshot()
    plan = write_plan(tmp_path, {"topic": "t", "partition": 1, "replicas": [3, 4]}, entry)
    assert main(["reassign", "execute", "--plan", plan, "--throttle", "1000",
                 "--rollback-file", str(tmp_path / "rb.json")]) == 2
    assert fragment in one_line(capsys.readouterr().err)
    assert fake_zookeeper.snapshot() == before
    assert not (tmp_path / "rb.json").exists()


def test_a_missing_or_unparsable_plan_file_is_refused(fake_zookeeper, tmp_path, capsys):
    cluster(fake_zookeeper)
    assert main(["reassign", "execute", "--plan", str(tmp_path / "none.json")]) == 2
    assert "cannot read it" in one_line(capsys.readouterr().err)
    (tmp_path / "bad.json").write_text('{"version": 1, "partitions": [')
    assert main(["reassign", "execute", "--plan", str(tmp_path / "bad.json")]) == 2
    assert "not JSON" in one_line(capsys.readouterr().err)


def test_execute_with_throttle_writes_everything_in_one_multi_after_saving_the_rollback(
        fake_zookeeper, tmp_path, capsys, monkeypatch):
    cluster(fake_zookeeper)
    fake_zookeeper.create("/config/topics/t", b'{"version":1,"config":{"retention.ms":"1000"}}', makepath=True)
    commits = record_commits(fake_zookeeper, monkeypatch, saved_first=tmp_path / "rb.json")
    plan = write_plan(tmp_path, {"topic": "t", "partition": 0, "replicas": [1, 4], "log_dirs": ["any", "any"]},
                      {"topic": "t", "partition": 1, "replicas": [3, 2]})
    assert main(["reassign", "execute", "--plan", plan, "--throttle", "5000",
                 "--rollback-file", str(tmp_path / "rb.json"), "-o", "json"]) == 0
    assert len(commits) == 1
    paths = [op[1] for op in commits[0]]
    assert paths[-1] == "/admin/reassign_partitions"
    assert sorted(p for p in paths if p.startswith("/config/") and "changes" not in p) == [
        "/config/brokers/1", "/config/brokers/2", "/config/brokers/4", "/config/topics/t"]
    changes = [json.loads(fake_zookeeper.data(f"/config/changes/{c}"))
               for c in fake_zookeeper.get_children("/config/changes")]
    assert sorted(c["entity_path"] for c in changes) == ["brokers/1", "brokers/2", "brokers/4", "topics/t"]
    assert all(c["version"] == 2 for c in changes)
    # Only t-0 moves (t-1 is reordered): leaders 1,2 throttled, follower 4.
    topic_config = json.loads(fake_zookeeper.data("/config/topics/t"))["config"]
    assert topic_config == {"retention.ms": "1000", "leader.replication.throttled.replicas": "0:1,0:2",
                            "follower.replication.throttled.replicas": "0:4"}
    assert json.loads(fake_zookeeper.data("/config/brokers/4"))["config"] == {
        "leader.replication.throttled.rate": "5000", "follower.replication.throttled.rate": "5000"}
    znode = json.loads(fake_zookeeper.data("/admin/reassign_partitions"))
    assert znode["version"] == 1 and sorted((p["topic"], p["partition"], p["replicas"]) for p in znode["partitions"]) \
        == [("t", 0, [1, 4]), ("t", 1, [3, 2])]
    rollback = json.loads((tmp_path / "rb.json").read_text())
    assert [(p["partition"], p["replicas"]) for p in rollback["partitions"]] == [(0, [1, 2]), (1, [2, 3])]
    result = json.loads(capsys.readouterr().out)
    assert result["moving"] == 1 and result["rollback_file"] == str(tmp_path / "rb.json")


def test_execute_is_refused_while_a_reassignment_runs(fake_zookeeper, tmp_path, capsys):
    cluster(fake_zookeeper)
    fake_zookeeper.create("/admin/reassign_partitions",
                          b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[2,3]}]}', makepath=True)
    before = fake_zookeeper.snapshot()
    plan = write_plan(tmp_path, {"topic": "t", "partition": 1, "replicas": [3, 4]})
    assert main(["reassign", "execute", "--plan", plan, "--rollback-file", str(tmp_path / "rb.json")]) == 1
    assert "already running" in one_line(capsys.readouterr().err)
    assert fake_zookeeper.snapshot() == before


def test_execute_without_rollback_file_saves_one_in_the_state_dir(fake_zookeeper, tmp_path, capsys):
    cluster(fake_zookeeper)
    plan = write_plan(tmp_path, {"topic": "t", "partition": 0, "replicas": [3, 4]})
    assert main(["reassign", "execute", "--plan", plan, "-o", "json"]) == 0
    saved = json.loads(capsys.readouterr().out)["rollback_file"]
    assert "kafkactl/reassignments/rollback-" in saved
    assert json.loads(open(saved).read())["partitions"][0]["replicas"] == [1, 2]
    assert not fake_zookeeper.exists("/config/brokers/3")  # no --throttle, no throttle


def test_generate_proposes_over_the_given_brokers_and_prints_the_current_assignment(fake_zookeeper, capsys):
    cluster(fake_zookeeper, topics={"t": {p: [1, 2] for p in range(4)}})
    before = fake_zookeeper.snapshot()
    assert main(["reassign", "generate", "--topics", "t", "--brokers", "2,3,4", "-o", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["current"]["partitions"][0] == {"topic": "t", "partition": 0, "replicas": [1, 2],
                                                  "log_dirs": ["any", "any"]}
    proposed = result["proposed"]
    assert proposed["version"] == 1 and len(proposed["partitions"]) == 4
    assert all(set(p["replicas"]) <= {2, 3, 4} and len(set(p["replicas"])) == 2 for p in proposed["partitions"])
    assert fake_zookeeper.snapshot() == before
    assert main(["reassign", "generate", "--topics", "t", "--brokers", "2,9"]) == 2
    assert "--brokers: broker 9 is not registered" in one_line(capsys.readouterr().err)
    assert main(["reassign", "generate", "--topics", "t,x", "--brokers", "2,3"]) == 2
    assert "--topics: topic 'x' does not exist" in one_line(capsys.readouterr().err)
    assert main(["reassign", "generate", "--topics", "t", "--brokers", "2"]) == 2
    assert "--brokers: replication factor: 2 larger than available brokers: 1" in one_line(capsys.readouterr().err)


def test_generate_output_feeds_execute(fake_zookeeper, tmp_path, capsys):
    cluster(fake_zookeeper)
    assert main(["reassign", "generate", "--topics", "t", "--brokers", "3,4", "-o", "json"]) == 0
    (tmp_path / "p.json").write_text(json.dumps(json.loads(capsys.readouterr().out)["proposed"]))
    assert main(["reassign", "execute", "--plan", str(tmp_path / "p.json"), "--rollback-file",
                 str(tmp_path / "rb.json")]) == 0
    assert fake_zookeeper.exists("/admin/reassign_partitions")


def test_generate_replace_broker_and_exclude_brokers_move_only_their_replicas(fake_zookeeper, tmp_path, capsys):
    cluster(fake_zookeeper, brokers=(1, 2, 3, 4, 5), topics={"t": {0: [1, 2], 1: [2, 3], 2: [3, 4]}, "u": {0: [4, 1]}})
    before = fake_zookeeper.snapshot()
    out = tmp_path / "replace.json"
    assert main(["reassign", "generate", "--replace-broker", "2:5", "--out", str(out), "-o", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    moved = {(p["topic"], p["partition"]): p["replicas"] for p in result["proposed"]["partitions"]}
    assert moved == {("t", 0): [1, 5], ("t", 1): [5, 3]}     # every topic; only what was on 2
    assert [(p["partition"], p["replicas"]) for p in result["current"]["partitions"]] == [(0, [1, 2]), (1, [2, 3])]
    assert json.loads(out.read_text()) == result["proposed"]
    assert main(["reassign", "generate", "--exclude-brokers", "3,4", "--topics", "t", "-o", "json"]) == 0
    moved = {(p["topic"], p["partition"]): p["replicas"]
             for p in json.loads(capsys.readouterr().out)["proposed"]["partitions"]}
    assert set(moved) == {("t", 1), ("t", 2)} and moved[("t", 1)][0] == 2
    assert all(not {3, 4} & set(r) and len(set(r)) == 2 for r in moved.values())
    assert fake_zookeeper.snapshot() == before
    for argv, message in [
        (["--replace-broker", "2:5", "--brokers", "1,2"], "give one of --brokers, --replace-broker or --exclude-brokers"),
        (["--brokers", "1,2"], "--topics: give the topics to spread over --brokers"),
        (["--replace-broker", "2:9"], "broker 9 is not registered"),
        (["--replace-broker", "2-5"], "expected OLD:NEW broker ids"),
        (["--replace-broker", "2:5", "--out", str(out)], "exists; give a new file"),
    ]:
        assert main(["reassign", "generate", *argv]) == 2, argv
        assert message in one_line(capsys.readouterr().err)


def test_verify_in_progress_exits_1_and_keeps_throttles(fake_zookeeper, tmp_path, capsys):
    cluster(fake_zookeeper)
    plan = write_plan(tmp_path, {"topic": "t", "partition": 0, "replicas": [1, 4]})
    assert main(["reassign", "execute", "--plan", plan, "--throttle", "100", "--rollback-file",
                 str(tmp_path / "rb.json")]) == 0
    capsys.readouterr()
    # The controller has begun: full replica set in the topic znode, 4 adding.
    fake_zookeeper.set("/brokers/topics/t", json.dumps({"version": 3, "partitions": {"0": [1, 4, 2], "1": [2, 3]},
                                                        "adding_replicas": {"0": [4]},
                                                        "removing_replicas": {"0": [2]}}).encode())
    assert main(["reassign", "verify", "--plan", plan, "-o", "json"]) == 1
    rows = json.loads(capsys.readouterr().out)["partitions"]
    assert rows[0]["status"] == "in progress"
    # Broker 4 cannot be reached here: ISR membership instead, and why.
    assert rows[0]["lag"][0]["broker"] == 4 and rows[0]["lag"][0]["in_isr"] is False
    assert "offsets not available" in rows[0]["lag"][0]["note"]
    assert "leader.replication.throttled.replicas" in fake_zookeeper.data("/config/topics/t")


def test_verify_when_complete_removes_throttles_in_one_multi(fake_zookeeper, tmp_path, capsys):
    cluster(fake_zookeeper)
    plan = write_plan(tmp_path, {"topic": "t", "partition": 0, "replicas": [1, 4]})
    fake_zookeeper.create("/config/brokers/<default>", b'{"version":1,"config":{"leader.replication.throttled.rate":"7"}}',
                          makepath=True)
    assert main(["reassign", "execute", "--plan", plan, "--throttle", "100", "--rollback-file",
                 str(tmp_path / "rb.json")]) == 0
    # The controller finished: target in place, znode gone.
    fake_zookeeper.set("/brokers/topics/t", json.dumps({"version": 3, "partitions": {"0": [1, 4], "1": [2, 3]},
                                                        "adding_replicas": {}, "removing_replicas": {}}).encode())
    fake_zookeeper.delete("/admin/reassign_partitions")
    changes_before = len(fake_zookeeper.get_children("/config/changes"))
    capsys.readouterr()
    assert main(["reassign", "verify", "--plan", plan, "-o", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert [r["status"] for r in result["partitions"]] == ["complete"]
    assert sorted(result["throttles_removed"]) == ["brokers/1", "brokers/2", "brokers/4", "topics/t"]
    assert json.loads(fake_zookeeper.data("/config/topics/t"))["config"] == {}
    assert json.loads(fake_zookeeper.data("/config/brokers/4"))["config"] == {}
    assert "throttled.rate" in fake_zookeeper.data("/config/brokers/<default>")  # the operator's own
    assert len(fake_zookeeper.get_children("/config/changes")) == changes_before + 4


def test_status_shows_the_running_reassignment(fake_zookeeper, capsys):
    cluster(fake_zookeeper)
    assert main(["reassign", "status"]) == 0
    assert "no reassignment is running" in capsys.readouterr().out
    fake_zookeeper.create("/admin/reassign_partitions",
                          b'{"partitions":[{"replicas":[2,4],"partition":0,"topic":"t"}],"version":1}', makepath=True)
    assert main(["reassign", "status", "-o", "json"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert (row["topic"], row["partition"], row["status"], row["target"], row["replicas"]) == \
        ("t", 0, "in progress", [2, 4], [1, 2])


def test_cancel_needs_yes_without_a_terminal_and_writes_nothing(fake_zookeeper, capsys):
    cluster(fake_zookeeper)
    fake_zookeeper.create("/admin/reassign_partitions",
                          b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[3,4]}]}', makepath=True)
    before = fake_zookeeper.snapshot()
    assert main(["reassign", "cancel"]) == 2
    assert "--yes" in one_line(capsys.readouterr().err)
    assert fake_zookeeper.snapshot() == before
    assert main(["reassign", "cancel", "--yes", "--timeout", "0.5"]) == 1
    assert "did not end within the --timeout" in one_line(capsys.readouterr().err)
    assert fake_zookeeper.snapshot() == before


def test_cancel_moves_partitions_back_once_the_running_reassignment_ended(fake_zookeeper, tmp_path, capsys,
                                                                          monkeypatch):
    cluster(fake_zookeeper)
    plan = write_plan(tmp_path, {"topic": "t", "partition": 0, "replicas": [4, 3]})
    assert main(["reassign", "execute", "--plan", plan, "--throttle", "100"]) == 0
    from kafkactl.cluster.admin import reassignment

    def controller_finishes(client, deadline, timeout_s):
        fake_zookeeper.set("/brokers/topics/t", json.dumps({"version": 3, "partitions": {"0": [4, 3], "1": [2, 3]}})
                           .encode())
        fake_zookeeper.delete("/admin/reassign_partitions")
        return True

    monkeypatch.setattr(reassignment, "wait_until_idle", controller_finishes)
    capsys.readouterr()
    assert main(["reassign", "cancel", "--yes", "-o", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["reverted"] == [{"topic": "t", "partition": 0, "replicas": [1, 2]}]
    assert result["throttle_bytes_per_s"] == 100
    # The rollback: the replicas just before the revert (the ended move's target), not where it goes.
    saved = json.loads(Path(result["rollback_file"]).read_text())
    assert [(p["partition"], p["replicas"]) for p in saved["partitions"]] == [(0, [4, 3])]
    znode = json.loads(fake_zookeeper.data("/admin/reassign_partitions"))
    assert znode["partitions"] == [{"topic": "t", "partition": 0, "replicas": [1, 2]}]
    assert json.loads(fake_zookeeper.data("/config/topics/t"))["config"] == {
        "leader.replication.throttled.replicas": "0:4,0:3", "follower.replication.throttled.replicas": "0:1,0:2"}


def test_cancel_never_saves_a_replica_still_being_added_as_its_rollback(fake_zookeeper, tmp_path, capsys,
                                                                        monkeypatch):
    cluster(fake_zookeeper)
    plan = write_plan(tmp_path, {"topic": "t", "partition": 0, "replicas": [4, 3]})
    assert main(["reassign", "execute", "--plan", plan]) == 0
    from kafkactl.cluster.admin import reassignment

    def znode_deleted_behind_the_controllers_back(client, deadline, timeout_s):
        # The move did not end: 4 and 3 are partial copies, still listed as being added.
        fake_zookeeper.set("/brokers/topics/t", json.dumps({
            "version": 3, "partitions": {"0": [4, 3, 1, 2], "1": [2, 3]},
            "adding_replicas": {"0": [4, 3]}, "removing_replicas": {"0": [1, 2]}}).encode())
        fake_zookeeper.delete("/admin/reassign_partitions")
        return True

    monkeypatch.setattr(reassignment, "wait_until_idle", znode_deleted_behind_the_controllers_back)
    capsys.readouterr()
    assert main(["reassign", "cancel", "--yes", "-o", "json"]) == 0
    saved = json.loads(Path(json.loads(capsys.readouterr().out)["rollback_file"]).read_text())
    assert [(p["partition"], p["replicas"]) for p in saved["partitions"]] == [(0, [1, 2])]


def test_cancel_with_nothing_running(fake_zookeeper, capsys):
    cluster(fake_zookeeper)
    assert main(["reassign", "cancel", "--yes"]) == 1
    assert "no reassignment is running" in one_line(capsys.readouterr().err)
