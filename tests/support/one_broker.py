"""Broker 1 in a unit test: its ReplicaManager over one ssd log dir, the logs
started; the test applies LeaderAndIsr and wires handlers around it."""

from __future__ import annotations

from collections.abc import Callable

from kafkactl.cluster.broker.config import from_properties
from kafkactl.cluster.broker.replica_manager import ReplicaManager
from kafkactl.cluster.log.manager import LogDir, LogManager


def one_broker(log_dir: str, clock_ms: Callable[[], int], properties: dict[str, str] | None = None):
    """(config, replica manager); stop with manager.shutdown(), then
    manager.log_manager.shutdown()."""
    config, _ = from_properties({"broker.id": "1", "zookeeper.connect": "z:1", "log.dirs": log_dir,
                                 **(properties or {})})
    logs = LogManager([LogDir(log_dir, "ssd")], config.default_log_config(), clock_ms)
    logs.startup()
    return config, ReplicaManager(config, logs, clock_ms)
