"""`kafkactl controller`, `brokers`, `isr` and the health filters of `topics describe`,
as subprocesses against a real local cluster (ZooKeeper + 3 brokers).

One cluster serves the module. The read-only tests come first, each through
both back ends (-z and -b: support/backends.py), with what they check read
from ZooKeeper itself. The last test stops broker 3 to make partitions
under-replicated, unavailable and led by a non-preferred replica, then
restarts it throttled so that it stays behind, and reads how far behind it
is; it runs once (its cluster state cannot be made twice) and asks both back
ends at each step.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from confluent_kafka import Producer

from kafkactl.cluster.local import LocalCluster
from kafkactl.cluster.zk import codecs, layout
from kafkactl.cluster.zk.client import session as zk_session
from support.backends import BACKENDS, address_args
from support.waiting import wait_for

KAFKACTL = Path(sys.executable).parent / "kafkactl"
MESSAGES = 3000
WAIT_S = 30


class Live:
    """The module's cluster and a `kafkactl` whose current context is it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.env = {k: v for k, v in os.environ.items() if k not in ("KAFKACTL_ZOOKEEPER", "KAFKACTL_BROKER_MODULE")}
        self.env.update(KAFKACTL_CONFIG=str(root / "home" / "config.json"), XDG_STATE_HOME=str(root / "home" / "state"))
        self.up: dict = {}
        self.backend = "zookeeper"

    @property
    def cluster(self) -> LocalCluster:
        return LocalCluster(self.root / "cluster")

    def via(self) -> list[str]:
        """-z or -b with the cluster's address, as the test's back end wants."""
        return address_args(self.backend, self.up)

    def run(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(KAFKACTL), *args, *self.via()], capture_output=True, text=True, env=self.env,
                              timeout=120, stdin=subprocess.DEVNULL)

    def t(self, name: str) -> str:
        """A topic name of this back end's own (both share the module's cluster)."""
        return name if self.backend == "zookeeper" else f"{name}-b"

    @contextmanager
    def through(self, way: str):
        """Commands go through back end `way` for a while."""
        mine, self.backend = self.backend, way
        try:
            yield self
        finally:
            self.backend = mine

    def both(self, *args: str, code: int = 0) -> dict[str, object]:
        """`-o json` of one command through each back end, by back end."""
        answers = {}
        for way in BACKENDS:
            with self.through(way):
                answers[way] = self.json(*args, code=code)
        return answers

    def ok(self, *args: str) -> str:
        done = self.run(*args)
        assert done.returncode == 0, f"kafkactl {' '.join(args)}: {done.stderr}"
        return done.stdout

    def json(self, *args: str, code: int = 0):
        done = self.run(*args, "-o", "json")
        assert done.returncode == code, f"kafkactl {' '.join(args)}: {done.returncode} {done.stderr}"
        return json.loads(done.stdout)


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    cluster = Live(tmp_path_factory.mktemp("inspect"))
    try:
        # Small follower fetches, so that a throttled follower catches up slowly.
        cluster.up = json.loads(cluster.ok("cluster", "up", "--brokers", "3", "--dir", str(cluster.root / "cluster"),
                                           "--config", "replica.fetch.max.bytes=10000", "-o", "json"))
        yield cluster
    finally:
        cluster.cluster.down(timeout_s=10)


@pytest.fixture(params=BACKENDS)
def backend(live, request):
    live.backend = request.param
    yield request.param
    live.backend = "zookeeper"


def create(live: Live, topic: str, assignment: str) -> None:
    live.ok("topics", "create", topic, "--replica-assignment", assignment)
    preferred = [int(p.split(":")[0]) for p in assignment.split(",")]
    wait_for(lambda: [r["leader"] for r in live.json("topics", "describe", topic)] == preferred
             and all(len(r["isr"]) == len(r["replicas"]) for r in live.json("topics", "describe", topic)),
             30, f"{topic} to be fully in sync")


def produce(live: Live, topic: str, count: int, size: int = 1000) -> None:
    producer = Producer({"bootstrap.servers": live.up["bootstrap_servers"], "acks": "all", "linger.ms": 5,
                         "batch.size": 5000})
    for _ in range(count):
        producer.produce(topic, os.urandom(size))
        producer.poll(0)
    assert producer.flush(30) == 0


def test_controller_show(live, backend):
    with zk_session(live.up["zookeeper"], 10) as client:
        controller_id = codecs.decode_controller(client.get(layout.CONTROLLER)[0])
        epoch = codecs.decode_controller_epoch(client.get(layout.CONTROLLER_EPOCH)[0])
    shown = live.json("controller", "show")
    table = live.ok("controller", "show")
    assert shown["controller_id"] == controller_id and f"broker {controller_id}" in table
    if backend == "zookeeper":
        assert shown["controller_epoch"] == epoch >= 1
        assert abs(shown["elected_ms"] / 1000 - time.time()) < 600
    else:   # Metadata names the controller, not its epoch nor when it was elected
        assert shown["controller_epoch"] is None and shown["elected_ms"] is None
        assert "controller epoch:  unknown" in table and "elected:           unknown" in table


def test_brokers_list_and_describe_with_log_dirs(live, backend):
    create(live, live.t("sized"), "1:2")
    produce(live, live.t("sized"), 200)
    with zk_session(live.up["zookeeper"], 10) as client:
        epochs = {b: client.get(layout.broker(b))[1].czxid for b in (1, 2, 3)}
        controller_id = codecs.decode_controller(client.get(layout.CONTROLLER)[0])
    brokers = live.json("brokers", "list")
    assert [b["id"] for b in brokers] == [1, 2, 3]
    assert [b["id"] for b in brokers if b["controller"]] == [controller_id]
    one = brokers[0]
    address = f"{live.up['brokers'][0]['host']}:{live.up['brokers'][0]['port']}"
    if backend == "zookeeper":
        assert {b["id"]: b["broker_epoch"] for b in brokers} == epochs
        assert one["endpoints"] == [f"PLAINTEXT://{address}"]
    else:   # Metadata names no listener and no broker epoch
        assert [b["broker_epoch"] for b in brokers] == [-1, -1, -1]
        assert one["endpoints"] == [address]
    assert one["leader_count"] >= 1 and one["replica_count"] >= 1
    dirs = {Path(d["path"]).name: d for d in one["log_dirs"]}
    assert {name: d["media"] for name, d in dirs.items()} == {"ssd0": "ssd", "hdd0": "hdd"}
    assert all(d["free_bytes"] > 0 and d["total_bytes"] >= d["free_bytes"] for d in dirs.values())
    assert sum(d["used_bytes"] for d in dirs.values()) > 200 * 1000   # the partition's segment is there
    # Free space moves between two calls (the disk is shared): compare the rest.
    assert without_free(brokers[0]) == without_free(live.json("brokers", "describe", "1"))
    table = live.ok("brokers", "describe", "1")
    assert "ssd" in table and "hdd" in table and str(live.root) in table
    done = live.run("brokers", "describe", "9")
    assert done.returncode == 2 and "broker 9 is not registered" in done.stderr


def stop_broker_3(live: Live) -> None:
    live.cluster.stop_broker(3)
    with zk_session(live.up["zookeeper"], 10) as client:
        wait_for(lambda: not client.exists(layout.broker(3)), 30, "broker 3 to deregister")


def throttle(live: Live, topic: str) -> None:
    """Kafka's replication throttle: 1 byte/s for every replica of `topic`."""
    with zk_session(live.up["zookeeper"], 10) as client:
        client.ensure_path("/config/brokers")
        client.create(layout.entity_config("brokers", "<default>"), codecs.encode_entity_config({
            "leader.replication.throttled.rate": "1", "follower.replication.throttled.rate": "1"}))
        client.create(layout.CONFIG_CHANGE_PREFIX, codecs.encode_config_change("brokers/<default>"), sequence=True)
        client.set(layout.topic_config(topic), codecs.encode_entity_config({
            "leader.replication.throttled.replicas": "*", "follower.replication.throttled.replicas": "*"}))
        client.create(layout.CONFIG_CHANGE_PREFIX, codecs.encode_config_change(f"topics/{topic}"), sequence=True)


def partitions(rows) -> list[tuple[str, int]]:
    return [(r["topic"], r["partition"]) for r in rows]


def without_free(broker: dict) -> dict:
    return {**broker, "log_dirs": [{k: v for k, v in d.items() if k != "free_bytes"} for d in broker["log_dirs"]]}



# Refreshes read before Ctrl-C: 4 intervals of 0.5 s between the first and the
# last, longer than --timeout 1.5, so one deadline could not serve them all
# (with -b every refresh needs a fresh Admin client).
REFRESHES = 5


def watch(live, topic: str, *extra: str, report=lambda line: line.startswith("partitions: 1,")) -> str:
    """`isr TOPIC --watch` until it printed REFRESHES reports (lines `report` picks), then Ctrl-C."""
    # Ctrl-C as from a terminal: a test run started in the background by a
    # non-interactive shell inherits SIGINT ignored, so restore the default.
    watcher = subprocess.Popen([str(KAFKACTL), "isr", topic, "--watch", "--interval", "0.5", "--timeout", "1.5",
                                *extra, *live.via()],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=live.env,
                               stdin=subprocess.DEVNULL, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    lines: list[str] = []

    def read() -> None:
        for line in watcher.stdout:
            lines.append(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        wait_for(lambda: sum(map(report, list(lines))) >= REFRESHES or watcher.poll() is not None, WAIT_S,
                 f"{REFRESHES} refreshes", diagnose=lambda: "".join(lines))
    finally:
        watcher.send_signal(signal.SIGINT)
        err = watcher.communicate(timeout=30)[1]
        reader.join(30)
    assert watcher.returncode == 0, err
    assert "Traceback" not in err and sum(map(report, lines)) >= REFRESHES, err
    return "".join(lines)


def test_isr_watch_refreshes_until_interrupted(live, backend):
    create(live, live.t("watched"), "1:2:3")
    out = watch(live, live.t("watched"))
    assert "\033" not in out, "screen control codes written to a pipe"
    assert len(re.findall(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$", out, re.M)) >= REFRESHES   # each refresh says when
    documents = [json.loads(line) for line in
                 watch(live, live.t("watched"), "-o", "json", report=lambda line: line.startswith("{")).splitlines()]
    assert len(documents) >= REFRESHES and all(d["summary"]["partitions"] == 1 for d in documents)
    changed = [d["partitions"][0]["isr_changed_ms"] for d in documents]
    if backend == "zookeeper":
        assert all(abs(ms / 1000 - time.time()) < 600 for ms in changed)
    else:   # the Admin API does not say when the ISR changed: null, not a guess
        assert changed == [None] * len(documents)


def same_through_both(live: Live, *args: str, code: int = 0):
    """The one answer both back ends give (-o json)."""
    answers = live.both(*args, code=code)
    assert answers["zookeeper"] == answers["admin-api"], f"kafkactl {' '.join(args)}: {answers}"
    return answers["zookeeper"]


def isr_of_lagging(live: Live, way: str) -> dict:
    """`isr lagging` through one back end, with what only ZooKeeper says checked and set aside."""
    with live.through(way):
        report = live.json("isr", "lagging")
    [row] = report["partitions"]
    if way == "zookeeper":
        assert abs(row["isr_changed_ms"] / 1000 - time.time()) < 600
    else:
        assert row["isr_changed_ms"] is None
    return report


def test_a_stopped_follower_shows_in_the_filters_and_its_lag_in_isr(live):
    create(live, "lagging", "1:3")
    create(live, "solo", "3")
    create(live, "led-by-3", "3:1")
    assert live.json("topics", "describe", "lagging", "solo", "led-by-3", "--under-replicated-partitions") == []
    stop_broker_3(live)

    mine = ("lagging", "solo", "led-by-3")
    # The brokers' metadata (-b) follows the controller's znodes (-z) a moment later.
    wait_for(lambda: (lambda a: a["zookeeper"] == a["admin-api"])(live.both("topics", "describe", *mine)),
             WAIT_S, "both back ends to see broker 3 gone")
    under = same_through_both(live, "topics", "describe", *mine, "--under-replicated-partitions", code=1)
    assert partitions(under) == [("lagging", 0), ("led-by-3", 0)]
    assert [r["offline_replicas"] for r in under] == [[3], [3]]
    unavailable = same_through_both(live, "topics", "describe", *mine, "--unavailable-partitions", code=1)
    assert partitions(unavailable) == [("solo", 0)] and unavailable[0]["leader"] == -1
    moved = same_through_both(live, "topics", "describe", *mine, "--non-preferred-leader", code=1)
    assert ("led-by-3", 0) in partitions(moved) and moved[partitions(moved).index(("led-by-3", 0))]["leader"] == 1
    assert partitions(same_through_both(live, "topics", "describe", *mine, "--under-min-isr-partitions",
                                        code=1)) == [("solo", 0)]

    # While broker 3 is down, isr says so per replica, through either back end.
    for way in BACKENDS:
        report = isr_of_lagging(live, way)
        [row] = report["partitions"]
        assert row["isr"] == [1] and row["out_of_isr"][0]["problem"] == "broker 3 is not registered (down?)", way
        assert report["summary"] == {"partitions": 1, "under_replicated": 1, "under_min_isr": 0, "offline": 0}

    produce(live, "lagging", MESSAGES)
    throttle(live, "lagging")
    live.cluster.up()

    for way in BACKENDS:     # throttled, broker 3 stays behind: its lag through each back end
        def lag_of_3():
            [lag] = isr_of_lagging(live, way)["partitions"][0]["out_of_isr"]
            return lag if lag["problem"] is None else None

        lag = wait_for(lag_of_3, WAIT_S, f"broker 3 to answer (through {way})")
        assert lag["broker_id"] == 3 and 0 < lag["lag"] <= MESSAGES
        assert lag["log_end_offset"] + lag["lag"] == MESSAGES
        with live.through(way):
            table = live.ok("isr", "lagging")
        assert "3: " in table and " behind" in table
        # Only ZooKeeper says since when; through the Admin API it is left out, not made up.
        assert ("behind (since" in table) == (way == "zookeeper"), table
        assert table.strip().splitlines()[-1] == "partitions: 1, under-replicated: 1, under min ISR: 0, offline: 0"
