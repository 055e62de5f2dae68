"""Periodic passes over many logs (housekeeping.py), through the LogManager."""

import os

from kafkactl.cluster.log import log as log_module
from kafkactl.cluster.log.config import LogConfig


def test_periodic_work_visits_only_the_logs_that_asked_for_it(make_manager, dirs, make_batch, clock,
                                                             monkeypatch, append):
    batch_size = len(make_batch(2))
    manager = make_manager([dirs[0]], LogConfig(segment_bytes=batch_size * 2, retention_ms=1_000,
                                                file_delete_delay_ms=1_000))
    manager.startup()
    logs = [manager.get_or_create_log("t", p) for p in range(50)]
    manager.flush_due()                                # new logs: nothing rolled yet
    visited = []
    original = log_module.Log.flush_rolled_segments
    monkeypatch.setattr(log_module.Log, "flush_rolled_segments",
                        lambda self: (visited.append(self.partition), original(self))[1])
    manager.flush_due()
    assert visited == []                               # nobody asked
    append(logs[7], make_batch, batches=5, timestamp_ms=clock.now_ms)
    manager.flush_due()
    assert visited == [7] and logs[7].recovery_point == 8   # the rolled segments, fsynced
    clock.advance(1_002)
    assert manager.run_retention() == 2
    assert manager.purge_deleted() == 0                # not due yet, and still remembered
    clock.advance(1_000)
    assert manager.purge_deleted() == 2
    assert sorted(n for n in os.listdir(logs[7].dir_path) if n.endswith(".log")) == ["00000000000000000008.log"]
