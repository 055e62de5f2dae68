"""The CLI's back-end matrix: integration tests run through both ways to the
reference cluster, ZooKeeper (-z) and the Admin API (-b)."""

from __future__ import annotations

import pytest

BACKENDS = ("zookeeper", "admin-api")


def address_args(backend: str, up: dict) -> list[str]:
    """`kafkactl cluster up -o json`'s addresses as -z or -b arguments (none before it is up)."""
    if not up:
        return []
    return ["-z", up["zookeeper"]] if backend == "zookeeper" else ["-b", up["bootstrap_servers"]]


def skip_unless_served(backend: str, up: dict, api_key: int, name: str) -> None:
    """Skip an Admin API case whose broker side the reference broker does not
    serve yet (it advertises what it serves); it runs as soon as it does."""
    if backend != "admin-api":
        return
    from kafkactl.cluster.admin.broker_queries import BrokerAddress, _Session

    host, _, port = up["bootstrap_servers"].split(",")[0].rpartition(":")
    session = _Session(BrokerAddress(-1, host, int(port)), 5.0)
    try:
        served = api_key in session.versions
    finally:
        session.close()
    if not served:
        pytest.skip(f"the reference broker does not serve {name} yet")


def assert_admin_api_refusal(done, *fragments) -> None:
    """What only ZooKeeper can do says so with -b: one line, exit 2."""
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("kafkactl: error: ") and "not possible through the Admin API" in line, line
    assert all(f in line for f in fragments), line
