"""`kafkactl topics` against the in-memory ZooKeeper: arguments, output, what is written."""

import json

from kafkactl.cli.main import main


def brokers(zookeeper, ids=(1, 2, 3)):
    for broker_id in ids:
        zookeeper.create(f"/brokers/ids/{broker_id}", json.dumps({
            "version": 5, "host": "h", "port": 9000 + broker_id, "jmx_port": -1, "timestamp": "1",
            "endpoints": [f"PLAINTEXT://h:{9000 + broker_id}"], "listener_security_protocol_map":
            {"PLAINTEXT": "PLAINTEXT"}, "rack": None, "features": {}}).encode(), makepath=True)


def test_create_then_describe_as_json(fake_zookeeper, capsys):
    brokers(fake_zookeeper)
    assert main(["topics", "create", "t", "--partitions", "4", "--replication-factor", "3"]) == 0
    assignment = json.loads(fake_zookeeper.data("/brokers/topics/t"))["partitions"]
    assert sorted(assignment) == ["0", "1", "2", "3"]
    assert all(sorted(replicas) == [1, 2, 3] for replicas in assignment.values())
    capsys.readouterr()
    assert main(["topics", "describe", "t", "-o", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["topic"], r["partition"], r["leader"]) for r in rows] == [("t", p, -1) for p in range(4)]


def test_a_replication_factor_above_the_brokers_is_refused_and_nothing_is_written(fake_zookeeper, capsys):
    brokers(fake_zookeeper, ids=(1, 2))
    before = fake_zookeeper.snapshot()
    assert main(["topics", "create", "t", "--partitions", "1", "--replication-factor", "3"]) == 2
    assert "--replication-factor" in capsys.readouterr().err
    assert fake_zookeeper.snapshot() == before


# --- helpers for a cluster written the way Kafka writes it --------------------------

def topic(zookeeper, name, partitions, states=None, config=None):
    """/brokers/topics/<name> and its partition states ({p: (leader, isr)}; absent: leader -1)."""
    zookeeper.create(f"/brokers/topics/{name}", json.dumps(
        {"version": 3, "partitions": {str(p): r for p, r in partitions.items()},
         "adding_replicas": {}, "removing_replicas": {}, "topic_id": "cMr3GpVESX2L3byPGf93lQ"}).encode(),
        makepath=True)
    for p, (leader, isr) in (states or {}).items():
        zookeeper.create(f"/brokers/topics/{name}/partitions/{p}/state", json.dumps(
            {"controller_epoch": 1, "leader": leader, "version": 1, "leader_epoch": 3, "isr": isr}).encode(),
            makepath=True)
    if config is not None:
        zookeeper.create(f"/config/topics/{name}", json.dumps({"version": 1, "config": config}).encode(),
                         makepath=True)


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def refused(fake_zookeeper, capsys, argv, *fragments):
    """The command exits 2 with one line naming the problem, and writes nothing."""
    before = fake_zookeeper.snapshot()
    code, _, err = run(capsys, *argv)
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kafkactl: error: "), err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert fake_zookeeper.snapshot() == before


# --- create ---------------------------------------------------------------------------

def test_create_with_an_explicit_assignment_writes_it_as_given(fake_zookeeper, capsys):
    brokers(fake_zookeeper)
    code, out, _ = run(capsys, "topics", "create", "t", "--replica-assignment", "1:2:3,2:3:1",
                       "--config", "retention.ms=1000", "-o", "json")
    assert code == 0
    assert json.loads(fake_zookeeper.data("/brokers/topics/t"))["partitions"] == {"0": [1, 2, 3], "1": [2, 3, 1]}
    assert json.loads(fake_zookeeper.data("/config/topics/t"))["config"] == {"retention.ms": "1000"}
    assert json.loads(out)["partitions"] == {"0": [1, 2, 3], "1": [2, 3, 1]}


def test_create_refuses_bad_explicit_assignments(fake_zookeeper, capsys):
    brokers(fake_zookeeper)
    create = ("topics", "create", "t", "--replica-assignment")
    refused(fake_zookeeper, capsys, [*create, "1:2,2:9"], "--replica-assignment", "broker 9 is not registered")
    refused(fake_zookeeper, capsys, [*create, "1:2,2:3:1"], "partition 1", "same replication factor")
    refused(fake_zookeeper, capsys, [*create, "1:1"], "partition 0 lists a broker twice")
    refused(fake_zookeeper, capsys, [*create, "1:x"], "partition 0", "'1:x'")
    refused(fake_zookeeper, capsys, [*create, "1:2", "--partitions", "2"], "cannot be used with --partitions")


def test_create_without_a_count_and_no_broker_to_ask_says_what_to_give(fake_zookeeper, capsys):
    brokers(fake_zookeeper)   # registered, but nothing listens at their addresses
    before = fake_zookeeper.snapshot()
    code, _, err = run(capsys, "topics", "create", "t", "--partitions", "2")
    assert code == 1 and "give --partitions and --replication-factor" in err, err
    assert fake_zookeeper.snapshot() == before


def test_create_refuses_bad_names_and_configs(fake_zookeeper, capsys):
    brokers(fake_zookeeper)
    topic(fake_zookeeper, "orders.v1", {0: [1]})
    create = ("--partitions", "1", "--replication-factor", "1")
    refused(fake_zookeeper, capsys, ["topics", "create", "x" * 250, *create], "249")
    refused(fake_zookeeper, capsys, ["topics", "create", "a/b", *create], "illegal characters")
    refused(fake_zookeeper, capsys, ["topics", "create", "..", *create], "'..'")
    refused(fake_zookeeper, capsys, ["topics", "create", "orders_v1", *create], "collides with existing topic 'orders.v1'")
    refused(fake_zookeeper, capsys, ["topics", "create", "t", *create, "--config", "retention.ms=soon"], "retention.ms")
    refused(fake_zookeeper, capsys, ["topics", "create", "t", *create, "--config", "no.such.key=1"], "no.such.key")


def test_a_name_with_a_dot_is_created_with_a_warning(fake_zookeeper, capsys):
    brokers(fake_zookeeper)
    code, out, err = run(capsys, "topics", "create", "orders.v2", "-p", "1", "-r", "1")
    assert code == 0 and "created topic orders.v2" in out
    assert "warning" in err and "'.' or '_'" in err


def test_an_existing_topic_is_an_error_unless_if_not_exists(fake_zookeeper, capsys):
    brokers(fake_zookeeper)
    topic(fake_zookeeper, "t", {0: [1]})
    before = fake_zookeeper.snapshot()
    code, _, err = run(capsys, "topics", "create", "t", "-p", "3", "-r", "1")
    assert code == 1 and "already exists" in err
    code, out, _ = run(capsys, "topics", "create", "t", "-p", "3", "-r", "1", "--if-not-exists")
    assert code == 0 and "already exists" in out
    assert fake_zookeeper.snapshot() == before


# --- delete ---------------------------------------------------------------------------

def test_delete_marks_every_topic_in_one_multi(fake_zookeeper, capsys, monkeypatch):
    topic(fake_zookeeper, "a", {0: [1]})
    topic(fake_zookeeper, "b", {0: [1]})
    transactions = []
    real = fake_zookeeper.transaction
    monkeypatch.setattr(fake_zookeeper, "transaction", lambda: transactions.append(real()) or transactions[-1])
    code, out, _ = run(capsys, "topics", "delete", "a", "b", "--yes")
    assert code == 0
    assert fake_zookeeper.get_children("/admin/delete_topics") == ["a", "b"]
    assert [[op[:2] for op in t.operations] for t in transactions] == [
        [("create", "/admin/delete_topics/a"), ("create", "/admin/delete_topics/b")]]
    assert "topic a marked for deletion" in out and "topic b marked for deletion" in out


def test_delete_refuses_unknown_topics_and_missing_confirmation(fake_zookeeper, capsys):
    topic(fake_zookeeper, "a", {0: [1]})
    refused(fake_zookeeper, capsys, ["topics", "delete", "a", "nope", "--yes"], "'nope' does not exist", "--if-exists")
    # pytest's stdin is not a terminal: without --yes nothing may be deleted.
    refused(fake_zookeeper, capsys, ["topics", "delete", "a"], "not a terminal", "--yes")
    refused(fake_zookeeper, capsys, ["topics", "delete", "__consumer_offsets", "--yes"], "internal topic")


def test_delete_if_exists_skips_missing_and_already_marked_topics(fake_zookeeper, capsys):
    topic(fake_zookeeper, "a", {0: [1]})
    topic(fake_zookeeper, "b", {0: [1]})
    fake_zookeeper.create("/admin/delete_topics/b", makepath=True)
    code, out, _ = run(capsys, "topics", "delete", "a", "b", "nope", "--yes", "--if-exists", "-o", "json")
    assert code == 0
    assert json.loads(out) == {"marked_for_deletion": ["a"], "already_marked": ["b"], "missing": ["nope"]}


# --- alter ----------------------------------------------------------------------------

def test_alter_adds_partitions_continuing_kafkas_assignment(fake_zookeeper, capsys):
    brokers(fake_zookeeper)
    topic(fake_zookeeper, "t", {0: [3, 2, 1], 1: [1, 3, 2], 2: [2, 1, 3], 3: [3, 1, 2]})
    code, _, _ = run(capsys, "topics", "alter", "t", "--partitions", "7")
    assert code == 0
    value = json.loads(fake_zookeeper.data("/brokers/topics/t"))
    # Kafka's addPartitions: start index = position of broker 3 (partition 0's
    # first replica) among the sorted brokers, the same index as first shift.
    assert {p: value["partitions"][p] for p in ("4", "5", "6")} == {"4": [1, 2, 3], "5": [2, 3, 1], "6": [3, 2, 1]}
    assert value["partitions"]["0"] == [3, 2, 1] and value["topic_id"] == "cMr3GpVESX2L3byPGf93lQ"


def test_alter_takes_an_explicit_assignment_of_the_new_or_of_all_partitions(fake_zookeeper, capsys):
    brokers(fake_zookeeper)
    topic(fake_zookeeper, "t", {0: [1, 2]})
    assert run(capsys, "topics", "alter", "t", "-p", "2", "--replica-assignment", "3:1")[0] == 0
    assert run(capsys, "topics", "alter", "t", "-p", "3", "--replica-assignment", "1:2,3:1,2:3")[0] == 0
    partitions = json.loads(fake_zookeeper.data("/brokers/topics/t"))["partitions"]
    assert partitions == {"0": [1, 2], "1": [3, 1], "2": [2, 3]}


def test_alter_never_removes_partitions_and_validates_before_writing(fake_zookeeper, capsys):
    brokers(fake_zookeeper)
    topic(fake_zookeeper, "t", {0: [1, 2], 1: [2, 3]})
    refused(fake_zookeeper, capsys, ["topics", "alter", "t", "--partitions", "2"], "has 2 partitions")
    refused(fake_zookeeper, capsys, ["topics", "alter", "t", "--partitions", "1"], "only be added")
    refused(fake_zookeeper, capsys, ["topics", "alter", "t", "-p", "3", "--replica-assignment", "1"],
            "same replication factor")
    refused(fake_zookeeper, capsys, ["topics", "alter", "t", "-p", "3", "--replica-assignment", "1:2,3:4"],
            "2 partitions given")
    refused(fake_zookeeper, capsys, ["topics", "alter", "nope", "-p", "3"], "'nope' does not exist")


def test_alter_writes_conditionally_on_the_version_it_read(fake_zookeeper, capsys, monkeypatch):
    brokers(fake_zookeeper)
    topic(fake_zookeeper, "t", {0: [1, 2]})
    real_get = fake_zookeeper.get_async

    def get_then_someone_writes(path, watch=None):
        result = real_get(path)
        if path == "/brokers/topics/t":
            fake_zookeeper.set(path, fake_zookeeper.get(path)[0])  # a concurrent writer
        return result

    monkeypatch.setattr(fake_zookeeper, "get_async", get_then_someone_writes)
    code, _, err = run(capsys, "topics", "alter", "t", "--partitions", "3")
    assert code == 1 and "changed while this command ran" in err
    assert list(json.loads(fake_zookeeper.data("/brokers/topics/t"))["partitions"]) == ["0"]


# --- describe and its health filters --------------------------------------------------

def unhealthy_cluster(zookeeper):
    """Broker 3 is down: its replicas are out of the ISRs, 'solo' (only on 3) has no leader."""
    brokers(zookeeper, ids=(1, 2))
    topic(zookeeper, "t", {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]},
          {0: (1, [1, 2, 3]), 1: (2, [2, 1]), 2: (1, [1, 2])}, config={"min.insync.replicas": "2"})
    topic(zookeeper, "solo", {0: [3]}, {0: (-1, [3])})
    topic(zookeeper, "stale", {0: [3, 1]}, {0: (3, [3, 1])})   # leader 3 not yet replaced


def describe(capsys, *options):
    code, out, err = run(capsys, "topics", "describe", *options, "-o", "json")
    assert code in (0, 1), err
    return code, [(r["topic"], r["partition"]) for r in json.loads(out)]


def test_health_filters(fake_zookeeper, capsys):
    unhealthy_cluster(fake_zookeeper)
    assert describe(capsys, "--under-replicated-partitions") == (1, [("t", 1), ("t", 2)])
    assert describe(capsys, "--under-min-isr-partitions") == (1, [("solo", 0)])
    assert describe(capsys, "--at-min-isr-partitions") == (1, [("solo", 0), ("t", 1), ("t", 2)])
    assert describe(capsys, "--unavailable-partitions") == (1, [("solo", 0), ("stale", 0)])
    assert describe(capsys, "--non-preferred-leader") == (1, [("solo", 0), ("t", 2)])
    assert describe(capsys, "--under-replicated-partitions", "--unavailable-partitions") == (
        1, [("solo", 0), ("stale", 0), ("t", 1), ("t", 2)])
    assert describe(capsys, "t", "--under-min-isr-partitions") == (0, [])


def test_describe_json_is_a_flat_list_with_the_operators_fields(fake_zookeeper, capsys):
    unhealthy_cluster(fake_zookeeper)
    code, out, _ = run(capsys, "topics", "describe", "t", "-o", "json")
    assert code == 0
    rows = json.loads(out)
    assert rows[1] == {"topic": "t", "partition": 1, "leader": 2, "leader_epoch": 3, "replicas": [2, 3, 1],
                       "isr": [2, 1], "offline_replicas": [3], "min_insync_replicas": 2,
                       "marked_for_deletion": False,
                       "problems": ["under-replicated-partitions", "at-min-isr-partitions"]}


def test_describe_table_and_unknown_topic(fake_zookeeper, capsys):
    unhealthy_cluster(fake_zookeeper)
    code, out, _ = run(capsys, "topics", "describe", "solo")
    assert code == 0
    assert out.splitlines()[0].split() == ["TOPIC", "PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR", "OFFLINE",
                                           "PROBLEMS"]
    assert out.splitlines()[2].split()[:7] == ["solo", "0", "-1", "3", "3", "3", "3"]
    refused(fake_zookeeper, capsys, ["topics", "describe", "nope"], "no topic matches 'nope'")


def test_patterns_select_topics_and_deletion_is_marked(fake_zookeeper, capsys):
    brokers(fake_zookeeper)
    for name in ("orders.v1", "orders_v2", "events"):
        topic(fake_zookeeper, name, {0: [1]}, states={0: (1, [1])})
    fake_zookeeper.create("/admin/delete_topics/orders_v2", b"", makepath=True)
    code, out, _ = run(capsys, "topics", "list", "orders.*")
    assert (code, out.splitlines()) == (0, ["orders.v1", "orders_v2 - marked for deletion"])
    code, out, _ = run(capsys, "topics", "describe", "orders_v.", "-o", "json")
    [row] = json.loads(out)
    assert (row["topic"], row["marked_for_deletion"], row["problems"]) == ("orders_v2", True, ["marked-for-deletion"])
    refused(fake_zookeeper, capsys, ["topics", "describe", "orders("], "neither a topic nor a valid regular expression")


def test_describe_reads_many_partitions_correctly(fake_zookeeper, capsys, monkeypatch):
    from kazoo.exceptions import NoNodeError

    def get(path):  # the fake's get counts children by scanning every znode: too slow for 20,000
        if path not in fake_zookeeper.nodes:
            raise NoNodeError(path)
        return fake_zookeeper.nodes[path]

    monkeypatch.setattr(fake_zookeeper, "get", get)
    brokers(fake_zookeeper)
    count = 10_000
    topic(fake_zookeeper, "big", {p: [p % 3 + 1, (p + 1) % 3 + 1] for p in range(count)},
          {p: (p % 3 + 1, [p % 3 + 1] if p % 7 == 0 else [p % 3 + 1, (p + 1) % 3 + 1]) for p in range(count)})
    code, out, _ = run(capsys, "topics", "describe", "big", "-o", "json")
    rows = json.loads(out)
    assert code == 0 and len(rows) == count
    assert all(r["partition"] == p and r["leader"] == p % 3 + 1 for p, r in enumerate(rows))
    code, out, _ = run(capsys, "topics", "describe", "--under-replicated-partitions", "-o", "json")
    assert code == 1 and [r["partition"] for r in json.loads(out)] == list(range(0, count, 7))


def test_the_version_1_topic_format_with_shuffled_keys_is_understood(fake_zookeeper, capsys):
    brokers(fake_zookeeper)
    fake_zookeeper.create("/brokers/topics/old", b'{"partitions":{"1":[2,1],"0":[1,2]},"version":1}', makepath=True)
    fake_zookeeper.create("/brokers/topics/old/partitions/0/state",
                          b'{"isr":[1],"leader_epoch":4,"version":1,"leader":1,"controller_epoch":2}', makepath=True)
    code, out, _ = run(capsys, "topics", "describe", "old", "-o", "json")
    assert code == 0
    assert [(r["partition"], r["leader"], r["leader_epoch"], r["isr"]) for r in json.loads(out)] == [
        (0, 1, 4, [1]), (1, -1, -1, [])]


# --- completion -------------------------------------------------------------------------

def complete(monkeypatch, capsys, words: str):
    monkeypatch.setenv("_KAFKACTL_COMPLETE", "complete_bash")
    monkeypatch.setenv("COMP_WORDS", words)
    monkeypatch.setenv("COMP_CWORD", str(len(words.split()) - (0 if words.endswith(" ") else 1)))
    code = main(["topics", "describe"])
    return code, capsys.readouterr()


def test_topic_names_complete_from_zookeeper(fake_zookeeper, monkeypatch, capsys):
    topic(fake_zookeeper, "orders", {0: [1]})
    topic(fake_zookeeper, "payments", {0: [1]})
    code, (out, err) = complete(monkeypatch, capsys, "kafkactl topics describe or")
    assert code == 0 and out.split() == ["orders"] and err == ""


def test_completion_prints_nothing_when_zookeeper_is_unreachable(monkeypatch, capsys):
    from kafkactl.cli import common

    def unreachable(address, timeout_s):
        assert timeout_s <= 1.0
        raise OSError("connection refused")

    monkeypatch.setattr(common, "connect_zookeeper", unreachable)
    monkeypatch.setenv("KAFKACTL_ZOOKEEPER", "127.0.0.1:1")
    code, (out, err) = complete(monkeypatch, capsys, "kafkactl topics delete ")
    assert code == 0 and out.strip() == "" and err == ""
