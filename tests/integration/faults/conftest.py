"""Fault-injection tests: each test gets a `faults` fixture (a FaultCluster
factory; the helpers live in tests/support: fault_cluster, load_producer,
acked_check, zk_state, log_dirs, offline_observer).

When a test fails, the teardown prints where its cluster lives and what the
controller sent, so the failure can be read without re-running it.
"""

import pytest

from support import load_producer
from support.fault_cluster import BASE_OVERRIDES, FaultCluster


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"report_{report.when}", report)


@pytest.fixture
def faults(start_cluster, request):
    """`faults(brokers=3, overrides={...})` -> a started FaultCluster; its
    ZooKeeper client is closed and every process stopped at teardown (the
    processes by `start_cluster`, which runs its teardown after this one)."""
    started: list[FaultCluster] = []

    def start(brokers: int = 3, overrides: dict[str, str] | None = None) -> FaultCluster:
        settings = dict(BASE_OVERRIDES)
        settings.update(overrides or {})
        cluster, status = start_cluster(brokers=brokers, overrides=settings)
        fault_cluster = FaultCluster(cluster, status)
        started.append(fault_cluster)
        return fault_cluster

    yield start
    failed = getattr(request.node, "report_call", None)
    for fault_cluster in started:
        if failed is not None and failed.failed:
            print(fault_cluster.diagnostics())
        fault_cluster.close()
    if failed is not None and failed.failed:
        for producer in load_producer.PRODUCERS:
            print(f"producer {producer.topic}: {producer.summary()}; librdkafka log (last 80):")
            print("\n".join(producer.log_ring.tail()))
    load_producer.PRODUCERS.clear()
