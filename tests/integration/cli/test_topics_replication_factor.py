"""`kafkactl topics alter --replication-factor` as a subprocess against a real
local cluster (ZooKeeper + 3 real brokers), through both back ends (-z and
-b: support/backends.py), sharing one cluster for the module (each back end
its own topics): up from 1 to 3 with a throttle, then down to 2, the records
readable throughout and the leaders in place; the throttles set with the
move and removed at its end, read back from ZooKeeper, where either back end
leaves them."""

import json

import pytest

from support.backends import BACKENDS
from support.local_cluster import cluster_up, consume, produce, zk_tree
from support.waiting import wait_for

RECORDS = [f"k{i}:message-{i}" for i in range(30)]
RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")


@pytest.fixture(scope="module")
def up(tmp_path_factory):
    with cluster_up(tmp_path_factory, 3) as (cli, _, status):
        yield cli, status


class Through:
    """The module's CLI with the cluster's addresses for one back end appended (-z or -b)."""

    def __init__(self, cli, status, backend):
        self.plain, self.backend = cli, backend
        self.args = ["-z", status["zookeeper"]] if backend == "zookeeper" else ["-b", status["bootstrap_servers"]]

    def __call__(self, *args):
        return self.plain(*args, *self.args)

    def ok(self, *args):
        return self.plain.ok(*args, *self.args)

    def t(self, name):
        """A topic of this back end's own (both share the module's cluster)."""
        return name if self.backend == "zookeeper" else f"{name}-b"


@pytest.fixture(params=BACKENDS)
def way(up, request):
    cli, status = up
    return Through(cli, status, request.param), status


def describe(cli, topic):
    return {r["partition"]: r for r in json.loads(cli.ok("topics", "describe", topic, "-o", "json").stdout)}


def stored_configs(cli, *entity):
    """An entity's overrides as ZooKeeper holds them (the plain CLI: `cluster up` made
    ZooKeeper its current context), whichever back end wrote them."""
    rows = json.loads(cli.plain.ok("configs", "describe", *entity, "-o", "json").stdout)
    return {r["key"]: r["value"] for r in rows if r["source"] != "default"}


def fully_replicated(cli, topic, factor):
    rows = describe(cli, topic)
    done = all(len(r["replicas"]) == factor and sorted(r["isr"]) == sorted(r["replicas"]) for r in rows.values())
    return rows if done else None


def test_replication_factor_up_to_3_then_down_to_2(way, tmp_path):
    cli, status = way
    topic = cli.t("grow")
    bootstrap = status["bootstrap_servers"]
    cli.ok("topics", "create", topic, "--partitions", "3", "--replication-factor", "1")
    produce(bootstrap, topic, RECORDS)
    before = describe(cli, topic)

    done = cli.ok("topics", "alter", topic, "--replication-factor", "3", "--yes", "--wait",
                  "--throttle", "50000000", "--rollback-file", str(tmp_path / "rollback.json"), "-o", "json")
    result = json.loads(done.stdout)
    assert [p["status"] for p in result["partitions"]] == ["complete"] * 3
    assert "reassigning" in done.stderr and str(tmp_path / "rollback.json") in done.stderr
    rollback = json.loads((tmp_path / "rollback.json").read_text())
    assert {p["partition"]: p["replicas"] for p in rollback["partitions"]} == \
        {p: r["replicas"] for p, r in before.items()}
    # Every partition on all three brokers, every replica in the ISR, and no
    # leadership moved: the old replica is still first, and still leads.
    after = wait_for(lambda: fully_replicated(cli, topic, 3), 60, "3 replicas in every ISR")
    for partition, row in after.items():
        assert row["replicas"][0] == before[partition]["replicas"][0]
        assert row["leader"] == before[partition]["leader"]
    # The throttles were set on the topic and every broker (each gets a replica),
    # and removed once --wait saw every partition complete, as `reassign verify` would.
    throttled = [f"topics/{topic}", "brokers/1", "brokers/2", "brokers/3"]
    assert result["throttle_bytes_per_s"] == 50000000
    assert result["throttled_entities"] == throttled and result["throttles_removed"] == throttled
    assert stored_configs(cli, "--topic", topic) == {}
    assert all(stored_configs(cli, "--broker", str(b)) == {} for b in (1, 2, 3))
    assert consume(bootstrap, topic) == sorted(RECORDS)

    done = cli.ok("topics", "alter", topic, "-r", "2", "--yes", "--wait", "-o", "json")
    assert [p["status"] for p in json.loads(done.stdout)["partitions"]] == ["complete"] * 3
    shrunk = wait_for(lambda: fully_replicated(cli, topic, 2), 60, "2 replicas in every ISR")
    for partition, row in shrunk.items():
        assert row["replicas"][0] == before[partition]["replicas"][0]
        assert row["replicas"] == [b for b in after[partition]["replicas"] if b in row["replicas"]]  # order kept
    assert consume(bootstrap, topic) == sorted(RECORDS)
    assert "no reassignment is running" in cli.ok("reassign", "status").stdout


def test_without_wait_the_throttles_stay_until_reassign_verify(way, tmp_path):
    cli, status = way
    topic = cli.t("later")
    cli.ok("topics", "create", topic, "--partitions", "1", "--replication-factor", "1")
    produce(status["bootstrap_servers"], topic, RECORDS)
    [leader] = describe(cli, topic)[0]["replicas"]

    result = json.loads(cli.ok("topics", "alter", topic, "-r", "2", "--yes", "--throttle", "50000000",
                               "--rollback-file", str(tmp_path / "rollback.json"), "-o", "json").stdout)
    [added] = [b for b in result["proposed"]["partitions"][0]["replicas"] if b != leader]
    assert result["throttled_entities"] == [f"topics/{topic}"] + [f"brokers/{b}" for b in sorted((leader, added))]
    assert stored_configs(cli, "--topic", topic) == {"leader.replication.throttled.replicas": f"0:{leader}",
                                                     "follower.replication.throttled.replicas": f"0:{added}"}
    assert stored_configs(cli, "--broker", str(added)) == dict.fromkeys(RATES, "50000000")

    def verified():
        done = cli("reassign", "verify", "--plan", result["plan_file"], "-o", "json")
        return json.loads(done.stdout) if done.returncode == 0 else None

    assert wait_for(verified, 60, "the move complete")["throttles_removed"] == result["throttled_entities"]
    assert stored_configs(cli, "--topic", topic) == {}
    assert all(stored_configs(cli, "--broker", str(b)) == {} for b in (1, 2, 3))
    assert describe(cli, topic)[0]["replicas"] == [leader, added]


def test_refusals_leave_zookeeper_as_it_was(way, tmp_path):
    cli, status = way
    topic = cli.t("kept")
    cli.ok("topics", "create", topic, "--partitions", "2", "--replication-factor", "2")
    before = zk_tree(status["zookeeper"])
    for args, code, message in [
        (["-r", "4", "--yes"], 2, "replication factor: 4 larger than available brokers: 3"),
        (["-r", "3", "-p", "4"], 2, "one change at a time"),
        (["-r", "3", "--out", str(tmp_path / "p.json"), "--throttle", "10"], 2, "with --out nothing is started"),
    ]:
        done = cli("topics", "alter", topic, *args)
        assert done.returncode == code, done.stderr
        assert done.stderr.strip().splitlines()[-1].startswith("kafkactl: error: ")
        assert message in done.stderr
    missing = cli("topics", "alter", cli.t("nope"), "-r", "2", "--yes")
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    dry = json.loads(cli.ok("topics", "alter", topic, "-r", "3", "--dry-run", "-o", "json").stdout)
    assert all(len(p["replicas"]) == 3 for p in dry["proposed"]["partitions"])
    assert zk_tree(status["zookeeper"]) == before
