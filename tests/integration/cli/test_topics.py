"""`kafkactl topics` as a subprocess against a real local cluster (ZooKeeper + 3 brokers).

One cluster serves the whole module: every test uses topics of its own, and
what each command writes is checked in ZooKeeper itself, including that a
refused command wrote nothing. Every test runs through both back ends (-z
and -b; conftest.py's matrix), with topic names of each back end's own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kafkactl.cluster.local import LocalCluster
from kafkactl.cluster.zk.client import session as zk_session
from support.backends import BACKENDS, address_args, require_served
from support.waiting import wait_for

KAFKACTL = Path(sys.executable).parent / "kafkactl"


class Live:
    """The module's cluster and a `kafkactl` whose current context is it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.env = {k: v for k, v in os.environ.items() if k not in ("KAFKACTL_ZOOKEEPER", "KAFKACTL_BROKER_MODULE")}
        self.env.update(KAFKACTL_CONFIG=str(root / "home" / "config.json"), XDG_STATE_HOME=str(root / "home" / "state"))
        self.zookeeper = ""
        self.up: dict = {}
        self.backend = "zookeeper"

    def run(self, *args: str) -> subprocess.CompletedProcess:
        argv = [str(KAFKACTL), *args, *address_args(self.backend, self.up)]
        return subprocess.run(argv, capture_output=True, text=True, env=self.env, timeout=120,
                              stdin=subprocess.DEVNULL)

    def t(self, name: str) -> str:
        """A topic name of this back end's own (both share the module's cluster)."""
        return name if self.backend == "zookeeper" else f"{name}-b"

    def needs(self, api_key: int, name: str) -> None:
        require_served(self.backend, self.up, api_key, name)

    def ok(self, *args: str) -> str:
        done = self.run(*args)
        assert done.returncode == 0, f"kafkactl {' '.join(args)}: {done.stderr}"
        return done.stdout

    def json(self, *args: str):
        return json.loads(self.ok(*args, "-o", "json"))

    def znodes(self, *parents: str) -> dict[str, bytes | None]:
        """The data of every child of `parents` (absent parent: empty)."""
        found = {}
        with zk_session(self.zookeeper, 10) as client:
            for parent in parents:
                if client.exists(parent):
                    for child in client.get_children(parent):
                        found[f"{parent}/{child}"] = client.get(f"{parent}/{child}")[0]
        return found


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    cluster = Live(tmp_path_factory.mktemp("topics"))
    try:
        up = json.loads(cluster.ok("cluster", "up", "--brokers", "3", "--dir", str(cluster.root / "cluster"),
                                   "--config", "num.partitions=4", "--config", "default.replication.factor=2",
                                   "-o", "json"))
        cluster.zookeeper, cluster.up = up["zookeeper"], up
        yield cluster
    finally:
        LocalCluster(cluster.root / "cluster").down(timeout_s=10)


@pytest.fixture(params=BACKENDS, autouse=True)
def backend(live, request):
    live.backend = request.param
    yield request.param
    live.backend = "zookeeper"



def leaders(live: Live, topic: str) -> dict[int, int]:
    return {r["partition"]: r["leader"] for r in live.json("topics", "describe", topic)}


def assert_refused(live: Live, args, *fragments):
    before = live.znodes("/brokers/topics", "/config/topics", "/admin/delete_topics")
    done = live.run(*args)
    assert done.returncode == 2, done.stderr
    line = done.stderr.strip()
    assert "\n" not in line and line.startswith("kafkactl: error: "), done.stderr
    assert all(f in line for f in fragments), line
    assert live.znodes("/brokers/topics", "/config/topics", "/admin/delete_topics") == before


def test_create_without_counts_takes_the_brokers_defaults(live):
    """As Kafka's tools do when -p/-r are left out: num.partitions and
    default.replication.factor of the brokers (4 and 2 in this cluster)."""
    live.needs(19, "CreateTopics")
    created = live.json("topics", "create", live.t("defaults-both"))
    assert {len(r) for r in created["partitions"].values()} == {2} and len(created["partitions"]) == 4
    only_rf = live.json("topics", "create", live.t("defaults-rf"), "-p", "2")
    assert len(only_rf["partitions"]) == 2 and {len(r) for r in only_rf["partitions"].values()} == {2}
    only_p = live.json("topics", "create", live.t("defaults-p"), "-r", "3")
    assert len(only_p["partitions"]) == 4 and {len(r) for r in only_p["partitions"].values()} == {3}


def test_create_with_an_explicit_assignment(live):
    live.needs(19, "CreateTopics")
    live.ok("topics", "create", live.t("explicit"), "--replica-assignment", "1:2:3,2:3:1",
            "--config", "retention.ms=60000")
    value = json.loads(live.znodes("/brokers/topics")["/brokers/topics/" + live.t("explicit")])
    assert value["partitions"] == {"0": [1, 2, 3], "1": [2, 3, 1]}
    config = json.loads(live.znodes("/config/topics")["/config/topics/" + live.t("explicit")])["config"]
    assert config == {"retention.ms": "60000"}
    # The controller elects the preferred replicas.
    wait_for(lambda: leaders(live, live.t("explicit")) == {0: 1, 1: 2}, 30, "leaders 1 and 2")
    rows = live.json("topics", "describe", live.t("explicit"))
    assert [(r["replicas"], sorted(r["isr"])) for r in rows] == [([1, 2, 3], [1, 2, 3]), ([2, 3, 1], [1, 2, 3])]


def test_create_with_kafkas_assignment_and_list(live):
    live.needs(19, "CreateTopics")
    live.ok("topics", "create", live.t("spread"), "--partitions", "6", "--replication-factor", "2")
    partitions = json.loads(live.znodes("/brokers/topics")["/brokers/topics/" + live.t("spread")])["partitions"]
    assert len(partitions) == 6 and all(len(set(r)) == 2 for r in partitions.values())
    assert sorted(r[0] for r in partitions.values()) == [1, 1, 2, 2, 3, 3]   # leaders spread evenly
    assert live.t("spread") in live.json("topics", "list")


def test_invalid_creations_are_refused_and_write_nothing(live):
    """Checked before anything is written, through either back end."""
    create = ["topics", "create"]
    assert_refused(live, [*create, live.t("big"), "-p", "1", "-r", "4"], "--replication-factor", "larger than")
    assert_refused(live, [*create, live.t("bad"), "--replica-assignment", "1:2,2:7"], "broker 7 is not registered")
    assert_refused(live, [*create, live.t("bad"), "--replica-assignment", "1:2,3"], "same replication factor")
    assert_refused(live, [*create, "bad name", "-p", "1", "-r", "1"], "illegal characters")
    assert_refused(live, [*create, live.t("bad"), "-p", "1", "-r", "1", "--config", "cleanup.policy=never"],
                   "cleanup.policy")
    live.needs(19, "CreateTopics")
    live.ok(*create, live.t("orders.v1"), "-p", "1", "-r", "1")
    assert_refused(live, [*create, live.t("orders_v1"), "-p", "1", "-r", "1"], "collides")


def test_alter_adds_partitions_that_get_leaders(live):
    live.needs(37, "CreatePartitions")
    live.ok("topics", "create", live.t("growing"), "--replica-assignment", "1:2,2:3")
    wait_for(lambda: leaders(live, live.t("growing")) == {0: 1, 1: 2}, 30, "leaders")
    added = live.json("topics", "alter", live.t("growing"), "--partitions", "4")["added"]
    partitions = json.loads(live.znodes("/brokers/topics")["/brokers/topics/" + live.t("growing")])["partitions"]
    assert partitions == {"0": [1, 2], "1": [2, 3], **added} and sorted(added) == ["2", "3"]
    wait_for(lambda: all(leader >= 1 for leader in leaders(live, live.t("growing")).values())
             and len(leaders(live, live.t("growing"))) == 4, 30, "leaders of the new partitions")
    assert_refused(live, ["topics", "alter", live.t("growing"), "--partitions", "3"], "only be added")
    assert_refused(live, ["topics", "alter", live.t("growing"), "--partitions", "5", "--replica-assignment", "1:9"],
                   "broker 9 is not registered")


def test_delete_waits_until_the_controller_removed_the_topics(live):
    live.needs(20, "DeleteTopics")
    live.ok("topics", "create", live.t("doomed-a"), "--replica-assignment", "1:2")
    live.ok("topics", "create", live.t("doomed-b"), "--replica-assignment", "2:3,3:1")
    wait_for(lambda: leaders(live, live.t("doomed-b")) == {0: 2, 1: 3}, 30, "leaders")
    # No terminal and no --yes: refused, nothing marked.
    assert_refused(live, ["topics", "delete", live.t("doomed-a")], "--yes")
    assert_refused(live, ["topics", "delete", live.t("doomed-a"), live.t("nope"), "--yes"],
                   f"'{live.t('nope')}' does not exist")
    out = live.ok("topics", "delete", live.t("doomed-a"), live.t("doomed-b"), "--yes", "--wait", "--timeout", "60")
    assert f"topic {live.t('doomed-a')} marked for deletion" in out \
        and f"deleted: {live.t('doomed-a')}, {live.t('doomed-b')}" in out
    # DeleteTopics (-b) answers once the metadata no longer has the topics, as
    # Kafka's does; the controller may still be removing their last znodes.
    wait_for(lambda: not [path for path in live.znodes("/brokers/topics", "/admin/delete_topics", "/config/topics")
                          if "doomed" in path], 15, "the deleted topics' znodes gone")
    assert live.t("doomed-a") not in live.json("topics", "list")


def test_describe_json_is_the_flat_list(live):
    live.needs(19, "CreateTopics")
    live.ok("topics", "create", live.t("flat"), "--replica-assignment", "3:1")
    wait_for(lambda: leaders(live, live.t("flat")) == {0: 3}, 30, "a leader")
    [row] = live.json("topics", "describe", live.t("flat"))
    assert {k: row[k] for k in ("topic", "partition", "leader", "replicas", "offline_replicas")} == {
        "topic": live.t("flat"), "partition": 0, "leader": 3, "replicas": [3, 1], "offline_replicas": []}
    assert row["leader_epoch"] >= 0 and sorted(row["isr"]) in ([3], [1, 3])


@pytest.mark.parametrize("backend", ["admin-api"], indirect=True)   # it compares both itself
def test_read_only_commands_say_the_same_through_both_back_ends(live, backend):
    """What the reference broker serves (Metadata, DescribeConfigs,
    DescribeLogDirs, the group APIs) gives the same answers as ZooKeeper."""
    with zk_session(live.zookeeper, 10) as client:
        if not client.exists("/brokers/topics/same-both"):
            live.backend = "zookeeper"
            live.ok("topics", "create", "same-both", "--replica-assignment", "1:2,2:3,3:1", "--config",
                    "retention.ms=70000")
            live.backend = backend
    wait_for(lambda: all(r["leader"] >= 1 for r in live.json("topics", "describe", "same-both")), 30, "leaders")

    def both(*args):
        answers = {}
        for way in ("zookeeper", "admin-api"):
            live.backend = way
            answers[way] = live.json(*args)
        live.backend = backend
        return answers["zookeeper"], answers["admin-api"]

    zk, admin = both("topics", "describe", "same-both")
    assert zk == admin
    zk, admin = both("configs", "describe", "--topic", "same-both")
    assert zk == admin and {"key": "retention.ms", "value": "70000", "source": "override"} in admin
    zk, admin = both("brokers", "list")
    drop = ("endpoints", "broker_epoch", "registered_ms", "log_dirs")   # not said by the Admin API; free bytes move
    assert [{k: v for k, v in b.items() if k not in drop} for b in zk] == \
        [{k: v for k, v in b.items() if k not in drop} for b in admin]
    assert [[d["path"] for d in b["log_dirs"]] for b in zk] == [[d["path"] for d in b["log_dirs"]] for b in admin]
    zk, admin = both("controller", "show")
    assert admin == {"controller_id": zk["controller_id"], "controller_epoch": None, "elected_ms": None}
    zk, admin = both("topics", "list")
    assert zk == admin
    zk, admin = both("groups", "list")
    assert zk == admin
    zk, admin = both("reassign", "generate", "--topics", "same-both", "--brokers", "1,2")
    assert zk["current"] == admin["current"] == {"version": 1, "partitions": [
        {"topic": "same-both", "partition": p, "replicas": r, "log_dirs": ["any", "any"]}
        for p, r in enumerate(([1, 2], [2, 3], [3, 1]))]}
    for proposed in (zk["proposed"], admin["proposed"]):
        assert [sorted(p["replicas"]) for p in proposed["partitions"]] == [[1, 2]] * 3
    zk, admin = both("isr", "same-both")
    # Only ZooKeeper says when each ISR last changed (the state znode's time); the Admin API leaves it null.
    assert all(r["isr_changed_ms"] > 0 for r in zk["partitions"])
    assert {**zk, "partitions": [{**r, "isr_changed_ms": None} for r in zk["partitions"]]} == admin
