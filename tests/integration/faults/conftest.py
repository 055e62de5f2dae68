"""Fault-injection tests: makes `faults_support` (next to this file) importable,
and gives each test a `faults` fixture (a FaultCluster factory).

When a test fails, the teardown prints where its cluster lives and what the
controller sent, so the failure can be read without re-running it.
"""

import sys
from pathlib import Path

import pytest

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import faults_support  # noqa: E402  (needs the path above)


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
    started: list[faults_support.FaultCluster] = []

    def start(brokers: int = 3, overrides: dict[str, str] | None = None) -> faults_support.FaultCluster:
        settings = dict(faults_support.BASE_OVERRIDES)
        settings.update(overrides or {})
        cluster, status = start_cluster(brokers=brokers, overrides=settings)
        fault_cluster = faults_support.FaultCluster(cluster, status)
        started.append(fault_cluster)
        return fault_cluster

    yield start
    failed = getattr(request.node, "report_call", None)
    for fault_cluster in started:
        if failed is not None and failed.failed:
            print(fault_cluster.diagnostics())
        fault_cluster.close()
    if failed is not None and failed.failed:
        for producer in faults_support.PRODUCERS:
            print(f"producer {producer.topic}: {producer.summary()}; librdkafka log (last 80):")
            print("\n".join(producer.log_ring.tail()))
    faults_support.PRODUCERS.clear()
