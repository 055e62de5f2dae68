"""Helpers for the fault-injection tests: the cluster under test, a recording
acks=-1 producer, and the checker.

Imported by the test modules of this folder (its conftest puts the folder on
sys.path). Everything is observed from outside the brokers: ZooKeeper in
Kafka's layout, real clients, and the segment files in the log dirs.

The producer writes values `b"<seq>"` (seq = 0, 1, 2, ... in produce order)
to partition `seq % partitions`, and records every delivery report. The
checker reads every partition from the beginning to its high watermark and
asserts that each acknowledged value is at its acknowledged offset, once,
that no value is in the log twice, and that the log keeps produce order.
"""

from __future__ import annotations

import logging
import os
import signal
import struct
import threading
import time
import uuid
from collections import Counter, deque
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from kazoo.exceptions import NoNodeError

from kafkactl.cluster.admin.topics import create_topic
from kafkactl.cluster.zk import codecs, layout
from kafkactl.cluster.zk.client import connect, wait

# Failures detected fast (4 s is ZooKeeper's minimum session here: 2 x tickTime),
# a follower that stops fetching leaves the ISR after 3 s.
BASE_OVERRIDES = {
    "zookeeper.session.timeout.ms": "4000",
    "replica.lag.time.max.ms": "3000",
}
REPLICATION_FACTOR = 3
MIN_INSYNC_REPLICAS = 2
ZK_TIMEOUT_S = 5.0


def unique_topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def wait_until(condition, timeout_s: float, what: str, interval_s: float = 0.1, diagnose=None):
    """Poll until condition() is truthy and return its value; on timeout fail
    with `what` and, if given, `diagnose()` (e.g. the partition states)."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            detail = f"\n{diagnose()}" if diagnose else ""
            raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}{detail}")
        time.sleep(interval_s)


# ---- the cluster --------------------------------------------------------------

class FaultCluster:
    """A LocalCluster plus a ZooKeeper client to watch and poke it."""

    def __init__(self, cluster, status) -> None:
        self.cluster = cluster
        self.status = status
        self.zk = connect(status.zookeeper_connect, session_timeout_ms=10000, connection_timeout_ms=10000)
        self.paused: set[int] = set()

    @property
    def bootstrap(self) -> str:
        return self.status.bootstrap_servers

    @property
    def broker_ids(self) -> list[int]:
        return [b.id for b in self.status.brokers]

    def close(self) -> None:
        for broker_id in list(self.paused):   # a stopped process ignores SIGTERM
            self.resume(broker_id)
        try:
            self.zk.stop()
            self.zk.close()
        except Exception as error:
            print(f"closing the ZooKeeper client failed: {error}")

    # -- faults

    def kill(self, broker_id: int) -> None:
        """kill -9, and wait until the process is gone."""
        self.cluster.kill_broker(broker_id)

    def stop(self, broker_id: int) -> None:
        """SIGTERM (controlled shutdown), and wait until the process is gone."""
        self.cluster.stop_broker(broker_id)

    def restart(self) -> None:
        """Start every broker that is down, with its data; wait until registered."""
        self.status = self.cluster.up()

    def start_only(self, broker_id: int, timeout_s: float = 30.0) -> None:
        """Start one broker that is down (up() would start all of them), record
        its pid where LocalCluster keeps it (so down() stops it), and wait
        until it registered anew in ZooKeeper."""
        from kafkactl.cluster.local import procs, state
        from kafkactl.cluster.local.brokers import broker_argv

        local = self.cluster
        stale = wait(self.zk.exists_async(layout.broker(broker_id)), ZK_TIMEOUT_S)
        with local._locked():
            spec = local.spec()
            broker = spec.broker(broker_id)
            argv = broker_argv(broker.config_file, local.python, local.broker_module)
            broker.pid = procs.spawn(argv, Path(broker.log_file), cwd=local.root).pid
            state.save(local.layout, spec)

        def registered() -> bool:
            stat = wait(self.zk.exists_async(layout.broker(broker_id)), ZK_TIMEOUT_S)
            return stat is not None and (stale is None or stat.czxid != stale.czxid)
        wait_until(registered, timeout_s, f"broker {broker_id} to register again")
        self.status = local.status(check_registration=False)

    def down(self) -> None:
        self.zk.stop()
        self.cluster.down()

    def up(self) -> None:
        self.status = self.cluster.up()
        self.zk.start(timeout=10)

    def pause(self, broker_id: int) -> None:
        os.kill(self.pid(broker_id), signal.SIGSTOP)
        self.paused.add(broker_id)

    def resume(self, broker_id: int) -> None:
        os.kill(self.pid(broker_id), signal.SIGCONT)
        self.paused.discard(broker_id)

    def pid(self, broker_id: int) -> int:
        pid = self.status.broker(broker_id).pid
        assert pid is not None, f"broker {broker_id} is not running"
        return pid

    # -- topics

    def create_topic(self, prefix: str, partitions: int,
                     assignment: dict[int, list[int]] | None = None,
                     config: dict[str, str] | None = None) -> str:
        """RF 3, min.insync.replicas=2; waits until every partition has its full
        ISR and a leader that answers metadata. Default assignment: partition p
        on brokers p+1, p+2, p+3 (mod the broker count), first = preferred."""
        topic = unique_topic(prefix)
        ids = self.broker_ids
        if assignment is None:
            assignment = {p: [ids[(p + i) % len(ids)] for i in range(REPLICATION_FACTOR)]
                          for p in range(partitions)}
        settings = {"min.insync.replicas": str(MIN_INSYNC_REPLICAS), **(config or {})}
        create_topic(self.zk, topic, assignment, settings)
        self.wait_full_isr(topic, timeout_s=20)
        return topic

    # -- ZooKeeper reads

    def assignment(self, topic: str) -> codecs.TopicAssignment:
        data, _ = wait(self.zk.get_async(layout.topic(topic)), ZK_TIMEOUT_S)
        return codecs.decode_topic(topic, data)

    def state(self, topic: str, partition: int) -> codecs.PartitionState | None:
        path = layout.partition_state(topic, partition)
        try:
            data, stat = wait(self.zk.get_async(path), ZK_TIMEOUT_S)
        except NoNodeError:
            return None
        return codecs.decode_partition_state(path, data, stat.version)

    def states(self, topic: str) -> dict[int, codecs.PartitionState | None]:
        return {p: self.state(topic, p) for p in sorted(self.assignment(topic).partitions)}

    def leader(self, topic: str, partition: int) -> int:
        state = self.state(topic, partition)
        return state.leader if state is not None else -1

    def controller(self) -> int | None:
        try:
            data, _ = wait(self.zk.get_async(layout.CONTROLLER), ZK_TIMEOUT_S)
        except NoNodeError:
            return None
        return codecs.decode_controller(data)

    def controller_epoch(self) -> int:
        data, _ = wait(self.zk.get_async(layout.CONTROLLER_EPOCH), ZK_TIMEOUT_S)
        return codecs.decode_controller_epoch(data)

    def registered(self) -> set[int]:
        children = wait(self.zk.get_children_async(layout.BROKER_IDS), ZK_TIMEOUT_S)
        return {int(c) for c in children if c.isdigit()}

    def exists(self, path: str) -> bool:
        return wait(self.zk.exists_async(path), ZK_TIMEOUT_S) is not None

    def describe(self, topic: str) -> str:
        """Assignment and leader/ISR of every partition, for failure messages."""
        try:
            assignment = self.assignment(topic)
            lines = [f"controller {self.controller()}, registered {sorted(self.registered())}, "
                     f"adding {assignment.adding_replicas}, removing {assignment.removing_replicas}"]
            for p, replicas in sorted(assignment.partitions.items()):
                s = self.state(topic, p)
                lines.append(f"  {topic}-{p} replicas {replicas} " + (
                    f"leader {s.leader} epoch {s.leader_epoch} isr {s.isr} zkVersion {s.zk_version}"
                    if s else "no state"))
            return "\n".join(lines)
        except Exception as error:
            return f"(cannot describe {topic}: {error})"

    # -- ZooKeeper admin triggers, as Kafka's tools write them

    def request_reassignment(self, targets: dict[tuple[str, int], list[int]]) -> None:
        wait(self.zk.create_async(layout.REASSIGN_PARTITIONS, codecs.encode_reassignment(targets)),
             ZK_TIMEOUT_S)

    def request_preferred_election(self, partitions: list[tuple[str, int]]) -> None:
        wait(self.zk.create_async(layout.PREFERRED_REPLICA_ELECTION,
                                  codecs.encode_partition_list(partitions)), ZK_TIMEOUT_S)

    # -- waiting

    def wait_full_isr(self, topic: str, timeout_s: float = 20.0) -> None:
        """Every partition has a leader among its replicas and ISR = replicas."""
        def full() -> bool:
            assignment = self.assignment(topic)
            for p, replicas in assignment.partitions.items():
                s = self.state(topic, p)
                if s is None or s.leader not in replicas or sorted(s.isr) != sorted(replicas):
                    return False
            return True
        wait_until(full, timeout_s, f"the full ISR of every partition of {topic}",
                   diagnose=lambda: self.describe(topic))

    def wait_new_leader(self, topic: str, partition: int, old: int, timeout_s: float = 15.0) -> int:
        """A live leader other than `old`, written in ZooKeeper."""
        def elected():
            leader = self.leader(topic, partition)
            return leader if leader not in (-1, old) and leader in self.registered() else None
        return wait_until(elected, timeout_s, f"a new leader of {topic}-{partition} (old {old})",
                          diagnose=lambda: self.describe(topic))

    def wait_replicas_agree(self, topic: str, timeout_s: float = 20.0) -> dict[int, list[tuple]]:
        """Every assigned replica of every partition holds the same batches
        (base offset, last offset, partition leader epoch, CRC) on disk.
        Call when nothing is produced any more. Returns the leaders' batches."""
        def agreeing():
            agreed = {}
            for p, replicas in self.assignment(topic).partitions.items():
                logs = {b: partition_batches(self.status.broker(b).log_dirs, topic, p) for b in replicas}
                if len({tuple(batches) for batches in logs.values()}) != 1:
                    return None
                agreed[p] = logs[replicas[0]]
            return agreed

        def diagnose() -> str:
            lines = [self.describe(topic)]
            for p, replicas in self.assignment(topic).partitions.items():
                for b in replicas:
                    batches = partition_batches(self.status.broker(b).log_dirs, topic, p)
                    tail = batches[-3:]
                    lines.append(f"  {topic}-{p} on broker {b}: {len(batches)} batches, last {tail}")
            return "\n".join(lines)
        return wait_until(agreeing, timeout_s, f"the replicas of {topic} to hold the same batches",
                          interval_s=0.25, diagnose=diagnose)

    # -- diagnostics

    def log_file(self, broker_id: int) -> Path:
        return Path(self.status.broker(broker_id).log_file)

    def _broker_log_lines(self, keep) -> list[tuple[str, int]]:
        """(line, broker id) of every broker log line `keep` accepts, in time order
        (the lines start with their timestamp)."""
        found = []
        for broker in self.status.brokers:
            try:
                text = Path(broker.log_file).read_text(errors="replace")
            except OSError:
                continue
            found += [(line, broker.id) for line in text.splitlines() if keep(line)]
        return sorted(found)

    def controller_lines(self, limit: int = 60) -> list[str]:
        """What every controller decided and sent (from all broker logs), by time."""
        found = self._broker_log_lines(lambda line: "controller.controller: controller" in line)
        return [line for line, _ in found][-limit:]

    def warning_lines(self, limit: int = 40) -> list[str]:
        """WARNING and ERROR lines of every broker log, by time."""
        found = self._broker_log_lines(lambda line: " WARNING " in line or " ERROR " in line)
        return [f"[{broker_id}] {line}" for line, broker_id in found][-limit:]

    def diagnostics(self) -> str:
        return "\n".join([f"cluster dir: {self.cluster.root}", "controller log lines (last 60):",
                          *self.controller_lines(), "broker warnings (last 40):",
                          *self.warning_lines()])


# ---- segment files ------------------------------------------------------------

BATCH_HEADER = struct.Struct(">qiiBI")   # baseOffset, batchLength, partitionLeaderEpoch, magic, crc
LAST_OFFSET_DELTA = struct.Struct(">i")  # at byte 23 of a batch


def partition_dir(log_dirs, topic: str, partition: int) -> Path | None:
    for log_dir in log_dirs:
        candidate = Path(log_dir) / f"{topic}-{partition}"
        if candidate.is_dir():
            return candidate
    return None


def partition_batches(log_dirs, topic: str, partition: int) -> list[tuple[int, int, int, int]]:
    """(base offset, last offset, leader epoch, crc) of every complete batch in
    the partition's segment files, in order; [] when the broker has none."""
    directory = partition_dir(log_dirs, topic, partition)
    if directory is None:
        return []
    batches = []
    for segment in sorted(directory.glob("*.log")):
        try:
            data = segment.read_bytes()
        except FileNotFoundError:   # rolled or deleted while we looked
            continue
        position = 0
        while position + BATCH_HEADER.size <= len(data):
            base, length, epoch, _magic, crc = BATCH_HEADER.unpack_from(data, position)
            if length <= 0 or position + 12 + length > len(data):
                break                       # preallocated zeros or a write in progress
            (delta,) = LAST_OFFSET_DELTA.unpack_from(data, position + 23)
            batches.append((base, base + delta, epoch, crc))
            position += 12 + length
    return batches


# ---- the producer -------------------------------------------------------------

# Every LoadProducer of the running test, so the teardown of a failed test can
# print what their clients logged (conftest clears it after each test).
PRODUCERS: list["LoadProducer"] = []


class RingLogger(logging.Logger):
    """A logger that keeps its last `capacity` formatted records in memory."""

    def __init__(self, name: str, capacity: int = 600) -> None:
        super().__init__(name, logging.DEBUG)
        self.propagate = False
        self.lines: deque[str] = deque(maxlen=capacity)
        handler = logging.Handler()
        handler.emit = lambda record: self.lines.append(
            f"{time.strftime('%H:%M:%S', time.localtime(record.created))}"
            f".{int(record.msecs):03d} {record.getMessage()}")
        self.addHandler(handler)

    def tail(self, limit: int = 80) -> list[str]:
        return list(self.lines)[-limit:]

@dataclass(frozen=True)
class Ack:
    seq: int
    partition: int
    offset: int
    at: float          # monotonic time of the delivery report


@dataclass(frozen=True)
class Failure:
    seq: int
    partition: int
    error: str
    at: float


class LoadProducer:
    """An idempotent acks=-1 producer on its own thread, `rate` messages per
    second round-robin over the partitions, recording every delivery report."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, rate: float = 300.0,
                 config: dict | None = None) -> None:
        self.topic = topic
        self.partitions = partitions
        self.rate = rate
        self.log_ring = RingLogger(f"load-producer-{topic}")
        settings = {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
            "message.timeout.ms": 30000,
            "request.timeout.ms": 5000,
            "retry.backoff.ms": 100,
            "retry.backoff.max.ms": 500,
            "reconnect.backoff.ms": 100,
            "reconnect.backoff.max.ms": 500,
            "socket.connection.setup.timeout.ms": 3000,
            "topic.metadata.refresh.interval.ms": 2000,
            # The idempotence state machine's log (PID, epoch bumps, drains) is
            # what explains a producer that stops making progress; kept in a
            # ring buffer and printed when a test fails.
            "debug": os.environ.get("KAFKACTL_TEST_RDKAFKA_DEBUG", "eos,topic,metadata,broker"),
            "logger": self.log_ring,
        }
        settings.update(config or {})
        self.producer = Producer(settings)
        PRODUCERS.append(self)
        self.lock = threading.Lock()
        self.sent_at: list[float] = []        # index: seq
        self.acks: list[Ack] = []
        self.failures: list[Failure] = []
        self.unfinished = 0
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="load-producer", daemon=True)

    def start(self) -> "LoadProducer":
        self._thread.start()
        return self

    def _report(self, seq: int, partition: int):
        def report(error, message) -> None:
            now = time.monotonic()
            with self.lock:
                if error is not None:
                    self.failures.append(Failure(seq, partition, error.name(), now))
                else:
                    self.acks.append(Ack(seq, message.partition(), message.offset(), now))
        return report

    def _run(self) -> None:
        started = time.monotonic()
        seq = 0
        while not self._stopping.is_set():
            due = int((time.monotonic() - started) * self.rate) + 1
            while seq < due and not self._stopping.is_set():
                partition = seq % self.partitions
                try:
                    with self.lock:
                        self.sent_at.append(time.monotonic())
                    self.producer.produce(self.topic, value=str(seq).encode(), partition=partition,
                                          on_delivery=self._report(seq, partition))
                except BufferError:
                    with self.lock:
                        self.sent_at.pop()
                    self.producer.poll(0.05)
                    continue
                seq += 1
            self.producer.poll(0.01)

    def stop(self, flush_timeout_s: float = 40.0) -> "LoadProducer":
        """Stop producing and wait for the delivery report of every message."""
        self._stopping.set()
        self._thread.join(10)
        self.unfinished = self.producer.flush(flush_timeout_s)
        return self

    # -- observing while it runs

    @property
    def produced(self) -> int:
        with self.lock:
            return len(self.sent_at)

    def ack_count(self, partition: int | None = None) -> int:
        with self.lock:
            return sum(1 for a in self.acks if partition is None or a.partition == partition)

    def wait_progress(self, count: int = 50, partition: int | None = None, timeout_s: float = 20.0,
                      diagnose=None) -> None:
        """Wait until `count` more messages (of `partition`) are acknowledged."""
        target = self.ack_count(partition) + count
        where = "" if partition is None else f" on partition {partition}"
        wait_until(lambda: self.ack_count(partition) >= target, timeout_s,
                   f"{count} more acknowledged messages{where} (have {target - count}, "
                   f"{len(self.failures)} failures so far)", diagnose=diagnose)

    def summary(self) -> str:
        with self.lock:
            errors = Counter(f.error for f in self.failures)
            return (f"produced {len(self.sent_at)}, acknowledged {len(self.acks)}, "
                    f"failed {len(self.failures)} {dict(errors)}, unfinished {self.unfinished}")


# ---- the checker --------------------------------------------------------------

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
        "group.id": f"checker-{uuid.uuid4().hex[:8]}",
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


# ---- appended helpers: leaders, leftover log dirs, an offline-partition observer

def leaders(cluster: FaultCluster, topic: str) -> dict[int, int]:
    """Partition -> leader written in ZooKeeper (-1: none or no state)."""
    return {p: (s.leader if s is not None else -1) for p, s in cluster.states(topic).items()}


def preferred_leaders(cluster: FaultCluster, topic: str) -> dict[int, int]:
    """Partition -> its preferred replica (the first of its assignment)."""
    return {p: replicas[0] for p, replicas in cluster.assignment(topic).partitions.items()}


def leftovers(log_dirs, topic: str, partition: int) -> list[str]:
    """Dirs of the partition in the log dirs: the live one or a renamed `-delete` one."""
    name = f"{topic}-{partition}"
    return [str(p) for d in log_dirs for p in Path(d).iterdir()
            if p.name == name or (p.name.startswith(name + ".") and p.name.endswith("-delete"))]


class OfflineObserver:
    """Watches ZooKeeper from a thread of its own, on the FaultCluster's
    session, and records every moment a partition of `topic` is offline: its
    leader is -1, a broker not registered under /brokers/ids, or a broker
    whose process the test has marked as exited (`down`).

    One round, every `interval_s`, pipelines on the one session: children of
    /brokers/ids, the state znode of every partition, children of
    /brokers/ids again. A session's requests are served in order, so when
    both children reads have the same cversion the registered set did not
    change while the states were read and each state is judged against it
    exactly. A round in which a broker (de)registered is judged only where it
    is unambiguous (leader -1 or in neither set) and repeated at once.
    """

    def __init__(self, cluster: FaultCluster, topic: str, partitions: int, interval_s: float = 0.025) -> None:
        self.zk = cluster.zk
        self.topic = topic
        self.paths = {p: layout.partition_state(topic, p) for p in range(partitions)}
        self.interval_s = interval_s
        self.down: set[int] = set()
        self.rounds = 0            # rounds judged against an unchanging registered set
        self.state_reads = 0
        self.repeated = 0          # rounds during which /brokers/ids changed
        self.offline: list[str] = []
        self.offline_count = 0
        self.errors: list[str] = []
        self.leaders_seen: Counter = Counter()
        self._seen_offline: set[tuple] = set()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="offline-observer", daemon=True)

    def start(self) -> "OfflineObserver":
        self._thread.start()
        return self

    def stop(self) -> "OfflineObserver":
        self._stopping.set()
        self._thread.join(10)
        return self

    def summary(self) -> str:
        return (f"observer: {self.rounds} rounds ({self.state_reads} partition-state reads), "
                f"{self.repeated} rounds repeated because /brokers/ids changed, "
                f"leaders seen {dict(sorted(self.leaders_seen.items()))}, "
                f"{self.offline_count} offline observations, {len(self.errors)} read errors"
                + (f" (first: {self.errors[0]})" if self.errors else ""))

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                consistent = self._round()
            except Exception as error:   # a ZooKeeper hiccup: note it, go on
                self.errors.append(f"{time.strftime('%H:%M:%S')} {type(error).__name__}: {error}")
                consistent = True
            if consistent:
                self._stopping.wait(self.interval_s)

    def _round(self) -> bool:
        down = set(self.down)   # exited before any of this round's reads
        before = self.zk.get_children_async(layout.BROKER_IDS, include_data=True)
        reads = {p: self.zk.get_async(path) for p, path in self.paths.items()}
        after = self.zk.get_children_async(layout.BROKER_IDS, include_data=True)
        ids_before, stat_before = wait(before, ZK_TIMEOUT_S)
        states = {p: wait(r, ZK_TIMEOUT_S) for p, r in reads.items()}
        ids_after, stat_after = wait(after, ZK_TIMEOUT_S)
        registered_before = {int(c) for c in ids_before if c.isdigit()}
        registered_after = {int(c) for c in ids_after if c.isdigit()}
        consistent = stat_before.cversion == stat_after.cversion
        for p, (data, stat) in states.items():
            state = codecs.decode_partition_state(self.paths[p], data, stat.version)
            self.leaders_seen[state.leader] += 1
            if state.leader == -1:
                reason = "no leader"
            elif state.leader in down:
                reason = f"leader {state.leader}'s process has exited"
            elif state.leader not in registered_before and (consistent or state.leader not in registered_after):
                reason = f"leader {state.leader} is not registered"
            else:
                continue
            self.offline_count += 1
            key = (p, state.leader, state.leader_epoch, stat.version)
            if key not in self._seen_offline and len(self.offline) < 50:
                self._seen_offline.add(key)
                self.offline.append(
                    f"{time.strftime('%H:%M:%S')} {self.topic}-{p}: {reason} (leader epoch "
                    f"{state.leader_epoch}, isr {state.isr}, zkVersion {stat.version}, registered "
                    f"{sorted(registered_before)}/{sorted(registered_after)}, exited {sorted(down)})")
        self.state_reads += len(states)
        if consistent:
            self.rounds += 1
        else:
            self.repeated += 1
        return consistent


def assert_never_offline(observer: OfflineObserver, min_rounds: int) -> None:
    """The observer ran (at least `min_rounds` rounds) and saw no partition offline."""
    assert observer.rounds > min_rounds, f"the observer hardly ran: {observer.summary()}"
    assert not observer.offline, "\n".join([observer.summary(), *observer.offline])


def assert_nothing_lost(cluster: FaultCluster, topic: str, producer: LoadProducer) -> None:
    """No delivery failed, every acknowledged message is in the log once and in
    order, and every replica holds the same batches."""
    assert not producer.failures, producer.summary()
    assert_check(cluster.bootstrap, producer)
    cluster.wait_replicas_agree(topic)
