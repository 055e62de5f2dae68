"""Seeded soak of the controller's admin znodes (issue 12.2), on real processes.

A 4-broker local cluster (real ZooKeeper, real broker processes) under an
idempotent acks=-1 producer. Each of N random steps is one of:

- an admin write made directly with kazoo, as Yelp's kafka-utils and Kafka's
  own tools make them (write and exit; the next reassignment or election is
  written only once the previous znode is gone): a reassignment that moves
  data, that only reorders replicas, that changes the replication factor, a
  decommission of a broker; a preferred replica election; a topic created by
  writing /brokers/topics/<t> (as AdminZkClient); a topic deleted through
  /admin/delete_topics/<t>; partitions added to a topic znode;
- kill -9 of a broker or of the controller (also right after a reassignment
  was written), and restarting it.

At most one broker is down at a time and the produced topic (RF >= 3,
min.insync.replicas 2) has its full ISR before any kill, so acks=-1 stays
possible. After every step each obligation the step created (admin_soak_view)
must be met within its bound from when the controller could act on it, and
every leader and ISR member must be a registered broker. At the end every
acknowledged record is read back at its offset with its value; one whose
delivery report has no offset (librdkafka's implicit ack, see
check_acknowledged) must be in its partition exactly once.

Choices come from the seed and from what the soak wrote itself (assignments
read back once acted on), so a seed replays the same steps; which broker
wins an election is the cluster's choice, so kills of "the controller" may
pick another broker on a replay.
"""

from __future__ import annotations

import logging
import random
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from kafkactl.cluster.admin.topics import create_topic
from kafkactl.cluster.local import LocalCluster
from kafkactl.cluster.zk import codecs, layout
from kafkactl.cluster.zk.client import connect, wait
from support.admin_soak_view import ZK_TIMEOUT_S, Latencies, Obligation, SoakFailure, ZkView, settle
from support.producers import BackgroundProducer

BROKERS = 4
OVERRIDES = {
    "zookeeper.session.timeout.ms": "4000",      # a killed broker's session ends after 4 s
    "replica.lag.time.max.ms": "3000",
    "log.segment.delete.delay.ms": "1000",
}
LOAD_TOPIC = "soak-load"
LOAD_PARTITIONS = 3
MIN_INSYNC = 2
# Kafka acts on these znodes through watches within milliseconds; 5 s leaves
# room for a 2-core machine shared with other work.
ADMIN_BOUND_S = 5.0
MOVE_ALLOWANCE_S = 10.0      # a follower copying a partition and joining the ISR
ISR_BOUND_S = 15.0           # ZooKeeper session (4 s) + the controller's reaction
FULL_ISR_WAIT_S = 30.0
MAX_PEER_TOPICS = 8


@dataclass
class SoakReport:
    seed: int
    steps: int
    seconds: float
    acknowledged: int
    produce_errors: int
    latencies: Latencies
    ops: dict[str, int]
    stalled: str = ""          # why records had no delivery report at the end (see _verify)
    without_offset: int = 0    # acknowledged with no offset, checked by value (see check_acknowledged)
    implicit_acks: tuple[str, ...] = ()   # librdkafka's lines on them

    def __str__(self) -> str:
        ops = ", ".join(f"{k} {v}" for k, v in sorted(self.ops.items()))
        text = (f"seed {self.seed}: {self.steps} steps in {self.seconds:.0f} s; {self.acknowledged} records "
                f"acknowledged and read back, {self.produce_errors} produce errors; steps: {ops}\n"
                f"acted on: {self.latencies.summary()}")
        if self.without_offset:
            text += (f"\n{self.without_offset} acknowledged without an offset (librdkafka's implicit acks), "
                     "each found once by value; librdkafka:\n" + "\n".join(self.implicit_acks))
        return f"{text}\nPRODUCER STALLED: {self.stalled}" if self.stalled else text


class AdminSoak:
    def __init__(self, root: Path, seed: int, steps: int, rate_per_s: int = 100,
                 log: Callable[[str], None] = print) -> None:
        self.root = Path(root)
        self.seed = seed
        self.steps = steps
        self.rng = random.Random(seed)
        self.rate_per_s = rate_per_s
        self.log = log
        self.cluster = LocalCluster(self.root / "cluster")
        self.zk = None
        self.view: ZkView | None = None
        self.producer: BackgroundProducer | None = None
        self.obligations: list[Obligation] = []
        self.latencies = Latencies()
        self.down: int | None = None
        self.step = -1
        self.peer_count = 0
        self.ops: dict[str, int] = {}
        # librdkafka's log, the last lines kept: what explains a producer that
        # stops making progress (printed when the soak fails on it).
        self.client_log = ring_logger(f"admin-soak-producer-{seed}")
        self.without_offset = 0

    # --- the run

    def run(self) -> SoakReport:
        started = time.monotonic()
        status = self.cluster.up(brokers=BROKERS, overrides=OVERRIDES)
        try:
            self.zk = connect(status.zookeeper_connect, session_timeout_ms=10000, connection_timeout_ms=10000)
            self.view = ZkView(self.zk)
            self._create(LOAD_TOPIC, {p: self._spread(p, 3) for p in range(LOAD_PARTITIONS)},
                         {"min.insync.replicas": str(MIN_INSYNC)})
            for _ in range(3):
                self._create_peer()
            self._settle()
            self.producer = BackgroundProducer(status.bootstrap_servers, LOAD_TOPIC, _value, linger_ms=5,
                                               burst=max(1, self.rate_per_s // 10), pause_s=0.1,
                                               partitions=LOAD_PARTITIONS,
                                               config={"logger": self.client_log, "debug": "eos,msg,broker,topic"})
            self.producer.start()
            for self.step in range(self.steps):
                self._one_step()
            self.step = self.steps
            self._finish()
            acknowledged, stalled = self._verify()
            return SoakReport(self.seed, self.steps, time.monotonic() - started, acknowledged,
                              len(self.producer.errors), self.latencies, self.ops, stalled,
                              self.without_offset, tuple(self.client_log.implicit_acks))
        finally:
            if self.producer is not None:
                self.producer._stop.set()
            if self.zk is not None:
                self.zk.stop()
                self.zk.close()
            self.cluster.down()

    def _one_step(self) -> None:
        began = time.monotonic()
        op = self._choose()
        self.ops[op.__name__.lstrip("_")] = self.ops.get(op.__name__.lstrip("_"), 0) + 1
        what = op()
        try:
            self._settle()
        except SoakFailure as failure:
            raise SoakFailure(self.step, f"after {what}: {failure.detail}") from None
        self.log(f"step {self.step}: {what} ({time.monotonic() - began:.1f} s)")

    def _choose(self):
        reassign_free = not self.view.exists(layout.REASSIGN_PARTITIONS)
        preferred_free = not self.view.exists(layout.PREFERRED_REPLICA_ELECTION)
        peers = self._peers()
        weighted = [
            (self._move, 5 if reassign_free else 0),
            (self._reorder, 3 if reassign_free else 0),
            (self._change_rf, 3 if reassign_free else 0),
            (self._decommission, 2 if reassign_free else 0),
            (self._preferred, 3 if preferred_free else 0),
            (self._create_peer, 2 if len(peers) < MAX_PEER_TOPICS else 0),
            (self._delete_peer, 2 if len(peers) > 2 else 0),
            (self._add_partitions, 2 if peers else 0),
            (self._kill_broker, 2 if self.down is None else 0),
            (self._kill_controller, 2 if self.down is None else 0),
            (self._kill_controller_while_moving, 1 if self.down is None and reassign_free else 0),
            (self._restart, 5 if self.down is not None else 0),
        ]
        ops = [op for op, weight in weighted for _ in range(weight)]
        return self.rng.choice(ops)

    # --- the model: what the soak wrote, read back

    def _live(self) -> list[int]:
        return [b for b in range(1, BROKERS + 1) if b != self.down]

    def _spread(self, partition: int, rf: int) -> list[int]:
        brokers = self._live()
        return [brokers[(partition + i) % len(brokers)] for i in range(rf)]

    def _peers(self) -> list[str]:
        deleting = set(self.view.children(layout.DELETE_TOPICS))
        return [t for t in self.view.topics() if t != LOAD_TOPIC and t not in deleting]

    def _movable(self) -> list[tuple[str, int, list[int]]]:
        """(topic, partition, replicas) of partitions not being reassigned."""
        found = []
        for topic in [LOAD_TOPIC] + self._peers():
            assignment = self.view.assignment(topic)
            if assignment is None:
                continue
            for p, replicas in sorted(assignment.partitions.items()):
                if p not in assignment.adding_replicas and p not in assignment.removing_replicas:
                    found.append((topic, p, list(replicas)))
        return found

    # --- admin writes

    def _create(self, topic: str, assignment: dict[int, list[int]], config: dict[str, str]) -> None:
        create_topic(self.zk, topic, assignment, config, ZK_TIMEOUT_S)
        self._expect_leaders(topic, sorted(assignment), f"topic {topic} created", "create")

    def _create_peer(self) -> str:
        self.peer_count += 1
        topic = f"peer-{self.peer_count}"
        live = self._live()
        rf = self.rng.randint(1, min(3, len(live)))
        assignment = {p: self.rng.sample(live, rf) for p in range(self.rng.randint(1, 4))}
        self._create(topic, assignment, {})
        return f"create {topic} {assignment}"

    def _expect_leaders(self, topic: str, partitions: list[int], what: str, kind: str) -> None:
        def done() -> bool:
            assignment = self.view.assignment(topic)
            if assignment is None or self.view.exists(layout.delete_topic(topic)):
                return True             # deleted since, or being deleted: not created (as Kafka)
            states = self.view.states(topic, partitions)
            return all(s is not None and (s.leader in assignment.partitions[p] or not self._any_up(
                assignment.partitions[p])) for p, s in states.items())
        self._oblige(what, kind, done, ADMIN_BOUND_S, needs=lambda: set(), topics=(topic,))

    def _any_up(self, brokers) -> bool:
        return any(b != self.down for b in brokers)

    def _delete_peer(self) -> str:
        topic = self.rng.choice(self._peers())
        assignment = self.view.assignment(topic)
        hosts = {r for replicas in assignment.partitions.values() for r in replicas}
        wait(self.zk.create_async(layout.delete_topic(topic)), ZK_TIMEOUT_S)

        def done() -> bool:
            return not self.view.exists(layout.delete_topic(topic)) and not self.view.exists(layout.topic(topic))
        # Kafka deletes a topic only once every broker holding a replica answered.
        self._oblige(f"deletion of {topic}", "delete", done, ADMIN_BOUND_S, needs=lambda: hosts, topics=(topic,))
        return f"delete {topic}"

    def _add_partitions(self) -> str:
        topic = self.rng.choice(self._peers())
        current, version = self.view.assignment_and_version(topic)
        rf = len(current.partitions[0])
        live = self._live()
        first = max(current.partitions) + 1
        added = {p: self.rng.sample(live, min(rf, len(live))) for p in range(first, first + self.rng.randint(1, 2))}
        grown = codecs.TopicAssignment({**current.partitions, **added}, current.topic_id,
                                       current.adding_replicas, current.removing_replicas)
        wait(self.zk.set_async(layout.topic(topic), codecs.encode_topic(grown), version), ZK_TIMEOUT_S)
        self._expect_leaders(topic, sorted(added), f"new partitions {sorted(added)} of {topic}", "add-partitions")
        return f"add partitions {added} to {topic}"

    def _reassign(self, targets: dict[tuple[str, int], list[int]], moves_data: bool, kind: str) -> None:
        """Write /admin/reassign_partitions and oblige the controller to carry it out."""
        wait(self.zk.create_async(layout.REASSIGN_PARTITIONS, codecs.encode_reassignment(targets)), ZK_TIMEOUT_S)
        topics = tuple(sorted({t for t, _ in targets}))
        bound = ADMIN_BOUND_S + (MOVE_ALLOWANCE_S if moves_data else 0.0)

        def done() -> bool:
            if self.view.exists(layout.REASSIGN_PARTITIONS):
                return False
            for (topic, p), target in targets.items():
                assignment = self.view.assignment(topic)
                if assignment is None or self.view.exists(layout.delete_topic(topic)):
                    continue          # deleting a topic calls its moves off (cluster/controller/deletion.py)
                state = self.view.state(topic, p)
                if (assignment.partitions.get(p) != target or p in assignment.adding_replicas
                        or p in assignment.removing_replicas or state is None or not set(state.isr) <= set(target)
                        or (state.leader != -1 and state.leader not in target)):
                    return False
            return True
        needed = {b for target in targets.values() for b in target}

        def needs() -> set[int]:
            # Data moves from the leader: a partition whose whole ISR is down
            # (replication factor 1 on the broker that died) waits for it.
            stuck = set()
            for topic, p in targets:
                state = self.view.state(topic, p)
                if state is not None and all(r == self.down for r in state.isr):
                    stuck.update(state.isr)
            return needed | stuck
        self._oblige(f"reassignment {kind} {targets}", kind, done, bound, needs=needs, topics=topics)

    def _move(self, exclude: int | None = None) -> str:
        live = [b for b in self._live() if b != exclude]
        chosen = self.rng.sample(self._movable(), self.rng.randint(1, 3))
        targets = {}
        for topic, p, replicas in chosen:
            rf = min(len(replicas), len(live))
            target = self.rng.sample(live, rf)
            if set(target) == set(replicas) and len(live) > rf:
                out = self.rng.choice(target)
                target[target.index(out)] = self.rng.choice([b for b in live if b not in target])
            targets[(topic, p)] = target
        self._reassign(targets, moves_data=True, kind="move")
        return f"reassign (move) {targets}"

    def _reorder(self) -> str:
        # A target broker that is down would be refused (as by Kafka's controller).
        chosen = [c for c in self._movable() if len(c[2]) > 1 and self.down not in c[2]]
        if not chosen:
            return self._move()
        targets = {}
        for topic, p, replicas in self.rng.sample(chosen, min(len(chosen), self.rng.randint(1, 3))):
            target = list(replicas)
            while target == replicas:
                self.rng.shuffle(target)
            targets[(topic, p)] = target
        self._reassign(targets, moves_data=False, kind="reorder")
        return f"reassign (reorder) {targets}"

    def _change_rf(self) -> str:
        live = self._live()
        targets = {}
        for topic, p, replicas in self.rng.sample(self._movable(), self.rng.randint(1, 2)):
            low = 3 if topic == LOAD_TOPIC else 1          # acks=-1 survives one broker down
            choices = [rf for rf in (len(replicas) - 1, len(replicas) + 1) if low <= rf <= len(live)]
            if not choices:
                continue
            rf = self.rng.choice(choices)
            kept = [r for r in replicas if r in live]
            if rf < len(replicas):
                target = self.rng.sample(kept, min(rf, len(kept)))
            else:
                target = kept + self.rng.sample([b for b in live if b not in kept], rf - len(kept))
            if len(target) == rf:
                targets[(topic, p)] = target
        if not targets:
            return self._move()
        self._reassign(targets, moves_data=True, kind="rf-change")
        return f"reassign (replication factor) {targets}"

    def _decommission(self) -> str:
        """Every replica on one broker (possibly the one that is down) goes to
        another live broker, as kafka-utils' decommission does."""
        leaving = self.rng.randint(1, BROKERS)
        others = [b for b in self._live() if b != leaving]
        targets = {}
        for topic, p, replicas in self._movable():
            if leaving in replicas:
                spare = [b for b in others if b not in replicas]
                if not spare:
                    continue
                target = [self.rng.choice(spare) if r == leaving else r for r in replicas]
                if self.down not in target:
                    targets[(topic, p)] = target
        if not targets:
            return self._move()
        self._reassign(targets, moves_data=True, kind="decommission")
        return f"decommission broker {leaving}: {targets}"

    def _preferred(self) -> str:
        candidates = [(t, p) for t, p, _ in self._movable()]
        partitions = self.rng.sample(candidates, min(len(candidates), self.rng.randint(1, 4)))
        # Only a preferred replica that is up and in the ISR takes over (and
        # not later, when it comes back or catches up): those are checked.
        eligible = []
        for topic, p in partitions:
            assignment, state = self.view.assignment(topic), self.view.state(topic, p)
            if assignment is not None and state is not None and assignment.partitions[p][0] != self.down \
                    and assignment.partitions[p][0] in state.isr:
                eligible.append((topic, p, assignment.partitions[p][0]))
        wait(self.zk.create_async(layout.PREFERRED_REPLICA_ELECTION, codecs.encode_partition_list(partitions)),
             ZK_TIMEOUT_S)

        def done() -> bool:
            if self.view.exists(layout.PREFERRED_REPLICA_ELECTION):
                return False
            for topic, p, preferred in eligible:
                assignment, state = self.view.assignment(topic), self.view.state(topic, p)
                if assignment is None or state is None or assignment.partitions.get(p, [None])[0] != preferred:
                    continue                                  # deleted or moved since
                if preferred != self.down and preferred in state.isr and state.leader != preferred:
                    return False
            return True
        self._oblige(f"preferred election of {partitions}", "preferred", done, ADMIN_BOUND_S,
                     needs=lambda: set(), topics=tuple(sorted({t for t, _ in partitions})))
        return f"preferred election {partitions}"

    # --- faults

    def _kill(self, broker_id: int) -> None:
        self._wait_load_isr_full()
        self.cluster.kill_broker(broker_id)
        self.down = broker_id

    def _kill_broker(self) -> str:
        victim = self.rng.randint(1, BROKERS)
        self._kill(victim)
        return f"kill -9 broker {victim}"

    def _kill_controller(self) -> str:
        controller = self.view.controller()
        victim = controller if controller is not None else self.rng.randint(1, BROKERS)
        self._kill(victim)
        return f"kill -9 controller {victim}"

    def _kill_controller_while_moving(self) -> str:
        self._wait_load_isr_full()
        controller = self.view.controller()
        if controller is None:
            return self._move()
        # Not onto the controller: a target broker that is down when the next
        # controller starts the move would be refused.
        what = self._move(exclude=controller)
        time.sleep(self.rng.uniform(0.0, 0.3))
        self._kill(controller)
        if self.rng.random() < 0.5:
            self._restart()
            return what + f"; kill -9 and restart controller {controller}"
        return what + f"; kill -9 controller {controller}"

    def _restart(self) -> str:
        broker_id = self.down
        self.cluster.up()            # starts the broker that is down; waits until it registered
        self.down = None
        return f"restart broker {broker_id}"

    def _wait_load_isr_full(self) -> None:
        """Before a kill: the produced topic has every replica in sync, so one
        broker down leaves min.insync.replicas."""
        deadline = time.monotonic() + FULL_ISR_WAIT_S
        while True:
            assignment = self.view.assignment(LOAD_TOPIC)
            states = self.view.states(LOAD_TOPIC, sorted(assignment.partitions))
            if all(s is not None and sorted(s.isr) == sorted(assignment.partitions[p]) for p, s in states.items()):
                return
            if time.monotonic() > deadline:
                raise SoakFailure(self.step, f"{LOAD_TOPIC} without its full ISR for {FULL_ISR_WAIT_S:g} s\n"
                                  + self.view.describe([LOAD_TOPIC]))
            time.sleep(0.2)

    # --- obligations

    def _oblige(self, what: str, kind: str, done, bound_s: float, needs, topics=()) -> None:
        def ready() -> bool:
            controller = self.view.controller()
            return controller is not None and controller != self.down and self.down not in needs()
        obligation = Obligation(what, kind, done, bound_s, ready, tuple(topics), step=self.step)
        if ready():
            obligation.ready_since = obligation.written_at
        self.obligations.append(obligation)

    def _down_set(self) -> set[int]:
        return {self.down} if self.down is not None else set()

    def _settle(self) -> None:
        self._oblige("every leader and ISR member registered", "isr",
                     lambda: not self.view.isr_problems(self._down_set()), ISR_BOUND_S, needs=lambda: set())
        try:
            settle(self.obligations, self.step, self.view, self.latencies, self.log)
        except SoakFailure as failure:
            if "every leader and ISR" in str(failure):
                problems = "\n".join(self.view.isr_problems(self._down_set()))
                raise SoakFailure(self.step, f"{failure.detail}\n{problems}") from None
            raise

    # --- the end

    def _finish(self) -> None:
        if self.down is not None:
            self._restart()
        self._settle()
        leftover = [o.what for o in self.obligations]
        if leftover:
            raise SoakFailure(self.step, f"still pending with every broker up: {leftover}")

    def _metadata_seen(self) -> str:
        """The produced topic's leaders as each broker answers Metadata."""
        from confluent_kafka.admin import AdminClient

        lines = []
        for broker in self.cluster.status(check_registration=False).brokers:
            try:
                admin = AdminClient({"bootstrap.servers": f"{broker.host}:{broker.port}",
                                     "client.dns.lookup": "use_all_dns_ips"})
                metadata = admin.list_topics(LOAD_TOPIC, timeout=5)
                topic = metadata.topics[LOAD_TOPIC]
                leaders = {p: (m.leader, m.isrs) for p, m in sorted(topic.partitions.items())}
                lines.append(f"broker {broker.id} answers: brokers {sorted(metadata.brokers)}, "
                             f"controller {metadata.controller_id}, leaders/ISR {leaders}, error {topic.error}")
            except Exception as error:  # a diagnostic: never hide the failure behind it
                lines.append(f"broker {broker.id}: metadata failed: {error}")
        return "\n".join(lines)

    def _verify(self) -> tuple[int, str]:
        """Every acknowledged record at its offset, with its value; and, if
        records are still unanswered after the flush, what explains it.

        A producer that stops getting answers is reported, not failed: no
        acknowledged record is lost by it (those are all checked), and it
        has been seen with every broker answering Metadata with the right
        leaders while librdkafka kept the partition on its internal broker
        (a client-side leader/epoch question, not an admin znode left
        unacted on)."""
        unfinished = self.producer.stop_and_flush(60)
        stalled = ""
        if unfinished:
            tail = "\n".join(list(self.client_log.lines)[-20:] + ["leaders and epochs:"]
                              + list(self.client_log.leadership)[-150:])
            stalled = (f"{unfinished} records without a delivery report after the flush; "
                       f"errors {self.producer.errors[:5]}; librdkafka's last lines:\n{tail}\n"
                       f"{self._metadata_seen()}\n{self.view.describe([LOAD_TOPIC])}")
        with self.producer.lock:
            acknowledged = dict(self.producer.acknowledged)
        placed: dict[int, dict[int, bytes]] = {p: {} for p in range(LOAD_PARTITIONS)}
        unplaced: dict[int, list[bytes]] = {p: [] for p in range(LOAD_PARTITIONS)}
        for index, offset in acknowledged.items():
            # offset None: librdkafka acknowledged the record implicitly, by
            # the success of a later batch, after its own batch had failed
            # with a "possibly persisted" error (see check_acknowledged):
            # it is checked by value.
            if offset is None:
                unplaced[index % LOAD_PARTITIONS].append(_value(index))
            else:
                placed[index % LOAD_PARTITIONS][offset] = _value(index)
        self.without_offset = sum(len(values) for values in unplaced.values())
        bootstrap = self.cluster.status().bootstrap_servers
        for partition in range(LOAD_PARTITIONS):
            if not placed[partition] and not unplaced[partition]:
                continue
            try:
                records = read_partition(bootstrap, LOAD_TOPIC, partition, group=f"soak-{self.seed}")
            except AssertionError as error:
                raise SoakFailure(self.step, str(error)) from None
            problems = check_acknowledged(placed[partition], unplaced[partition], records)
            if problems:
                raise SoakFailure(self.step, f"{LOAD_TOPIC}-{partition}: {len(problems)} acknowledged records "
                                             f"not found as acknowledged, e.g. {problems[:5]}")
        return len(acknowledged), stalled


def read_partition(bootstrap: str, topic: str, partition: int, group: str,
                   timeout_s: float = 60.0) -> dict[int, bytes]:
    """offset -> value of every record of a partition below its high watermark."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "enable.auto.commit": False, "check.crcs": True})
    try:
        _low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
        consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
        found: dict[int, bytes] = {}
        deadline = time.monotonic() + timeout_s
        while max(found, default=-1) < high - 1:
            if time.monotonic() > deadline:
                raise AssertionError(f"{topic}-{partition}: read up to offset {max(found, default=-1)} "
                                     f"of {high - 1} in {timeout_s:g} s")
            message = consumer.poll(0.5)
            if message is None or message.error() is not None:
                continue       # end of partition, or a transient error: poll again
            found[message.offset()] = message.value()
        return found
    finally:
        consumer.close()


def check_acknowledged(placed: dict[int, bytes], unplaced: list[bytes], records: dict[int, bytes]) -> list[str]:
    """What is wrong with one partition's acknowledged records: `placed`
    (offset -> value) must be at their offset; `unplaced`, values whose
    delivery report carried no offset, must each be in `records` exactly once.

    librdkafka reports a success without an offset (RD_KAFKA_OFFSET_INVALID,
    None in Python) for messages it acknowledges implicitly: their batch
    failed with a retriable, possibly persisted error (NOT_ENOUGH_REPLICAS_
    AFTER_APPEND, REQUEST_TIMED_OUT, a timeout or a lost connection) and went
    back to the partition queue, then a later batch of the same producer,
    already in flight, succeeded, which proves the earlier sequence numbers
    were written (rd_kafka_handle_idempotent_Produce_success calls
    rd_kafka_dr_implicit_ack, src/rdkafka_request.c / rdkafka_broker.c; its
    own test: tests/0144-idempotence_mock.c
    do_test_idempo_success_after_possibly_persisted). The broker's answers
    name only the later batch's offsets."""
    problems = [f"offset {offset}: acknowledged {value!r}, found {records.get(offset)!r}"
                for offset, value in sorted(placed.items()) if records.get(offset) != value]
    wanted = set(unplaced)
    copies: dict[bytes, list[int]] = {value: [] for value in wanted}
    for offset, value in records.items():
        if value in wanted:
            copies[value].append(offset)
    problems += [f"{value!r} (acknowledged without an offset): {len(offsets)} copies, at {sorted(offsets)}"
                 for value, offsets in sorted(copies.items()) if len(offsets) != 1]
    return problems


def ring_logger(name: str, capacity: int = 2000) -> logging.Logger:
    logger = logging.Logger(name, logging.DEBUG)
    logger.lines = deque(maxlen=capacity)
    logger.leadership = deque(maxlen=capacity)       # what it learnt of leaders and epochs
    # Implicit acks (delivery reports without an offset) and the produce errors before them.
    logger.implicit_acks = deque(maxlen=100)
    handler = logging.Handler()

    def emit(record) -> None:
        text = record.getMessage()
        if "implicitly acked" in text or ("MessageSet" in text and "encountered error" in text):
            logger.implicit_acks.append(f"{time.strftime('%H:%M:%S', time.localtime(record.created))} {text}")
        if "epoch" in text.lower() or "leader" in text.lower():
            if not any(noise in text for noise in ("re-query", "TIMEOUT", "Produce MessageSet", "TERMINATE")):
                logger.leadership.append(f"{time.strftime('%H:%M:%S', time.localtime(record.created))} {text}")
        if "re-query" in text and logger.lines and "re-query" in logger.lines[-1]:
            return                     # once a second per partition while no leader is known: kept once
        logger.lines.append(f"{time.strftime('%H:%M:%S', time.localtime(record.created))}."
                            f"{int(record.msecs):03d} {text}")
    handler.emit = emit
    logger.addHandler(handler)
    return logger


def _value(index: int) -> bytes:
    return b"soak-%d" % index
