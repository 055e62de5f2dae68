"""Seed 000, discussion 3: a leader paused past its ZooKeeper session wakes up
still believing it leads. It must not commit anything: whatever it accepts
after it was replaced is never acknowledged, and it truncates and rejoins.

Three brokers, RF 3, min.insync.replicas=2, ZooKeeper session 4 s, the
leader paused (SIGSTOP) for 8 s while an idempotent acks=-1 producer writes
to it.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer

from support.acked_check import assert_check, read_partition
from support.load_producer import LoadProducer
from support.waiting import wait_for

PARTITIONS = 3
PAUSE_S = 8.0
STALE_WRITES = 5


class StaleWriter:
    """acks=-1 writes sent to the paused leader, no retries, a request timeout
    longer than the pause: the requests wait in its socket and are handled
    when it wakes up, after it was replaced."""

    def __init__(self, bootstrap: str, topic: str, partition: int) -> None:
        self.topic, self.partition = topic, partition
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "retries": 0,
                                  "linger.ms": 0, "request.timeout.ms": 20000,
                                  "message.timeout.ms": 25000, "max.in.flight": 1000,
                                  "topic.metadata.refresh.interval.ms": 600000})
        self.outcomes: list[tuple[bytes, str, int]] = []   # (value, error name or NONE, offset)
        self.write(b"probe-warm-up")                          # connect and learn the leader now
        self.producer.flush(10)

    def write(self, value: bytes) -> None:
        def report(error, message) -> None:
            self.outcomes.append((value, error.name() if error else "NONE", message.offset()))
        self.producer.produce(self.topic, value=value, partition=self.partition, on_delivery=report)
        self.producer.poll(0)

    def finish(self) -> list[tuple[bytes, str, int]]:
        self.producer.flush(30)
        return self.outcomes


@pytest.mark.slow
@pytest.mark.parametrize("also_controller", [False, True], ids=["leader", "leader-and-controller"])
def test_leader_paused_past_its_session_does_not_commit(faults, also_controller):
    cluster = faults(brokers=3)
    topic = cluster.create_topic("split-brain", PARTITIONS)
    producer = LoadProducer(cluster.bootstrap, topic, PARTITIONS, rate=300).start()
    diagnose = lambda: cluster.describe(topic)   # noqa: E731
    try:
        producer.wait_progress(150, diagnose=diagnose)
        controller = cluster.controller()
        # A partition led by a broker that is not the controller (the controller
        # stays awake to replace it), or by the controller itself (a new
        # controller replaces it, and the paused one wakes up as a stale controller).
        partition = next(p for p in range(PARTITIONS)
                         if (cluster.leader(topic, p) == controller) == also_controller)
        paused = cluster.leader(topic, partition)
        epoch_before = cluster.state(topic, partition).leader_epoch
        stale = StaleWriter(cluster.bootstrap, topic, partition)
        cluster.pause(paused)
        paused_at = time.monotonic()
        for i in range(STALE_WRITES):
            stale.write(b"probe-stale-%d" % i)
        new_leader = cluster.wait_new_leader(topic, partition, paused, timeout_s=PAUSE_S)
        replaced_after = time.monotonic() - paused_at
        state = cluster.state(topic, partition)
        assert paused not in state.isr, f"the paused broker is still in the ISR: {state}"
        producer.wait_progress(30, partition=partition, timeout_s=PAUSE_S, diagnose=diagnose)
        time.sleep(max(0.0, PAUSE_S - (time.monotonic() - paused_at)))
        if also_controller:
            assert cluster.controller() not in (None, paused), diagnose()
        cluster.resume(paused)
        resumed_at_acks = producer.ack_count(partition)
        # It learns it was replaced, truncates its divergent tail, follows and rejoins.
        wait_for(lambda: paused in cluster.registered(), 15, f"broker {paused} to register again",
                 diagnose=diagnose)
        cluster.wait_full_isr(topic, timeout_s=20)
        producer.wait_progress(100, partition=partition, diagnose=diagnose)
        print(f"paused broker {paused} (leader of {topic}-{partition} at epoch {epoch_before}) "
              f"for {PAUSE_S:g} s; replaced by {new_leader} after {replaced_after:.1f} s; "
              f"acks on the partition at resume {resumed_at_acks}")
    finally:
        producer.stop()
    outcomes = stale.finish()
    print(f"writes sent to the paused leader: {[(v, e, o) for v, e, o in outcomes[1:]]}")
    print("truncations on the paused broker:", [line.split(" INFO ")[-1] for line in
          cluster.log_file(paused).read_text().splitlines() if f"{topic}-{partition}: truncated" in line])
    _high, records = read_partition(cluster.bootstrap, topic, partition)
    in_log = dict(records)
    for value, error, offset in outcomes:
        if error == "NONE":
            assert in_log.get(offset) == value, (
                f"{value!r} acknowledged at offset {offset} but the log has {in_log.get(offset)!r}")
    assert cluster.state(topic, partition).leader_epoch > epoch_before
    assert_check(cluster.bootstrap, producer)
    cluster.wait_replicas_agree(topic)
