"""The fault tests' checker: reads every partition from the beginning to its
high watermark and asserts that each value the LoadProducer saw acknowledged
is at its acknowledged offset, once, that no value is in the log twice, and
that the log keeps produce order.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

from support.load_producer import LoadProducer
from support.names import unique_topic

if TYPE_CHECKING:   # only for annotations: the checker needs no cluster of its own
    from support.fault_cluster import FaultCluster


@dataclass
class CheckReport:
    acknowledged: int
    failed: int
    in_log: int                                 # our values found in the log
    unacknowledged_in_log: int                  # failed (e.g. timed out) but written
    acknowledged_without_offset: int = 0        # success reported with no offset (see check)
    high_watermarks: dict[int, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return (f"acknowledged {self.acknowledged}, failed {self.failed}, in the log {self.in_log} "
                f"({self.unacknowledged_in_log} of them not acknowledged), "
                f"{self.acknowledged_without_offset} acknowledged without an offset, "
                f"high watermarks {self.high_watermarks}")


def read_partition(bootstrap: str, topic: str, partition: int, timeout_s: float = 30.0
                   ) -> tuple[int, list[tuple[int, bytes]]]:
    """(high watermark, [(offset, value)]) of a partition, read from the beginning."""
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": unique_topic("checker"),
        "enable.auto.commit": False,
        "fetch.wait.max.ms": 100,
        "topic.metadata.refresh.interval.ms": 1000,
    })
    try:
        _low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
        consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
        records: list[tuple[int, bytes]] = []
        next_offset = 0
        deadline = time.monotonic() + timeout_s
        while next_offset < high:
            if time.monotonic() > deadline:
                raise AssertionError(f"{topic}-{partition}: read up to offset {next_offset} of "
                                     f"{high} in {timeout_s:g} s")
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error() is not None:
                if message.error().code() == KafkaError._PARTITION_EOF:
                    continue
                raise AssertionError(f"{topic}-{partition}: consumer error {message.error()}")
            records.append((message.offset(), message.value()))
            next_offset = message.offset() + 1
        return high, records
    finally:
        consumer.close()


def check(bootstrap: str, producer: LoadProducer, probe_prefix: bytes = b"probe-",
          resent: Collection[int] = frozenset()) -> CheckReport:
    """Consume everything and compare it with the producer's delivery reports.

    Asserts: every acknowledged message is at its acknowledged offset, below
    the high watermark; no message is in the log twice; the log of each
    partition keeps the producer's order; every value in the log was produced
    by this producer (values starting with `probe_prefix` are tolerated).

    `resent`: messages the producer may legitimately have written twice and
    out of order, so neither is a problem for them (see
    test_kill_9_two_brokers_stops_writes_until_one_returns): they were
    possibly persisted (NOT_ENOUGH_REPLICAS_AFTER_APPEND), and after other
    messages timed out librdkafka bumped its producer epoch and sent them
    again under new sequence numbers, which no broker can deduplicate
    (KIP-360). They must still be where they were acknowledged.
    """
    assert producer.unfinished == 0, f"{producer.unfinished} messages without a delivery report"
    with producer.lock:
        acks = list(producer.acks)
        failures = list(producer.failures)
        produced = len(producer.sent_at)
    report = CheckReport(acknowledged=len(acks), failed=len(failures), in_log=0, unacknowledged_in_log=0)
    problems = report.problems
    acked_seqs = {a.seq for a in acks}
    if len(acked_seqs) != len(acks):
        problems.append("a message was acknowledged twice: "
                        f"{[s for s, n in Counter(a.seq for a in acks).items() if n > 1][:10]}")

    seen: dict[int, tuple[int, int]] = {}      # seq -> (partition, offset)
    for partition in range(producer.partitions):
        high, records = read_partition(bootstrap, producer.topic, partition)
        report.high_watermarks[partition] = high
        offsets = [o for o, _ in records]
        if len(set(offsets)) != len(offsets):
            problems.append(f"partition {partition}: the consumer saw an offset twice")
        by_offset = dict(records)
        last_seq = -1
        for offset, value in records:
            if value is not None and value.startswith(probe_prefix):
                continue
            try:
                seq = int(value)
            except (TypeError, ValueError):
                problems.append(f"partition {partition} offset {offset}: foreign value {value!r}")
                continue
            if seq in seen and seq not in resent:
                problems.append(f"duplicate: seq {seq} at {seen[seq]} and ({partition}, {offset})")
            seen[seq] = (partition, offset)
            if seq % producer.partitions != partition or seq >= produced:
                problems.append(f"seq {seq} in partition {partition}: never produced there")
            if seq in resent:
                continue
            if seq <= last_seq:
                problems.append(f"partition {partition}: seq {seq} at offset {offset} after seq {last_seq}")
            last_seq = max(last_seq, seq)
        report.in_log += sum(1 for s, (p, _) in seen.items() if p == partition)

        # librdkafka may report success without an offset (offset None): an
        # idempotent retry it judged persisted, e.g. after a leader change. Such
        # a message must be in the partition; where, the client never said.
        partition_acks = sorted((a for a in acks if a.partition == partition and a.offset is not None),
                                key=lambda a: a.seq)
        unplaced = [a for a in acks if a.partition == partition and a.offset is None]
        report.acknowledged_without_offset += len(unplaced)
        missing = [a.seq for a in unplaced if seen.get(a.seq, (None,))[0] != partition]
        if missing:
            problems.append(f"partition {partition}: {len(missing)} messages acknowledged without an offset "
                            f"are not in the log, e.g. seqs {missing[:5]}")
        in_order = [a for a in partition_acks if a.seq not in resent]
        for earlier, later in zip(in_order, in_order[1:]):
            if later.offset <= earlier.offset:
                problems.append(f"partition {partition}: seq {later.seq} acknowledged at offset "
                                f"{later.offset}, not after seq {earlier.seq} at {earlier.offset}")
                break
        lost = [a for a in partition_acks if by_offset.get(a.offset) != str(a.seq).encode()]
        if lost:
            sample = ", ".join(f"seq {a.seq}@{a.offset} (log has {by_offset.get(a.offset)!r}"
                               f"{'' if a.offset < high else ', beyond the HW ' + str(high)})"
                               for a in lost[:5])
            problems.append(f"partition {partition}: {len(lost)} acknowledged messages lost or "
                            f"moved, e.g. {sample}")
    report.unacknowledged_in_log = sum(1 for s in seen if s not in acked_seqs)
    return report


def assert_check(bootstrap: str, producer: LoadProducer, resent: Collection[int] = frozenset()) -> CheckReport:
    report = check(bootstrap, producer, resent=resent)
    print(f"checker: {report}; producer: {producer.summary()}")
    assert not report.problems, "\n".join([str(report), *report.problems[:30]])
    return report


def assert_nothing_lost(cluster: FaultCluster, topic: str, producer: LoadProducer) -> None:
    """No delivery failed, every acknowledged message is in the log once and in
    order, and every replica holds the same batches."""
    assert not producer.failures, producer.summary()
    assert_check(cluster.bootstrap, producer)
    cluster.wait_replicas_agree(topic)
