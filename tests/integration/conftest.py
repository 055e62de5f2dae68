"""Shared fixtures for integration tests: real ZooKeeper and broker processes.

`start_cluster(brokers=1, overrides={...})` starts a LocalCluster under the
test's tmp dir and returns it with its status; every cluster a test started
is stopped at teardown, even when the test failed.
"""

from __future__ import annotations

import shutil

import pytest

from kafkactl.cluster.local import LocalCluster


def require_tools(*names: str) -> None:
    missing = [n for n in names if shutil.which(n) is None]
    if missing:
        pytest.fail(f"missing tools {missing}: run `make setup`")


@pytest.fixture
def start_cluster(tmp_path):
    started: list[LocalCluster] = []

    def start(brokers: int = 1, overrides: dict[str, str] | None = None, name: str = "cluster"):
        cluster = LocalCluster(tmp_path / name)
        started.append(cluster)
        status = cluster.up(brokers=brokers, overrides=overrides)
        return cluster, status

    yield start
    for cluster in started:
        try:
            cluster.down()
        except Exception as error:  # keep tearing down the others
            print(f"teardown of {cluster.root} failed: {error}")


@pytest.fixture(scope="session")
def shared_cluster(tmp_path_factory):
    """One single-broker cluster for the whole session, for tests that only add
    topics of their own (1 MiB segments) and never stop or reconfigure it.
    Returns (cluster, status)."""
    cluster = LocalCluster(tmp_path_factory.mktemp("shared") / "cluster")
    try:
        status = cluster.up(brokers=1, overrides={"log.segment.bytes": "1048576"})
        yield cluster, status
    finally:
        try:
            cluster.down()
        except Exception as error:
            print(f"teardown of {cluster.root} failed: {error}")


@pytest.fixture(scope="session")
def zookeeper_server(tmp_path_factory):
    """A real standalone ZooKeeper for the session: its `host:port`."""
    import os
    import signal

    from kafkactl.cluster.local import ZooKeeperCommand, procs
    from kafkactl.cluster.local.ports import free_loopback_ports
    from kafkactl.cluster.local.zookeeper import wait_ready, zoo_cfg

    root = tmp_path_factory.mktemp("zookeeper")
    port = free_loopback_ports(1)[0]
    config = root / "zoo.cfg"
    config.write_text(zoo_cfg(root / "data", port))
    log_file = root / "zookeeper.log"
    launched = procs.spawn(ZooKeeperCommand().argv(config, root), log_file, root)
    try:
        wait_ready("127.0.0.1", port, 30, lambda: procs.exit_code(launched.pid) is None,
                   log_file, launched.log_offset)
        yield f"127.0.0.1:{port}"
    finally:
        os.kill(launched.pid, signal.SIGKILL)
        procs.exit_code(launched.pid)


@pytest.fixture
def zk_chroot(zookeeper_server, request):
    """A connect string with a fresh chroot for one test, on the shared server."""
    import re

    name = re.sub(r"[^A-Za-z0-9_]", "_", request.node.name)[:80]
    return f"{zookeeper_server}/{name}"
