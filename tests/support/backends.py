"""The CLI's back-end matrix: integration tests run through both ways to the
reference cluster, ZooKeeper (-z) and the Admin API (-b)."""

from __future__ import annotations


BACKENDS = ("zookeeper", "admin-api")


def address_args(backend: str, up: dict) -> list[str]:
    """`kafkactl cluster up -o json`'s addresses as -z or -b arguments (none before it is up)."""
    if not up:
        return []
    return ["-z", up["zookeeper"]] if backend == "zookeeper" else ["-b", up["bootstrap_servers"]]


def require_served(backend: str, up: dict, api_key: int, name: str) -> None:
    """An Admin API case needs the reference broker to advertise `name`
    (it advertises what it serves): fails, never skips, when it does not."""
    if backend != "admin-api":
        return
    from kafkactl.cluster.admin.broker_queries import BrokerAddress, _Session

    host, _, port = up["bootstrap_servers"].split(",")[0].rpartition(":")
    session = _Session(BrokerAddress(-1, host, int(port)), 5.0)
    try:
        served = api_key in session.versions
    finally:
        session.close()
    assert served, f"the reference broker does not advertise {name} (API {api_key})"


def assert_admin_api_refusal(done, *fragments) -> None:
    """What only ZooKeeper can do says so with -b: one line, exit 2."""
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("kafkactl: error: ") and "not possible through the Admin API" in line, line
    assert all(f in line for f in fragments), line


class Through:
    """A module's CLI (support.local_cluster.Cli) with the cluster's addresses
    for one back end appended (-z or -b); `status` is `cluster up -o json`."""

    def __init__(self, cli, status: dict, backend: str) -> None:
        self.cli, self.backend = cli, backend
        self.bootstrap = status["bootstrap_servers"]
        self.args = address_args(backend, status)

    def __call__(self, *args, **kwargs):
        return self.cli(*args, *self.args, **kwargs)

    def ok(self, *args, **kwargs):
        return self.cli.ok(*args, *self.args, **kwargs)

    def t(self, name: str) -> str:
        """A topic of this back end's own (both share the module's cluster)."""
        return name if self.backend == "zookeeper" else f"{name}-b"
