"""SIGTERM stops every broker cleanly (controlled shutdown, logs closed), also
a broker that has been serving replication and client traffic for a while.

The whole-cluster restart test recovers even from a broker that ignores
SIGTERM (LocalCluster kills it after its stop timeout); this test asks for
the clean stop itself, a few rounds in a row.
"""

from __future__ import annotations

import time

import pytest

from support.acked_check import assert_check
from support.load_producer import LoadProducer

PARTITIONS = 3
ROUNDS = 3
STOP_TIMEOUT_S = 10.0


@pytest.mark.slow
def test_sigterm_stops_every_broker_cleanly(faults):
    cluster = faults(brokers=3)
    topic = cluster.create_topic("clean-stop", PARTITIONS)
    producer = LoadProducer(cluster.bootstrap, topic, PARTITIONS, rate=300,
                            config={"message.timeout.ms": 60000}).start()
    finished = False
    try:
        for round_ in range(ROUNDS):
            # After a restart of every broker librdkafka may sit in its retry
            # and reconnect backoffs for a while (once in CI it made no
            # progress for 20 s, the cluster healthy); what matters is that
            # it resumes within its message timeout and loses nothing.
            producer.wait_progress(300, timeout_s=20 if round_ == 0 else 50)
            offsets = {b: cluster.log_file(b).stat().st_size for b in cluster.broker_ids}
            pids = {b: cluster.pid(b) for b in cluster.broker_ids}
            cluster.zk.stop()
            started = time.monotonic()
            cluster.cluster.down(timeout_s=STOP_TIMEOUT_S)   # SIGTERM all, SIGKILL at the deadline
            took = time.monotonic() - started
            unclean = {}
            for broker_id, offset in offsets.items():
                with open(cluster.log_file(broker_id), "rb") as log:
                    log.seek(offset)
                    text = log.read().decode(errors="replace")
                if f"broker {broker_id} stopped cleanly" not in text:
                    unclean[broker_id] = (pids[broker_id], "shutting down" in text, text.splitlines()[-3:])
            assert not unclean, (
                f"round {round_ + 1}: down() took {took:.1f} s; brokers that did not stop cleanly on "
                f"SIGTERM (pid, logged 'shutting down', last log lines): {unclean}")
            cluster.up()
            cluster.wait_full_isr(topic)
        finished = True
    finally:
        producer.stop(flush_timeout_s=40 if finished else 1)
    assert not producer.failures, producer.summary()
    assert_check(cluster.bootstrap, producer)
