"""`kafkactl groups` as a subprocess against a real local cluster (ZooKeeper +
3 brokers) and its group coordinator, with confluent-kafka consumers in the
groups. Lag is checked against what was produced and consumed; resets are
checked by a consumer that starts from the new offsets.

One cluster for the module; each test has groups and topics of its own, and
runs through both back ends (-z and -b: support/backends.py), which find the
brokers and the partitions' leaders each their own way.
"""

from __future__ import annotations

import json
import time

import pytest

from support.backends import BACKENDS, address_args
from support.local_cluster import cluster_up
from support.names import unique_topic
from support.waiting import wait_for

WAIT_S = 60
POLL_S = 0.5
# Produced per partition: uneven, so a clamped reset shows per partition.
PRODUCED = {0: 100, 1: 80, 2: 120}
CONSUMED = 120


@pytest.fixture(scope="module")
def up(tmp_path_factory):
    with cluster_up(tmp_path_factory, 3) as running:
        yield running


class Through:
    """The module's `kafkactl` with -z or -b and the cluster's address on every command."""

    def __init__(self, cli, via: list[str]) -> None:
        self.cli, self.via = cli, via

    def __call__(self, *args: str):
        return self.cli(*args, *self.via)

    def ok(self, *args: str):
        return self.cli.ok(*args, *self.via)


@pytest.fixture(params=BACKENDS)
def kafkactl(up, request) -> Through:
    _, _, status = up
    return Through(up[0], address_args(request.param, status))


def produce(bootstrap: str, topic: str, counts: dict[int, int]) -> None:
    """counts[p] records into partition p, acks=all, each value "p-i"."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    failures = []
    for partition, count in counts.items():
        for i in range(count):
            producer.produce(topic, value=f"{partition}-{i}".encode(), key=f"k{i}".encode(), partition=partition,
                             on_delivery=lambda error, _: error is not None and failures.append(error))
    assert producer.flush(WAIT_S) == 0 and failures == [], failures


def consumer(bootstrap: str, group: str, topics: list[str]):
    from confluent_kafka import Consumer

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": "groups-test",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest", "session.timeout.ms": 6000})
    c.subscribe(topics)
    return c


def take(c, count: int) -> list:
    """Exactly `count` messages from consumer `c` (bounded by WAIT_S)."""
    messages = []
    deadline = time.monotonic() + WAIT_S
    while len(messages) < count and time.monotonic() < deadline:
        message = c.poll(POLL_S)
        if message is not None:
            assert message.error() is None, message.error()
            messages.append(message)
    assert len(messages) == count, f"consumed {len(messages)} of {count}"
    return messages


def commit_consumed(c, topic: str, messages: list) -> None:
    """Commit every partition of `topic`, each at the count consumed from it
    (0 for none): then every partition has a committed offset and a lag."""
    from confluent_kafka import TopicPartition

    counts = {p: 0 for p in PRODUCED}
    for m in messages:
        counts[m.partition()] = max(counts[m.partition()], m.offset() + 1)
    c.commit(offsets=[TopicPartition(topic, p, n) for p, n in counts.items()], asynchronous=False)


def nothing_more(c, quiet_s: float = 3.0) -> None:
    """`c` gets no further message for `quiet_s`."""
    deadline = time.monotonic() + quiet_s
    while time.monotonic() < deadline:
        message = c.poll(POLL_S)
        assert message is None or message.error() is not None, f"unexpected {message.topic()}:{message.offset()}"


def describe(cli, group: str) -> dict:
    return json.loads(cli.ok("groups", "describe", group, "-o", "json").stdout)


def state(cli, group: str) -> str | None:
    done = cli("groups", "describe", group, "-o", "json")
    return json.loads(done.stdout)["state"] if done.returncode == 0 else None


def committed(data: dict) -> dict[int, int | None]:
    return {p["partition"]: p["committed_offset"] for p in data["partitions"]}


def one_line_error(done) -> str:
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kafkactl: error: "), done.stderr
    return lines[0]


def new_topic(cli, prefix: str) -> str:
    topic = unique_topic(prefix)
    cli.ok("topics", "create", topic, "--partitions", "3", "--replication-factor", "2")
    return topic


def test_describe_lag_and_reset_of_a_live_then_empty_group(up, kafkactl):
    cli, status = kafkactl, up[2]
    bootstrap = status["bootstrap_servers"]
    topic, group = new_topic(cli, "events"), unique_topic("live")
    produce(bootstrap, topic, PRODUCED)
    member = consumer(bootstrap, group, [topic])
    try:
        commit_consumed(member, topic, take(member, CONSUMED))
        wait_for(lambda: state(cli, group) == "Stable", WAIT_S, f"{group} Stable")
        _check_live_group(cli, group, topic)
        _check_lag_command(cli, group)
        refused = cli("groups", "reset-offsets", group, "--all-topics", "--to-earliest", "--execute")
        assert refused.returncode == 1
        assert one_line_error(refused) == (f"kafkactl: error: Assignments can only be reset if the group '{group}' "
                                           f"is inactive, but the current state is Stable.")
        assert sum(committed(describe(cli, group)).values()) == CONSUMED
    finally:
        member.close()     # LeaveGroup: the group becomes Empty at once
    wait_for(lambda: state(cli, group) == "Empty", WAIT_S, f"{group} Empty after its member left")
    _check_reset_of_the_empty_group(cli, bootstrap, group, topic)


def _check_live_group(cli, group: str, topic: str) -> None:
    data = describe(cli, group)
    assert (data["state"], data["protocol_type"]) == ("Stable", "consumer")
    [member] = data["members"]
    assert member["client_id"] == "groups-test"
    assert member["assignment"]["partitions"] == {topic: [0, 1, 2]}
    rows = {p["partition"]: p for p in data["partitions"]}
    assert {p: r["log_end_offset"] for p, r in rows.items()} == PRODUCED
    assert sum(r["committed_offset"] for r in rows.values()) == CONSUMED
    assert all(r["lag"] == PRODUCED[p] - r["committed_offset"] for p, r in rows.items())
    assert data["total_lag"] == sum(PRODUCED.values()) - CONSUMED
    assert {r["member_id"] for r in rows.values()} == {member["member_id"]}
    table = cli.ok("groups", "describe", group).stdout
    assert f"total lag:    {sum(PRODUCED.values()) - CONSUMED}" in table


def _check_lag_command(cli, group: str) -> None:
    lag = sum(PRODUCED.values()) - CONSUMED
    rows = {r["group"]: r for r in json.loads(cli.ok("groups", "lag", "-o", "json").stdout)}
    assert (rows[group]["lag"], rows[group]["state"], rows[group]["members"]) == (lag, "Stable", 1)
    over = cli("groups", "lag", "--max-lag", str(lag - 1))
    assert over.returncode == 1 and f"{group} ({lag})" in over.stderr
    listed = {g["group"]: g for g in json.loads(cli.ok("groups", "list", "-o", "json").stdout)}
    assert listed[group]["state"] == "Stable"


def _check_reset_of_the_empty_group(cli, bootstrap: str, group: str, topic: str) -> None:
    before = committed(describe(cli, group))
    plan = cli.ok("groups", "reset-offsets", group, "--topic", topic, "--to-offset", "90", "-o", "json")
    assert "dry run" in plan.stderr
    expected = {p: min(90, n) for p, n in PRODUCED.items()}
    assert {r["partition"]: r["new_offset"] for r in json.loads(plan.stdout)["partitions"]} == expected
    assert committed(describe(cli, group)) == before        # the dry run changed nothing
    cli.ok("groups", "reset-offsets", group, "--topic", topic, "--to-offset", "90", "--execute")
    assert committed(describe(cli, group)) == expected
    restarted = consumer(bootstrap, group, [topic])
    try:
        messages = take(restarted, sum(n - expected[p] for p, n in PRODUCED.items()))
        nothing_more(restarted)
    finally:
        restarted.close()
    first = {}
    for m in messages:
        first.setdefault(m.partition(), m.offset())
    assert first == {p: o for p, o in expected.items() if o < PRODUCED[p]}


def test_export_then_reset_from_the_file(up, kafkactl, tmp_path):
    cli, status = kafkactl, up[2]
    topic, group = new_topic(cli, "exported"), unique_topic("filed")
    produce(status["bootstrap_servers"], topic, PRODUCED)
    cli.ok("groups", "reset-offsets", group, "--topic", topic, "--to-latest", "--execute")
    assert committed(describe(cli, group)) == PRODUCED
    exported = cli.ok("groups", "reset-offsets", group, "--topic", f"{topic}:0,2", "--shift-by", "-30", "--export")
    assert exported.stdout == f"{topic},0,70\n{topic},2,90\n"
    plan = tmp_path / "plan.csv"
    plan.write_text(exported.stdout)
    cli.ok("groups", "reset-offsets", group, "--from-file", str(plan), "--execute")
    assert committed(describe(cli, group)) == {0: 70, 1: 80, 2: 90}


def test_delete_is_refused_while_the_group_has_members(up, kafkactl):
    cli, status = kafkactl, up[2]
    bootstrap = status["bootstrap_servers"]
    topic, group = new_topic(cli, "deleted"), unique_topic("doomed")
    produce(bootstrap, topic, {0: 5})
    member = consumer(bootstrap, group, [topic])
    try:
        take(member, 5)
        member.commit(asynchronous=False)
        wait_for(lambda: state(cli, group) == "Stable", WAIT_S, f"{group} Stable")
        refused = cli("groups", "delete", group)
        assert refused.returncode == 1
        assert f"group '{group}' still has members (NON_EMPTY_GROUP)" in one_line_error(refused)
    finally:
        member.close()
    wait_for(lambda: state(cli, group) == "Empty", WAIT_S, f"{group} Empty")
    assert json.loads(cli.ok("groups", "delete", group, "-o", "json").stdout) == {"deleted": [group]}
    assert group not in {g["group"] for g in json.loads(cli.ok("groups", "list", "-o", "json").stdout)}
    gone = cli("groups", "describe", group)
    assert gone.returncode == 2 and "does not exist" in one_line_error(gone)


def test_delete_offsets_of_a_subscribed_topic_is_refused_and_of_another_allowed(up, kafkactl):
    from confluent_kafka import TopicPartition

    cli, status = kafkactl, up[2]
    bootstrap = status["bootstrap_servers"]
    subscribed, other, group = new_topic(cli, "sub"), new_topic(cli, "other"), unique_topic("offsets")
    produce(bootstrap, subscribed, {0: 5})
    produce(bootstrap, other, {1: 8})
    member = consumer(bootstrap, group, [subscribed])
    try:
        take(member, 5)
        member.commit(asynchronous=False)
        member.commit(offsets=[TopicPartition(other, 1, 6)], asynchronous=False)
        wait_for(lambda: state(cli, group) == "Stable", WAIT_S, f"{group} Stable")
        refused = cli("groups", "delete-offsets", group, "--topic", subscribed)
        assert refused.returncode == 1
        assert f"subscribed to {subscribed} (GROUP_SUBSCRIBED_TO_TOPIC)" in one_line_error(refused)
        done = json.loads(cli.ok("groups", "delete-offsets", group, "--topic", f"{other}:1", "-o", "json").stdout)
        assert done == [{"topic": other, "partition": 1, "deleted": True}]
        topics = {p["topic"] for p in describe(cli, group)["partitions"]}
        assert topics == {subscribed}
    finally:
        member.close()
