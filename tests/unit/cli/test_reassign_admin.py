"""`kafkactl reassign` through the Admin API (cli/reassign_admin.py): the
refusals that need no cluster, how ListPartitionReassignments' answer
becomes the same partition views and targets as ZooKeeper's, and the
throttles: the same configs as -z leaves, set before the move, removed by
verify and cancel."""

import pytest

from kafkactl.cli import reassign_admin
from kafkactl.cli.errors import CliError
from kafkactl.cli.main import main
from kafkactl.cluster.admin import admin_protocol as ap
from kafkactl.cluster.admin import configs
from kafkactl.cluster.admin import reassignment as ra
from kafkactl.cluster.admin.admin_client import AdminApiError
from support.fake_admin_backend import FakeAdminBackend as Backend
from support.fake_zookeeper import FakeZooKeeper


def one_line(err: str) -> str:
    [line] = err.strip().splitlines()
    return line


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


# --- throttles

T, U = configs.topic_entity("t"), configs.topic_entity("u")


def broker(broker_id):
    return configs.broker_entity(broker_id)


# t-0 moves 1,2 -> 1,4; t-1 is reordered (no data moves); u-0 only loses replica 3.
CURRENT = {("t", 0): [1, 2], ("t", 1): [2, 3], ("u", 0): [3, 1]}
TARGETS = {("t", 0): [1, 4], ("t", 1): [3, 2], ("u", 0): [1]}
# What the entities hold before: t a stale follower list and its own key, u a stale
# follower list (the move adds no replica of u), broker 1 the rate already, broker 4 another key.
STORED = {T: {"retention.ms": "1000", configs.FOLLOWER_THROTTLED_REPLICAS: "5:9"},
          U: {configs.FOLLOWER_THROTTLED_REPLICAS: "0:2"},
          broker(1): {configs.LEADER_THROTTLED_RATE: "5000", configs.FOLLOWER_THROTTLED_RATE: "5000"},
          broker(4): {"log.cleaner.threads": "2"}}


def zookeeper_with(stored: dict) -> FakeZooKeeper:
    import json

    return FakeZooKeeper({e.path: json.dumps({"version": 1, "config": c}) for e, c in stored.items()})


def zookeeper_result(stored: dict, writes) -> tuple[dict, list[str]]:
    """Each entity's config after -z's writes, and the entities they name."""
    after = dict(stored)
    after.update({entity: config for entity, (_, config) in writes.changes.items()})
    return after, [e.entity_path for e in writes.changes]


def test_throttles_through_the_admin_api_leave_the_configs_zookeeper_leaves():
    expected, named = zookeeper_result(STORED, ra.throttle_writes(
        zookeeper_with(STORED), ra.compute_throttles(CURRENT, TARGETS), 5000, 1.0))
    backend = Backend({}, {}, stored=STORED)
    plan = reassign_admin.plan_throttles(backend, CURRENT, TARGETS, 5000, {1, 2, 3, 4})
    assert backend.calls == []                                # reads only
    reassign_admin.start_throttled(backend, TARGETS, plan, None)
    assert {e: c for e, c in backend.stored.items() if c} == {e: c for e, c in expected.items() if c}
    # Broker 1 has the rate already: not named, as -z does not name it.
    assert list(plan.entities) == named == ["topics/t", "topics/u", "brokers/2", "brokers/3", "brokers/4"]
    assert backend.stored[T] == {"retention.ms": "1000", configs.LEADER_THROTTLED_REPLICAS: "0:1,0:2",
                                 configs.FOLLOWER_THROTTLED_REPLICAS: "0:4"}
    # Every key SET, the one the move does not need DELETEd, whatever DescribeConfigs
    # said (it may lag); the throttles first, then the move, as Kafka's tool does.
    assert backend.calls == [
        ("IncrementalAlterConfigs", "topics/t", {configs.LEADER_THROTTLED_REPLICAS: "0:1,0:2",
                                                 configs.FOLLOWER_THROTTLED_REPLICAS: "0:4"}, []),
        ("IncrementalAlterConfigs", "topics/u", {configs.LEADER_THROTTLED_REPLICAS: "0:3,0:1"},
         [configs.FOLLOWER_THROTTLED_REPLICAS]),
        *[("IncrementalAlterConfigs", f"brokers/{b}", {configs.LEADER_THROTTLED_RATE: "5000",
                                                       configs.FOLLOWER_THROTTLED_RATE: "5000"}, [])
          for b in (1, 2, 3, 4)],
        ("AlterPartitionReassignments", sorted(TARGETS))]


def test_without_a_rate_nothing_is_read_or_written():
    backend = Backend({}, {})
    plan = reassign_admin.plan_throttles(backend, CURRENT, TARGETS, None, {1, 2, 3, 4})
    reassign_admin.start_throttled(backend, TARGETS, plan, None)
    assert plan.entities == () and backend.calls == [("AlterPartitionReassignments", sorted(TARGETS))]


def test_a_broker_that_is_not_live_gets_no_rate_and_is_named(capsys):
    backend = Backend({}, {}, live=(1, 3, 4))
    plan = reassign_admin.plan_throttles(backend, CURRENT, TARGETS, 5000, {1, 3, 4})
    assert plan.not_live == (2,) and "brokers/2" not in plan.entities
    reassign_admin.warn_not_live(plan)
    assert capsys.readouterr().err.startswith("kafkactl: warning: no throttle rate on broker 2: not live")


def test_a_move_refused_after_the_throttles_names_what_stays_throttled(tmp_path):
    refused = {tp: ap.Outcome("invalid_replica_assignment") for tp in TARGETS}
    backend = Backend({}, {}, refused=refused)
    plan = reassign_admin.plan_throttles(backend, CURRENT, TARGETS, 5000, {1, 2, 3, 4})
    with pytest.raises(CliError) as error:
        reassign_admin.start_throttled(backend, TARGETS, plan, tmp_path / "rb.json")
    assert str(error.value).endswith(
        "; throttles stay on topics/t, topics/u, brokers/1, brokers/2, brokers/3, brokers/4: "
        f"`kafkactl reassign verify --plan {tmp_path / 'rb.json'}` removes them (no partition moved), "
        "as does `kafkactl configs alter --delete`")

    backend = Backend({}, {}, refused={("u", 0): ap.Outcome("invalid_replica_assignment")})
    with pytest.raises(CliError) as error:
        reassign_admin.start_throttled(backend, TARGETS, plan, tmp_path / "rb.json")
    assert "(1 partition refused, the others started; " in str(error.value)
    assert str(error.value).endswith("`kafkactl configs alter --delete` removes them once the partitions that "
                                     "started are complete")


def test_a_throttle_write_that_fails_starts_no_move_and_names_those_written(tmp_path):
    backend = Backend({}, {}, failing="brokers/3")
    plan = reassign_admin.plan_throttles(backend, CURRENT, TARGETS, 5000, {1, 2, 3, 4})
    with pytest.raises(AdminApiError) as error:
        reassign_admin.start_throttled(backend, TARGETS, plan, tmp_path / "rb.json")
    assert str(error.value).startswith("broker 3 did not answer: timed out; the reassignment was not started; "
                                       "throttles stay on topics/t, topics/u, brokers/1, brokers/2: ")
    assert backend.asked is None


def test_verify_removes_what_zookeepers_verify_removes_and_names_it_the_same():
    stored = {T: {"retention.ms": "1000", configs.LEADER_THROTTLED_REPLICAS: "0:1",
                  configs.FOLLOWER_THROTTLED_REPLICAS: "0:4"},
              U: {"retention.ms": "5"},
              broker(2): {configs.LEADER_THROTTLED_RATE: "5000", configs.FOLLOWER_THROTTLED_RATE: "5000",
                          configs.LOG_DIRS_THROTTLED_RATE: "100", "log.cleaner.threads": "2"},
              broker(10): {configs.FOLLOWER_THROTTLED_RATE: "5000"},
              broker(None): {configs.LEADER_THROTTLED_RATE: "1"}}     # the operator's default stays
    expected, named = zookeeper_result(stored, ra.throttle_removal(zookeeper_with(stored), ["t", "u"], 1.0))
    backend = Backend({}, {}, stored=stored, live=(1, 2, 3, 10))
    assert reassign_admin.remove_throttles(backend, {"t", "u"}) == named == ["topics/t", "brokers/10", "brokers/2"]
    assert {e: c for e, c in backend.stored.items() if c} == {e: c for e, c in expected.items() if c}
    # Kafka's DELETEs on every topic of the plan and every live broker, only DELETEs.
    assert [c[1:] for c in backend.calls] == [
        *[(f"topics/{t}", {}, list(configs.THROTTLED_REPLICAS_KEYS)) for t in ("t", "u")],
        *[(f"brokers/{b}", {}, list(configs.THROTTLE_RATE_KEYS)) for b in ("1", "10", "2", "3")]]
    assert reassign_admin.remove_throttles(backend, {"t", "u"}) == []


def test_cancel_removes_the_throttles_once_the_controller_took_it(monkeypatch):
    stored = {T: {configs.LEADER_THROTTLED_REPLICAS: "0:1,0:2", configs.FOLLOWER_THROTTLED_REPLICAS: "0:3"},
              broker(3): {configs.LEADER_THROTTLED_RATE: "1", configs.FOLLOWER_THROTTLED_RATE: "1"}}
    backend = Backend({("t", 0): [3, 1, 2]}, {("t", 0): ap.Reassignment((3, 1, 2), adding=(3,), removing=(2,))},
                      stored=stored)
    shown = []
    monkeypatch.setattr(reassign_admin, "emit", lambda ctx, data, table: shown.append(data))
    reassign_admin.cancel(None, backend, wait=False, yes=True)
    assert shown[0]["throttles_removed"] == ["topics/t", "brokers/3"]
    assert backend.calls[0] == ("AlterPartitionReassignments", [("t", 0)])      # the cancel first
    assert {e: c for e, c in backend.stored.items() if c} == {}


def test_cancel_refused_by_the_controller_leaves_the_throttles():
    stored = {broker(3): {configs.LEADER_THROTTLED_RATE: "1"}}
    backend = Backend({("t", 0): [3, 1, 2]}, {("t", 0): ap.Reassignment((3, 1, 2), adding=(3,), removing=(2,))},
                      refused={("t", 0): ap.Outcome("no_reassignment_in_progress")}, stored=stored)
    with pytest.raises(CliError):
        reassign_admin.cancel(None, backend, wait=False, yes=True)
    assert backend.stored == stored


def through_main(monkeypatch, backend) -> None:
    """`main([... -b ...])` talks to `backend` instead of a cluster."""
    from contextlib import contextmanager

    from kafkactl.cli import common

    @contextmanager
    def fake(ctx, extra_s=0.0):
        yield backend

    monkeypatch.setattr(common, "admin_backend", fake)


def test_execute_then_verify_through_the_admin_api_name_the_throttles_as_zookeeper_does(
        monkeypatch, tmp_path, capsys):
    import json

    backend = Backend(dict(CURRENT), {}, stored={broker(4): {"log.cleaner.threads": "2"}})
    through_main(monkeypatch, backend)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": t, "partition": p, "replicas": r} for (t, p), r in TARGETS.items()]}))
    assert main(["reassign", "execute", "--plan", str(plan), "--throttle", "5000", "-b", "h:9001",
                 "--rollback-file", str(tmp_path / "rb.json"), "-o", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["throttle_bytes_per_s"] == 5000
    assert result["throttled_entities"] == ["topics/t", "topics/u", "brokers/1", "brokers/2", "brokers/3",
                                            "brokers/4"]
    assert backend.stored[broker(4)] == {"log.cleaner.threads": "2", configs.LEADER_THROTTLED_RATE: "5000",
                                         configs.FOLLOWER_THROTTLED_RATE: "5000"}

    # Not complete yet: verify leaves the throttles.
    assert main(["reassign", "verify", "--plan", str(plan), "-b", "h:9001", "-o", "json"]) == 1
    assert json.loads(capsys.readouterr().out)["throttles_removed"] == []
    backend.replicas = dict(TARGETS)                          # the controller finished
    assert main(["reassign", "verify", "--plan", str(plan), "-b", "h:9001", "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["throttles_removed"] == [
        "topics/t", "topics/u", "brokers/1", "brokers/2", "brokers/3", "brokers/4"]
    assert backend.stored[broker(4)] == {"log.cleaner.threads": "2"}
    assert all(not c for e, c in backend.stored.items() if e != broker(4))


def test_wait_looks_again_at_a_partition_whose_metadata_lags_the_controller(monkeypatch):
    # The controller ended the move (nothing listed) before the broker answering
    # Metadata had its UpdateMetadata: the first looks show the old replicas.
    from types import SimpleNamespace

    backend = Backend({("t", 0): [1, 2, 3]}, {})
    looks = []

    def metadata_catches_up(names):
        looks.append(names)
        if len(looks) == 3:
            backend.replicas[("t", 0)] = [1, 2]
        return Backend.describe_topics(backend, names)

    monkeypatch.setattr(backend, "describe_topics", metadata_catches_up)
    monkeypatch.setattr(reassign_admin, "POLL_INTERVAL_S", 0)
    ctx = SimpleNamespace(find_root=lambda: SimpleNamespace(obj=None))
    [state] = reassign_admin.wait_with_progress(ctx, backend, {("t", 0): [1, 2]})
    assert state.status == ra.COMPLETE and len(looks) == 3
