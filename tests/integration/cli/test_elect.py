"""`kafkactl elect` as a subprocess against a real local cluster (ZooKeeper + 3 brokers).

One cluster for the module; the unclean test runs last, as it leaves a broker
down. The preferred election runs through both back ends (-z and -b:
support/backends.py), with the set-up and the checks through ZooKeeper and
topics of each back end's own.
"""

import json
import time

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


def test_unclean_election_of_an_offline_partition_with_a_live_out_of_sync_replica(up, tmp_path):
    cli, cluster, status = up
    cli.ok("topics", "create", "lossy", "--partitions", "1", "--replication-factor", "1")
    [leader] = describe(cli, "lossy")[0]["replicas"]
    follower = next(b for b in (1, 2, 3) if b != leader)
    # 3 MB of data, then add a replica throttled to 1 byte/s: after its first
    # fetch it stays out of the ISR, alive.
    produce(status["bootstrap_servers"], "lossy", [f"{i}:{'x' * 1000}" for i in range(3000)])
    plan = tmp_path / "grow.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "lossy", "partition": 0, "replicas": [leader, follower]}]}))
    cli.ok("reassign", "execute", "--plan", str(plan), "--throttle", "1")
    wait_for(lambda: describe(cli, "lossy")[0]["replicas"] == [leader, follower], WAIT_S, "the adding replica")
    time.sleep(2)
    assert describe(cli, "lossy")[0]["isr"] == [leader]

    cluster.kill_broker(leader)
    wait_for(lambda: describe(cli, "lossy")[0]["leader"] == -1, WAIT_S, "the partition to go offline")

    refused = cli("elect", "unclean", "--topic", "lossy")      # no terminal, no --yes
    assert refused.returncode == 2 and "--yes" in refused.stderr
    done = cli.ok("elect", "unclean", "--topic", "lossy", "--yes", "-o", "json")
    [row] = json.loads(done.stdout)
    assert (row["status"], row["old_leader"], row["new_leader"]) == ("elected", -1, follower)
    assert describe(cli, "lossy")[0]["leader"] == follower
    # The topic's setting is back to what it was (not set).
    settings = {r["key"]: r for r in json.loads(cli.ok("configs", "describe", "--topic", "lossy", "-o", "json").stdout)}
    assert settings["unclean.leader.election.enable"]["source"] == "default"
