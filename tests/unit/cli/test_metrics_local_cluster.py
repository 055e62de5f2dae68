"""A local cluster's brokers each get a metrics port: chosen free at creation,
kept in cluster.json, written as metrics.port, shown by status; a cluster.json
from before metrics gets ports on its next `up`."""

from __future__ import annotations

import json

import pytest

from kafkactl.cluster.local import LocalCluster, LocalClusterUsageError, StartupError, ZooKeeperCommand, state
from kafkactl.cluster.local.brokers import parse_overrides, server_properties
from kafkactl.cluster.local.state import Layout

NO_JAVA = ZooKeeperCommand(java="/nonexistent/java")


def props(path):
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if line and not line.startswith("#"))


def up_without_zookeeper(root, **kwargs):
    """`up` as far as ZooKeeper's start: cluster.json and the broker configs get written."""
    with pytest.raises(StartupError):
        LocalCluster(root, zookeeper_command=NO_JAVA).up(**kwargs)


def test_a_new_cluster_gives_every_broker_its_own_free_metrics_port(tmp_path):
    up_without_zookeeper(tmp_path, brokers=3)
    spec = state.load(Layout(tmp_path))
    metrics_ports = [b.metrics_port for b in spec.brokers]
    all_ports = metrics_ports + [b.port for b in spec.brokers] + [spec.zookeeper.port]
    assert all(isinstance(p, int) and p > 0 for p in metrics_ports)
    assert len(set(all_ports)) == len(all_ports)
    for broker in spec.brokers:
        assert props(tmp_path / f"broker-{broker.id}" / "server.properties")["metrics.port"] == str(broker.metrics_port)


def test_status_shows_the_metrics_port_and_url(tmp_path):
    up_without_zookeeper(tmp_path, brokers=2)
    spec = state.load(Layout(tmp_path))
    brokers = LocalCluster(tmp_path).status(check_registration=False).to_dict()["brokers"]
    assert [(b["metrics_port"], b["metrics_url"]) for b in brokers] == [
        (b.metrics_port, f"http://127.0.0.1:{b.metrics_port}/metrics") for b in spec.brokers]


def test_a_cluster_from_before_metrics_gets_ports_on_its_next_up(tmp_path):
    old = state.new_spec(Layout(tmp_path), "127.0.0.1", 2, [2181, 2182, 2183], {})
    state.save(Layout(tmp_path), old)
    data = json.loads((tmp_path / "cluster.json").read_text())
    for broker in data["brokers"]:
        del broker["metrics_port"]    # as an older kafkactl wrote it
    (tmp_path / "cluster.json").write_text(json.dumps(data))
    assert [b.metrics_port for b in state.load(Layout(tmp_path)).brokers] == [None, None]
    assert "metrics.port" not in server_properties(old.brokers[0], "127.0.0.1", 2181, {})

    up_without_zookeeper(tmp_path)

    spec = state.load(Layout(tmp_path))
    assert all(b.metrics_port for b in spec.brokers)
    assert [b.port for b in spec.brokers] == [2182, 2183]   # nothing else changed
    assert props(tmp_path / "broker-1" / "server.properties")["metrics.port"] == str(spec.brokers[0].metrics_port)


def test_metrics_port_is_managed_by_the_local_cluster():
    with pytest.raises(LocalClusterUsageError, match="metrics.port"):
        parse_overrides(["metrics.port=9999"])
