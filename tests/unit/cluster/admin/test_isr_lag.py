"""`isr_report` on a ClusterBackend: what either back end says, and the ISR's
change time only where ZooKeeper gives it (the Admin API does not say it).

The back end here is a stand-in holding its answers; its brokers listen on a
port nothing listens on, so their ListOffsets fail at once and the lag of
each out-of-ISR replica is reported as unknown, with the reason."""

from __future__ import annotations

from kafkactl.cli.isr import _table
from kafkactl.cluster.admin.backend import ADMIN_API, ZOOKEEPER
from kafkactl.cluster.admin.isr_lag import isr_report, summary
from kafkactl.cluster.admin.topics import PartitionInfo
from kafkactl.cluster.zk.codecs import BrokerRegistration

DEAD_PORT = 1
CHANGED_MS = 1_700_000_000_000


class StandIn:
    """Topic t: partition 0 fully in sync, partition 1 with replica 3 (not live) and 1 out of the ISR."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.asked_min_isr: list[list[str]] = []

    def topic_names(self) -> list[str]:
        return ["t"]

    def describe_topics(self, names: list[str]) -> dict[str, list | None]:
        partitions = [PartitionInfo("t", 0, [1, 2], 1, 4, [1, 2], CHANGED_MS),
                      PartitionInfo("t", 1, [2, 1, 3], 2, 6, [2], CHANGED_MS)]
        return {n: partitions if n == "t" else None for n in names}

    def brokers(self) -> list:
        return [BrokerRegistration(b, "127.0.0.1", DEAD_PORT, (f"127.0.0.1:{DEAD_PORT}",), None) for b in (1, 2)]

    def min_insync_replicas(self, names: list[str]) -> dict[str, int]:
        self.asked_min_isr.append(names)
        return {n: 2 for n in names}


def test_through_zookeeper_the_isr_change_time_is_reported():
    rows, missing = isr_report(StandIn(ZOOKEEPER), None, 2.0)
    assert missing == [] and [r["isr_changed_ms"] for r in rows] == [CHANGED_MS, CHANGED_MS]
    assert "(since " in _table(rows, summary(rows))


def test_through_the_admin_api_the_change_time_is_null_and_not_shown():
    backend = StandIn(ADMIN_API)
    rows, missing = isr_report(backend, ["t", "gone"], 2.0)
    assert missing == ["gone"] and backend.asked_min_isr == [["t"]]
    assert [r["isr_changed_ms"] for r in rows] == [None, None]
    assert summary(rows) == {"partitions": 2, "under_replicated": 1, "under_min_isr": 1, "offline": 0}
    lagging = rows[1]["out_of_isr"]
    assert [lag["broker_id"] for lag in lagging] == [1, 3] and all(lag["lag"] is None for lag in lagging)
    assert "broker 1 did not answer" in lagging[0]["problem"]
    assert lagging[1]["problem"] == "broker 3 is not registered (down?)"
    table = _table(rows, summary(rows))
    assert "since" not in table and "3: lag unknown, broker 3 is not registered (down?)" in table
