"""`kafkactl reassign` as a subprocess against a real local cluster (ZooKeeper + 4 brokers).

One cluster for the module: each test uses its own topics. The tests run
through both back ends (-z and -b: support/backends.py), the throttled ones
too: -z writes the throttles with the move in one multi, -b with
IncrementalAlterConfigs before it, and both must leave the same configs
(read back from ZooKeeper, where either way they end up).
"""

import json
import os
import pty
import select
import subprocess
import threading
import time

import pytest

from support.backends import BACKENDS, Through
from support.local_cluster import CLI_TIMEOUT_S, KAFKACTL, cluster_up, consume, produce as produce_lines, zk_tree
from support.waiting import wait_for

WAIT_S = 30


@pytest.fixture(scope="module")
def up(tmp_path_factory):
    with cluster_up(tmp_path_factory, 4) as (cli, _, status):
        yield cli, status


@pytest.fixture(params=BACKENDS)
def way(up, request):
    cli, status = up
    return Through(cli, status, request.param), status


def produce(bootstrap, topic, count):
    produce_lines(bootstrap, topic, [f"k{i}:message-{i}" for i in range(count)])


def assignment(cli, topic):
    rows = json.loads(cli.ok("topics", "describe", topic, "-o", "json").stdout)
    return {r["partition"]: r["replicas"] for r in rows}


def configs(cli, *entity):
    rows = json.loads(cli.ok("configs", "describe", *entity, "-o", "json").stdout)
    return {r["key"]: r["value"] for r in rows if r["source"] != "default"}


def stored_configs(cli, *entity):
    """An entity's overrides as ZooKeeper holds them, whichever back end wrote them
    (the module's CLI: `cluster up` made ZooKeeper its current context)."""
    return configs(cli.cli, *entity)


def rates(value):
    return {"leader.replication.throttled.rate": value, "follower.replication.throttled.rate": value}


def test_throttled_reassignment_with_wait_then_verify_end_to_end(way, tmp_path):
    cli, status = way
    topic = cli.t("moved")
    bootstrap = status["bootstrap_servers"]
    cli.ok("topics", "create", topic, "--partitions", "3", "--replication-factor", "2")
    produce(bootstrap, topic, 30)

    generated = json.loads(cli.ok("reassign", "generate", "--topics", topic, "--brokers", "3,4", "-o", "json").stdout)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(generated["proposed"]))
    target = {p["partition"]: p["replicas"] for p in generated["proposed"]["partitions"]}
    before = assignment(cli, topic)

    done = cli.ok("reassign", "execute", "--plan", str(plan), "--throttle", "50000000", "--wait",
                  "--rollback-file", str(tmp_path / "rollback.json"), "-o", "json")
    result = json.loads(done.stdout)
    assert [p["status"] for p in result["partitions"]] == ["complete"] * 3
    assert "reassigning" in done.stderr  # the progress bar's label, on stderr
    assert assignment(cli, topic) == target
    rollback = json.loads((tmp_path / "rollback.json").read_text())
    assert {p["partition"]: p["replicas"] for p in rollback["partitions"]} == before

    # Kafka's throttles for the partitions whose replica set changes: their
    # current replicas as leaders, the added ones as followers, a rate on
    # every broker they have or will have. They stay until verify sees every
    # partition complete, the same through either back end.
    moving = sorted(p for p in target if set(target[p]) != set(before[p]))
    throttled = sorted({b for p in moving for b in before[p] + target[p]})
    assert result["throttle_bytes_per_s"] == 50000000
    assert result["throttled_entities"] == [f"topics/{topic}"] + [f"brokers/{b}" for b in throttled]
    assert stored_configs(cli, "--topic", topic) == {
        "leader.replication.throttled.replicas": ",".join(f"{p}:{b}" for p in moving for b in before[p]),
        "follower.replication.throttled.replicas": ",".join(
            f"{p}:{b}" for p in moving for b in target[p] if b not in before[p])}
    assert {b: stored_configs(cli, "--broker", str(b)) for b in (1, 2, 3, 4)} == {
        b: rates("50000000") if b in throttled else {} for b in (1, 2, 3, 4)}

    verified = json.loads(cli.ok("reassign", "verify", "--plan", str(plan), "-o", "json").stdout)
    assert [p["status"] for p in verified["partitions"]] == ["complete"] * 3
    assert verified["throttles_removed"] == [f"topics/{topic}"] + [f"brokers/{b}" for b in throttled]
    assert stored_configs(cli, "--topic", topic) == {}
    assert all(stored_configs(cli, "--broker", str(b)) == {} for b in (1, 2, 3, 4))
    assert consume(bootstrap, topic) == sorted(f"k{i}:message-{i}" for i in range(30))


def test_a_kafka_tool_plan_is_accepted_as_is(way, tmp_path):
    cli, status = way
    topic = cli.t("kafka-plan")
    cli.ok("topics", "create", topic, "--partitions", "2", "--replication-factor", "1")
    # As kafka-reassign-partitions.sh writes it: its own key order, one entry
    # with log_dirs and one without, pretty-printed.
    plan = tmp_path / "kafka.json"
    plan.write_text('{\n "partitions": [\n  {"replicas": [4, 1], "topic": "%s", "partition": 0,\n'
                    '   "log_dirs": ["any", "any"]},\n  {"partition": 1, "topic": "%s", "replicas": [2]}\n'
                    ' ],\n "version": 1\n}\n' % (topic, topic))
    cli.ok("reassign", "execute", "--plan", str(plan), "--wait", "--rollback-file", str(tmp_path / "rb.json"))
    assert assignment(cli, topic) == {0: [4, 1], 1: [2]}
    assert cli("reassign", "verify", "--plan", str(plan)).returncode == 0
    assert "no reassignment is running" in cli.ok("reassign", "status").stdout


def test_invalid_plans_exit_2_and_zookeeper_is_unchanged(way, tmp_path):
    cli, status = way
    topic = cli.t("untouched")
    cli.ok("topics", "create", topic, "--partitions", "1", "--replication-factor", "1")
    before = zk_tree(status["zookeeper"])
    bad = {"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": [1, 9]}]}
    plan = tmp_path / "bad.json"
    plan.write_text(json.dumps(bad))
    done = cli("reassign", "execute", "--plan", str(plan), "--throttle", "1000")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"kafkactl: error: {plan}: partitions[0] (topic {topic!r} partition 0): \"replicas\": broker 9 is not "
        f"registered (registered: 1, 2, 3, 4)"]
    assert zk_tree(status["zookeeper"]) == before


def test_throttles_set_through_the_admin_api_are_read_back_then_removed_by_verify(up, tmp_path):
    cli, status = up
    admin = Through(cli, status, "admin-api")
    topic = "throttled-b"
    admin.ok("topics", "create", topic, "--partitions", "1", "--replication-factor", "1")
    [leader] = assignment(admin, topic)[0]
    other = 1 if leader != 1 else 2
    brokers = sorted((leader, other))
    # An override of the topic's own: the throttles are set and removed beside it.
    admin.ok("configs", "alter", "--topic", topic, "--add", "retention.ms=86400000")
    produce(status["bootstrap_servers"], topic, 10)
    plan = tmp_path / "grow.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": 0, "replicas": [leader, other]}]}))

    started = json.loads(admin.ok("reassign", "execute", "--plan", str(plan), "--throttle", "1000000",
                                  "--rollback-file", str(tmp_path / "rb.json"), "-o", "json").stdout)
    assert (started["throttle_bytes_per_s"], started["throttled_entities"]) == (
        1000000, [f"topics/{topic}"] + [f"brokers/{b}" for b in brokers])
    # Written before the move started, so in ZooKeeper when execute returns;
    # DescribeConfigs (-b) shows them once the brokers have applied them.
    throttled = ({"retention.ms": "86400000", "leader.replication.throttled.replicas": f"0:{leader}",
                  "follower.replication.throttled.replicas": f"0:{other}"},
                 {b: rates("1000000") if b in brokers else {} for b in (1, 2, 3, 4)})
    assert described(cli, topic) == throttled
    wait_for(lambda: described(admin, topic) == throttled, WAIT_S, "the brokers applying the throttles")

    def verified():
        done = admin("reassign", "verify", "--plan", str(plan), "-o", "json")
        assert done.returncode in (0, 1), done.stderr
        return json.loads(done.stdout) if done.returncode == 0 else None

    # Exit 1 (throttles kept) while the new replica catches up; the one that
    # finds the partition complete removes them.
    removed = wait_for(verified, WAIT_S, f"verify to find {topic}-0 on {leader},{other}")["throttles_removed"]
    assert removed == [f"topics/{topic}"] + [f"brokers/{b}" for b in brokers]
    unthrottled = ({"retention.ms": "86400000"}, {b: {} for b in (1, 2, 3, 4)})
    assert described(cli, topic) == unthrottled
    wait_for(lambda: described(admin, topic) == unthrottled, WAIT_S, "the brokers dropping the throttles")
    assert json.loads(admin.ok("reassign", "verify", "--plan", str(plan), "-o", "json").stdout)[
        "throttles_removed"] == []


def described(cli, topic):
    """`configs describe` of the topic and of every broker, through `cli`'s back end."""
    return configs(cli, "--topic", topic), {b: configs(cli, "--broker", str(b)) for b in (1, 2, 3, 4)}


def throttle(cli, topic: str, leader: int, other: int, rate: str | None) -> None:
    """The keys Kafka's tool writes for adding `other` (rates on both brokers; None
    deletes them), through the case's back end; then, asked of each broker itself
    (-b), until it applies them."""
    for broker in (leader, other):
        if rate is None:
            cli.ok("configs", "alter", "--broker", str(broker), "--delete", "leader.replication.throttled.rate",
                   "--delete", "follower.replication.throttled.rate")
        else:
            cli.ok("configs", "alter", "--broker", str(broker), "--add", f"leader.replication.throttled.rate={rate}",
                   "--add", f"follower.replication.throttled.rate={rate}")
    for broker in (leader, other):
        wait_for(lambda: applied_rate(cli, broker) == rate, WAIT_S, f"broker {broker} applying the rate")


def applied_rate(cli, broker: int) -> str | None:
    rows = json.loads(cli.cli.ok("configs", "describe", "--broker", str(broker), "-o", "json",
                                 "-b", cli.bootstrap).stdout)
    return {r["key"]: r["value"] for r in rows}.get("follower.replication.throttled.rate")


def cancel_on_a_terminal(cli, answered) -> tuple[int, str, str]:
    """`reassign cancel --wait -o json` answering its prompt with y on a terminal, as
    an operator does; `answered()` runs right after: the command has read the
    running reassignment by then (its prompt names the partitions). The exit code,
    stdout and what the terminal showed."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([str(KAFKACTL), "reassign", "cancel", "--wait", "-o", "json", *cli.args],
                            stdin=slave, stdout=subprocess.PIPE, stderr=slave, env=cli.cli.env, text=True)
    os.close(slave)
    shown = bytearray()

    def read() -> bool:
        try:
            chunk = os.read(master, 4096)
        except OSError:      # EIO: the command closed the terminal
            return False
        shown.extend(chunk)
        return bool(chunk)

    def read_to_the_end() -> None:
        while read():
            pass

    try:
        deadline = time.monotonic() + CLI_TIMEOUT_S
        while b"Continue?" not in shown:
            ready, _, _ = select.select([master], [], [], max(deadline - time.monotonic(), 0))
            assert ready and read(), f"no prompt from reassign cancel:\n{shown.decode(errors='replace')}"
        os.write(master, b"y\n")
        # Keep reading: the progress bar must not fill the terminal's buffer.
        drain = threading.Thread(target=read_to_the_end, daemon=True)
        drain.start()
        answered()
        out, _ = proc.communicate(timeout=CLI_TIMEOUT_S)
        drain.join(CLI_TIMEOUT_S)
    finally:
        proc.kill()
        os.close(master)
    return proc.returncode, out, shown.decode(errors="replace")


def saved_replicas(path: str) -> dict:
    with open(path) as file:
        return {p["partition"]: p["replicas"] for p in json.load(file)["partitions"]}


def test_cancel_puts_the_replicas_back_and_saves_the_complete_ones_as_rollback(way, tmp_path):
    cli, status = way
    topic = cli.t("slow")
    cli.ok("topics", "create", topic, "--partitions", "1", "--replication-factor", "1")
    [leader] = assignment(cli, topic)[0]
    other = 1 if leader != 1 else 2
    # 3 MB: more than one fetch brings (1 MiB); at 1 byte/s the new replica
    # then owes the throttle for days, so the move stays in progress.
    produce_lines(status["bootstrap_servers"], topic, [f"{i}:{'x' * 1000}" for i in range(3000)])
    cli.ok("configs", "alter", "--topic", topic, "--add", f"follower.replication.throttled.replicas=0:{other}",
           "--add", f"leader.replication.throttled.replicas=0:{leader}")
    throttle(cli, topic, leader, other, "1")
    plan = tmp_path / "grow.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": 0, "replicas": [leader, other]}]}))
    cli.ok("reassign", "execute", "--plan", str(plan))
    [row] = json.loads(cli.ok("reassign", "status", "-o", "json").stdout)
    assert (row["status"], row["target"], row["adding"]) == ("in progress", [leader, other], [other])

    # -z cannot stop a move: its cancel waits for it to end, so the throttle
    # goes once it has read the running reassignment. -b's stops it at once,
    # and removes the throttles then (nothing moves any more), as Kafka's
    # --cancel does; -z's revert would keep the rate until its verify.
    lift = (lambda: throttle(cli, topic, leader, other, None)) if cli.backend == "zookeeper" else (lambda: None)
    code, out, shown = cancel_on_a_terminal(cli, lift)
    assert code == 0, shown
    done = json.loads(out)
    assert done["reverted"] == [{"topic": topic, "partition": 0, "replicas": [leader]}]
    assert [p["status"] for p in done["partitions"]] == ["complete"]
    assert saved_replicas(done["revert_plan"]) == {0: [leader]}
    # The rollback file: the replicas with a complete copy just before the
    # cancel changed the partition. Through -z the move had ended (its target,
    # where the revert started from); through -b it was stopped, so the
    # replicas from before it, never the target in flight.
    complete = [leader, other] if cli.backend == "zookeeper" else [leader]
    assert saved_replicas(done["rollback_file"]) == {0: complete}
    wait_for(lambda: assignment(cli, topic) == {0: [leader]}, WAIT_S, "the replicas from before")
    assert "no reassignment is running" in cli.ok("reassign", "status").stdout
    assert cli("reassign", "cancel", "--yes").returncode == 1
    if cli.backend != "zookeeper":
        assert done["throttles_removed"] == [f"topics/{topic}"] + [f"brokers/{b}" for b in sorted((leader, other))]
        assert stored_configs(cli, "--topic", topic) == {}
        for broker in (leader, other):   # the module's other tests expect no broker overrides, applied
            assert stored_configs(cli, "--broker", str(broker)) == {}
            wait_for(lambda: applied_rate(cli, broker) is None, WAIT_S, f"broker {broker} dropping the rate")
