"""`kafkactl elect` as a subprocess against a real local cluster (ZooKeeper + 3 brokers).

One cluster for the module. Both elections run through both back ends (-z
and -b: support/backends.py), on topics of each back end's own; the unclean
one brings the broker it kills back and lifts its throttles, so the next case
starts from a whole cluster.
"""

import json

import pytest

from support.backends import BACKENDS, address_args
from support.local_cluster import cluster_up, produce
from support.waiting import wait_for

WAIT_S = 30

# Short sessions: a stopped broker's registration goes away quickly. No
# automatic rebalance: only the election under test moves leaders back.
SETTINGS = ("zookeeper.session.timeout.ms=4000", "auto.leader.rebalance.enable=false")


@pytest.fixture(scope="module")
def up(tmp_path_factory):
    with cluster_up(tmp_path_factory, 3, SETTINGS) as running:
        yield running


def describe(cli, topic):
    return {r["partition"]: r for r in json.loads(cli.ok("topics", "describe", topic, "-o", "json").stdout)}


@pytest.mark.parametrize("backend", BACKENDS)
def test_preferred_election_after_a_broker_restart_puts_leaders_back(up, backend):
    cli, cluster, status = up
    via = address_args(backend, status)
    topic = "pref" if backend == "zookeeper" else "pref-b"
    cli.ok("topics", "create", topic, "--partitions", "6", "--replication-factor", "3")
    wait_for(lambda: all(r["leader"] == r["replicas"][0] for r in describe(cli, topic).values()),
             WAIT_S, "initial leaders")
    cluster.stop_broker(1)
    wait_for(lambda: all(r["leader"] != 1 for r in describe(cli, topic).values()), WAIT_S, "leaders off broker 1")
    cli.ok("cluster", "up", "--dir", str(cluster.root))
    wait_for(lambda: all(1 in r["isr"] for r in describe(cli, topic).values()), WAIT_S, "broker 1 back in the ISRs")
    before = describe(cli, topic)
    moved = sorted(p for p, r in before.items() if r["replicas"][0] == 1)
    assert moved and all(before[p]["leader"] != 1 for p in moved)

    done = cli.ok("elect", "preferred", "--topic", topic, "-o", "json", *via)
    rows = {r["partition"]: r for r in json.loads(done.stdout)}
    assert sorted(p for p, r in rows.items() if r["status"] == "elected") == moved
    for p in moved:
        assert (rows[p]["old_leader"], rows[p]["new_leader"]) == (before[p]["leader"], 1)
        assert rows[p]["leader_epoch"] > before[p]["leader_epoch"]
    assert all(rows[p]["status"] == "not needed" for p in rows if p not in moved)
    after = describe(cli, topic)
    assert all(r["leader"] == r["replicas"][0] for r in after.values())
    # The table names them too, and the trigger znode is gone.
    table = cli.ok("elect", "preferred", "--topic", topic, *via).stdout
    assert "no partition needed an election" in table


def grow_throttled(cli, backend: str, via: list, topic: str, leader: int, follower: int, plan) -> None:
    """Add `follower` to the partition under a 1 byte/s throttle, the keys Kafka's
    tool writes: through -z `reassign execute --throttle` writes them with the
    reassignment (one multi); -b refuses --throttle, so there they are dynamic
    configs set first, and the move starts once both brokers apply the rates."""
    if backend == "zookeeper":
        cli.ok("reassign", "execute", "--plan", str(plan), "--throttle", "1", *via)
        return
    cli.ok("configs", "alter", "--topic", topic, "--add", f"leader.replication.throttled.replicas=0:{leader}",
           "--add", f"follower.replication.throttled.replicas=0:{follower}", *via)
    for broker in (leader, follower):
        cli.ok("configs", "alter", "--broker", str(broker), "--add", "leader.replication.throttled.rate=1",
               "--add", "follower.replication.throttled.rate=1", *via)
    for broker in (leader, follower):
        wait_for(lambda: broker_config(cli, broker, via).get("follower.replication.throttled.rate") == "1",
                 WAIT_S, f"broker {broker} applying the throttle")
    cli.ok("reassign", "execute", "--plan", str(plan), *via)


def broker_config(cli, broker: int, via: list) -> dict:
    rows = json.loads(cli.ok("configs", "describe", "--broker", str(broker), "-o", "json", *via).stdout)
    return {r["key"]: r["value"] for r in rows}


def fetched(cli, plan, via: list) -> bool:
    """The adding replica's broker has some of the log: its first fetch came in."""
    done = cli("reassign", "verify", "--plan", str(plan), "-o", "json", *via)
    [row] = json.loads(done.stdout)["partitions"]
    return any((lag["offset"] or 0) > 0 for lag in row["lag"])


@pytest.mark.parametrize("backend", BACKENDS)
def test_unclean_election_of_an_offline_partition_with_a_live_out_of_sync_replica(up, backend, tmp_path):
    cli, cluster, status = up
    via = address_args(backend, status)
    topic = "lossy" if backend == "zookeeper" else "lossy-b"
    cli.ok("topics", "create", topic, "--partitions", "1", "--replication-factor", "1")
    [leader] = describe(cli, topic)[0]["replicas"]
    follower = next(b for b in (1, 2, 3) if b != leader)
    # 3 MB of data, more than one fetch brings (1 MiB), then add a replica
    # throttled to 1 byte/s: after its first fetch it owes the throttle for
    # days, so it stays out of the ISR, alive.
    produce(status["bootstrap_servers"], topic, [f"{i}:{'x' * 1000}" for i in range(3000)])
    plan = tmp_path / "grow.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": 0, "replicas": [leader, follower]}]}))
    grow_throttled(cli, backend, via, topic, leader, follower, plan)
    wait_for(lambda: fetched(cli, plan, via), WAIT_S, "the adding replica's first fetch")
    assert describe(cli, topic)[0]["isr"] == [leader]

    cluster.kill_broker(leader)
    wait_for(lambda: describe(cli, topic)[0]["leader"] == -1, WAIT_S, "the partition to go offline")

    refused = cli("elect", "unclean", "--topic", topic, *via)      # no terminal, no --yes
    assert refused.returncode == 2 and "--yes" in refused.stderr
    done = cli.ok("elect", "unclean", "--topic", topic, "--yes", "-o", "json", *via)
    [row] = json.loads(done.stdout)
    assert (row["status"], row["old_leader"], row["new_leader"]) == ("elected", -1, follower)
    assert describe(cli, topic)[0]["leader"] == follower
    # The topic's setting is back to what it was (not set).
    settings = {r["key"]: r for r in json.loads(cli.ok("configs", "describe", "--topic", topic, "-o", "json",
                                                       *via).stdout)}
    assert settings["unclean.leader.election.enable"]["source"] == "default"

    # Leave the cluster whole: the broker back, the throttle rates gone (what
    # the follower's broker owes goes with them), the move finished.
    cli.ok("cluster", "up", "--dir", str(cluster.root))
    for broker in (leader, follower):
        cli.ok("configs", "alter", "--broker", str(broker), "--delete", "leader.replication.throttled.rate",
               "--delete", "follower.replication.throttled.rate")
    wait_for(lambda: "no reassignment is running" in cli.ok("reassign", "status").stdout, WAIT_S,
             "the move to finish")
