"""A deterministic simulation of the controller core (for tests).

Everything runs from one `random.Random(seed)`: a fake ZooKeeper (znodes
with versions, conditional writes, multis that roll back, ephemeral broker
registrations whose czxid is the broker epoch), fake brokers (they apply
LeaderAndIsr/StopReplica with Kafka's epoch checks, crash, restart with a
new broker epoch, lose their session while still running, and as leaders
change their ISR in ZooKeeper themselves, which makes the controller's
conditional writes fail), an admin that creates, grows, deletes and
reassigns topics, and the controller: the core's operations carried out by
`execution.execute` against the fake ZooKeeper, as the real I/O layer will.

After every step the simulation checks the core's invariants, ZooKeeper's
content (against the controller's mirror and its own history) and that no
two brokers lead a partition in the same leader epoch. At the end it heals
the cluster (every broker up, every request delivered, every follower
caught up) and checks that all work finished: deletions, reassignments,
elections, admin znodes gone, every broker agreeing with ZooKeeper.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Sequence

from kafkactl.cluster.admin.replica_assignment import AssignmentError, BrokerInfo, assign_replicas
from kafkactl.cluster.controller import decisions as ops
from kafkactl.cluster.controller.context import ControllerConfig, ControllerContext
from kafkactl.cluster.controller.execution import execute
from kafkactl.cluster.controller.failover import ClusterSnapshot
from kafkactl.cluster.controller.invariants import check_invariants
from kafkactl.cluster.controller.model import (
    EPOCH_DURING_DELETE, NO_EPOCH, NO_LEADER, RECOVERED, RECOVERING, BrokerRequest, ControllerFencedError,
    CreatePartitionState, Decision, DeleteAdminPath, DeleteNotification, DeleteTopicZnodes, LeaderAndIsr,
    SetReassignments, StopReplica, TopicPartition, UpdateMetadata, UpdatePartitionState,
    UpdateTopicAssignment, WriteResult, ZkWrite,
)
from kafkactl.cluster.invariant import InvariantViolation, invariant
from kafkactl.cluster.zk import codecs, layout
from kafkactl.cluster.zk.codecs import BrokerRegistration, PartitionState, TopicAssignment

TOPIC_NAMES = ("t0", "t1", "t2", "t3")
STORAGE_ERROR = 56                      # KAFKA_STORAGE_ERROR
FENCED_LEADER_EPOCH = 74


class SimulationFailure(AssertionError):
    """A property did not hold; the message names the seed and step."""


# --- fake ZooKeeper

@dataclass
class Znode:
    data: bytes
    version: int
    czxid: int
    owner: int | None = None            # broker id owning an ephemeral node
    decoded: object = None              # the decoded value, dropped on every write


class FakeZooKeeper:
    def __init__(self) -> None:
        self.nodes: dict[str, Znode] = {}
        self.zxid = 0
        self.sequence = 0

    def get(self, path: str) -> Znode | None:
        return self.nodes.get(path)

    def create(self, path: str, data: bytes = b"", owner: int | None = None) -> Znode:
        invariant(path not in self.nodes, f"create {path}: exists")
        self.zxid += 1
        node = Znode(data, 0, self.zxid, owner)
        self.nodes[path] = node
        return node

    def create_sequential(self, prefix: str, data: bytes) -> str:
        self.sequence += 1
        path = f"{prefix}{self.sequence:010d}"
        self.create(path, data)
        return path

    def set(self, path: str, data: bytes, expected_version: int = -1) -> WriteResult:
        node = self.nodes.get(path)
        if node is None:
            return WriteResult.NO_NODE
        if expected_version != -1 and node.version != expected_version:
            return WriteResult.BAD_VERSION
        self.zxid += 1
        node.data, node.version, node.decoded = data, node.version + 1, None
        return WriteResult.OK

    def delete(self, path: str, recursive: bool = False) -> None:
        self.nodes.pop(path, None)
        if recursive:
            for child in [p for p in self.nodes if p.startswith(path + "/")]:
                del self.nodes[child]

    def children(self, path: str) -> list[str]:
        prefix = path.rstrip("/") + "/"
        return sorted({p[len(prefix):].split("/", 1)[0] for p in self.nodes if p.startswith(prefix)})


# --- fake brokers

@dataclass
class LocalReplica:
    topic_id: str | None
    leader: int | None                  # None: not told since (re)start
    leader_epoch: int
    isr: list[int]
    zk_version: int
    controller_epoch: int
    replicas: tuple[int, ...]
    leader_recovery_state: int = RECOVERED


@dataclass
class FakeBroker:
    broker_id: int
    running: bool = False
    registered: bool = False
    epoch: int = -1                     # czxid of its registration
    max_controller_epoch: int = 0
    replicas: dict[TopicPartition, LocalReplica] = field(default_factory=dict)
    inbox: list[BrokerRequest] = field(default_factory=list)
    shutdown_requested: bool = False

    def leads(self, tp: TopicPartition) -> bool:
        local = self.replicas.get(tp)
        return self.running and local is not None and local.leader == self.broker_id


# --- the simulation

class Simulation:
    def __init__(self, seed: int, broker_count: int | None = None, fault_rate: float = 1.0) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.zk = FakeZooKeeper()
        self.step_number = 0
        self.fault_rate = fault_rate
        count = broker_count or self.rng.randint(3, 5)
        self.brokers = {i: FakeBroker(i) for i in range(1, count + 1)}
        self.events: deque[tuple] = deque()
        self.config = ControllerConfig(
            unclean_leader_election_enable=self.rng.random() < 0.2,
            leader_imbalance_per_broker_percentage=self.rng.choice((0, 10, 50)),
        )
        self.ctx: ControllerContext | None = None
        self.previous: ControllerContext | None = None
        self.epoch_leaders: dict[tuple[str | None, int, int], int] = {}   # (topic id, p, leader epoch) -> leader
        self.state_versions: dict[tuple[str | None, int], int] = {}
        self.stats: dict[str, int] = {}
        self._checked: tuple = ()
        self.zk.create(layout.CONTROLLER_EPOCH, codecs.encode_controller_epoch(0))
        for broker in self.brokers.values():
            self._start_broker(broker)
        self.failover()

    # --- driving

    def run(self, steps: int) -> None:
        for _ in range(steps):
            self.step()
        self.heal()

    def step(self) -> None:
        self.step_number += 1
        action = self._choose_action()
        self._count(action.__name__)
        action()
        self.check()

    def _choose_action(self):
        f = self.fault_rate
        weighted = [
            (self.process_event, 30), (self.deliver, 30), (self.leader_isr_change, 8),
            (self.create_topic, 4), (self.add_partition, 1), (self.delete_topic, 2),
            (self.reassign, 3), (self.preferred_election, 1), (self.auto_rebalance, 1),
            (self.toggle_unclean, 0.5 * f), (self.crash_broker, 2 * f), (self.restart_broker, 3),
            (self.lose_session, 1 * f), (self.controlled_shutdown, 1.5 * f), (self.failover, 0.7 * f),
        ]
        total = sum(w for _, w in weighted)
        pick = self.rng.random() * total
        for action, weight in weighted:
            pick -= weight
            if pick < 0:
                return action
        return weighted[0][0]

    def _count(self, name: str) -> None:
        self.stats[name] = self.stats.get(name, 0) + 1

    def fail(self, message: str) -> None:
        raise SimulationFailure(f"seed {self.seed}, step {self.step_number}: {message}")

    # --- the controller, through the core

    def failover(self) -> None:
        """A new controller: epoch + 1 in ZooKeeper, context loaded from it.
        The old controller, if it tries anything, must be fenced."""
        old = self.ctx
        node = self.zk.get(layout.CONTROLLER_EPOCH)
        epoch = codecs.decode_controller_epoch(node.data) + 1
        self.zk.set(layout.CONTROLLER_EPOCH, codecs.encode_controller_epoch(epoch))
        live = [b.broker_id for b in self.brokers.values() if b.registered]
        controller_id = self.rng.choice(live) if live else 1
        snapshot = self.snapshot(epoch, self.zk.get(layout.CONTROLLER_EPOCH).version)
        ctx = ops.load_context(snapshot, controller_id, self.config)
        if any(r not in snapshot.brokers for s in snapshot.partition_states.values() for r in s.isr):
            self._count("failover_with_dead_isr_members")   # the case seed 000 D step 5 is about
        self.events.clear()                      # the new controller reads everything afresh
        self.previous = self.previous or ctx
        self._execute(ctx, ops.on_controller_failover(ctx, snapshot.isr_change_notifications))
        self._check_isr_members_live()
        if old is not None and self.rng.random() < 0.3:
            self._check_old_controller_fenced(old)

    def _check_isr_members_live(self) -> None:
        """Once a new controller has acted, no partition it can lead keeps a
        dead broker in its ISR (seed 000 D step 5)."""
        ctx = self.ctx
        for tp, state in ctx.leadership.items():
            if ctx.is_queued_for_deletion(tp.topic) or not ctx.has_live_leader(tp):
                continue
            dead = [r for r in state.isr if not ctx.is_broker_live(r)]
            if dead:
                self.fail(f"{tp}: ISR {state.isr} keeps dead brokers {dead} after the controller failover")
        self._count("failover_isr_checked")

    def _check_old_controller_fenced(self, old: ControllerContext) -> None:
        partitions = [tp for tp in old.all_partitions() if tp in old.leadership]
        if not partitions:
            return
        tp = self.rng.choice(partitions)
        state = old.leadership[tp]
        write = UpdatePartitionState(tp.topic, tp.partition, replace(state, zk_version=state.zk_version + 1),
                                     state.zk_version)
        decision = Decision(context=old, zk_writes=(write,), retry=lambda c, _tps: Decision(context=c))
        try:
            execute(old, decision, SimZk(self), self.send)
        except ControllerFencedError:
            self._count("old_controller_fenced")
            return
        self.fail("a replaced controller's write went through")

    def snapshot(self, epoch: int, epoch_version: int) -> ClusterSnapshot:
        zk = self.zk
        topics = {t: self._topic(t) for t in zk.children(layout.BROKER_TOPICS) if zk.get(layout.topic(t))}
        states = {}
        for topic, assignment in topics.items():
            for partition in assignment.partitions:
                state = self._partition_state(TopicPartition(topic, partition))
                if state is not None:
                    states[TopicPartition(topic, partition)] = state
        reassign = zk.get(layout.REASSIGN_PARTITIONS)
        preferred = zk.get(layout.PREFERRED_REPLICA_ELECTION)
        return ClusterSnapshot(
            controller_epoch=epoch,
            controller_epoch_zk_version=epoch_version,
            brokers=self._registrations(),
            topics=topics,
            partition_states=states,
            topics_to_delete=frozenset(zk.children(layout.DELETE_TOPICS)),
            reassignments=self._reassignments(reassign) if reassign else {},
            preferred_election=frozenset(TopicPartition(*k) for k in codecs.decode_partition_list(
                layout.PREFERRED_REPLICA_ELECTION, preferred.data)) if preferred else None,
            topic_configs={t: self._topic_config(t) for t in zk.children("/config/topics")},
            isr_change_notifications=tuple(f"{layout.ISR_CHANGE_NOTIFICATION}/{c}"
                                           for c in zk.children(layout.ISR_CHANGE_NOTIFICATION)),
        )

    def _topic(self, topic: str) -> TopicAssignment:
        node = self.zk.get(layout.topic(topic))
        if node.decoded is None:
            node.decoded = codecs.decode_topic(topic, node.data)
        return node.decoded

    def _partition_state(self, tp: TopicPartition) -> PartitionState | None:
        path = layout.partition_state(tp.topic, tp.partition)
        node = self.zk.get(path)
        if node is not None and node.decoded is None:
            node.decoded = codecs.decode_partition_state(path, node.data, node.version)
        return node.decoded if node else None

    def _reassignments(self, node: Znode) -> dict[TopicPartition, tuple[int, ...]]:
        return {TopicPartition(*k): tuple(v) for k, v in codecs.decode_reassignment(node.data).items()}

    def _topic_config(self, topic: str) -> dict[str, str]:
        path = layout.topic_config(topic)
        return codecs.decode_entity_config(path, self.zk.get(path).data)

    def _registrations(self) -> dict[int, BrokerRegistration]:
        result = {}
        for child in self.zk.children(layout.BROKER_IDS):
            node = self.zk.get(layout.broker(int(child)))
            result[int(child)] = codecs.decode_broker(int(child), node.data, node.czxid)
        return result

    def _execute(self, ctx: ControllerContext, decision) -> list:
        def check(context: ControllerContext, retrying: frozenset[TopicPartition]) -> None:
            # Everything, and the controller's own check (changed partitions
            # only), which must catch whatever the full one catches.
            try:
                check_invariants(context, self.previous, retrying)
            except InvariantViolation as violation:
                try:
                    check_invariants(context, self.previous, retrying, only_changed=True)
                except InvariantViolation:
                    raise violation from None
                invariant(False, f"the check of changed partitions missed: {violation}")
            check_invariants(context, self.previous, retrying, only_changed=True)   # runs its code too
            self.previous = context

        try:
            self.ctx, replies = execute(ctx, decision, SimZk(self), self.send, on_outcome=check)
        except InvariantViolation as error:
            self.fail(f"invariant: {error}")
        return replies

    def process_event(self) -> None:
        if not self.events:
            return
        event = self.events.popleft()
        self._count(f"event_{event[0]}")
        ctx, zk = self.ctx, self.zk
        kind = event[0]
        if kind == "broker_change":
            decision = ops.on_broker_change(ctx, self._registrations())
        elif kind == "topic_change":
            topics = {t: self._topic(t) for t in zk.children(layout.BROKER_TOPICS) if zk.get(layout.topic(t))}
            decision = ops.on_topic_change(ctx, topics)
        elif kind == "delete_topics":
            decision = ops.on_delete_topics(ctx, zk.children(layout.DELETE_TOPICS))
        elif kind == "reassign":
            node = zk.get(layout.REASSIGN_PARTITIONS)
            targets = self._reassignments(node) if node else None
            decision = ops.on_partition_reassignment(ctx, targets)
        elif kind == "preferred":
            node = zk.get(layout.PREFERRED_REPLICA_ELECTION)
            partitions = [TopicPartition(*k) for k in codecs.decode_partition_list(
                layout.PREFERRED_REPLICA_ELECTION, node.data)] if node else None
            decision = ops.on_preferred_replica_election(ctx, partitions)
        elif kind == "isr_change":
            paths = [f"{layout.ISR_CHANGE_NOTIFICATION}/{c}" for c in zk.children(layout.ISR_CHANGE_NOTIFICATION)]
            tps = {TopicPartition(*k) for p in paths for k in codecs.decode_partition_list(p, zk.get(p).data)}
            decision = ops.on_isr_change(ctx, {tp: self._partition_state(tp) for tp in tps}, paths)
        elif kind == "stop_replica_response":
            decision = ops.on_stop_replica_response(ctx, event[1], event[2], dict(event[3]))
        elif kind == "rebalance":
            decision = ops.on_auto_leader_rebalance(ctx)
        elif kind == "config":
            node = zk.get(layout.topic_config(event[1]))
            config = codecs.decode_entity_config(layout.topic_config(event[1]), node.data) if node else {}
            decision = ops.on_topic_config_change(ctx, event[1], config)
        elif kind == "controlled_shutdown":
            decision = ops.on_controlled_shutdown(ctx, event[1], event[2])
        else:
            raise AssertionError(kind)
        for reply in self._execute(ctx, decision):
            self._on_shutdown_reply(reply)

    def enqueue(self, *event) -> None:
        if not self.events or self.events[-1] != event:
            self.events.append(event)

    def send(self, requests: Sequence[BrokerRequest]) -> None:
        for request in requests:
            broker = self.brokers[request.broker_id]
            if broker.running:
                broker.inbox.append(request)

    # --- brokers receiving requests

    def deliver(self, reliable: bool = False) -> None:
        """One request to one broker, at a random later step and in random
        order across brokers. Within one broker Kafka's channel keeps order;
        the simulation swaps two LeaderAndIsr/UpdateMetadata now and then
        (the brokers' epoch checks must cope), but never moves a request
        across a StopReplica or a full LeaderAndIsr. A replica deleted and
        then brought back by an older LeaderAndIsr would believe it leads
        with a stale zk version, and a re-created topic's state znode starts
        its versions over: only a reordering channel makes that possible."""
        ready = [b for b in self.brokers.values() if b.inbox]
        if not ready:
            return
        broker = self.rng.choice(ready)
        index = 0
        if not reliable and len(broker.inbox) > 1 and self.rng.random() < 0.1 * self.fault_rate \
                and all(_swappable(r) for r in broker.inbox[:2]):
            index = 1
            self._count("reordered")
        self.handle(broker, broker.inbox.pop(index), reliable)

    def handle(self, broker: FakeBroker, request: BrokerRequest, reliable: bool = False) -> None:
        if request.controller_epoch < broker.max_controller_epoch:
            return                                               # STALE_CONTROLLER_EPOCH
        if request.broker_epoch != broker.epoch:
            self._count("stale_broker_epoch")
            return                                               # STALE_BROKER_EPOCH
        broker.max_controller_epoch = request.controller_epoch
        if isinstance(request, LeaderAndIsr):
            for p in request.partitions:
                self._become_leader_or_follower(broker, p)
            if request.full:
                # KIP-516: a full request lists every partition the broker
                # hosts; anything else here is a leftover.
                listed = {p.topic_partition for p in request.partitions}
                for tp in [tp for tp in broker.replicas if tp not in listed]:
                    self._count("stray_removed")
                    del broker.replicas[tp]
        elif isinstance(request, StopReplica):
            errors = {}
            for p in request.partitions:
                errors[p.topic_partition] = self._stop_replica(broker, p, request.delete, reliable)
            if request.delete:
                self.enqueue("stop_replica_response", broker.broker_id, broker.epoch,
                             tuple(sorted(errors.items())))
        elif isinstance(request, UpdateMetadata):
            pass

    def _become_leader_or_follower(self, broker: FakeBroker, p) -> None:
        tp = p.topic_partition
        local = broker.replicas.get(tp)
        if local is not None and local.topic_id != p.topic_id:
            local = None                                         # an older topic of the same name
        if local is not None and local.leader is not None and p.leader_epoch <= local.leader_epoch:
            return                                               # stale or already applied
        broker.replicas[tp] = LocalReplica(p.topic_id, p.leader, p.leader_epoch, list(p.isr), p.zk_version,
                                           p.controller_epoch, p.replicas, p.leader_recovery_state)

    def _stop_replica(self, broker: FakeBroker, p, delete: bool, reliable: bool) -> int:
        tp = p.topic_partition
        local = broker.replicas.get(tp)
        if local is not None and p.leader_epoch not in (NO_EPOCH, EPOCH_DURING_DELETE) \
                and local.leader is not None and p.leader_epoch < local.leader_epoch:
            return FENCED_LEADER_EPOCH
        if delete and not reliable and self.rng.random() < 0.05 * self.fault_rate:
            return STORAGE_ERROR
        broker.replicas.pop(tp, None)
        return 0

    # --- leaders changing their ISR in ZooKeeper (Kafka's ZooKeeper-era AlterIsr)

    def leader_isr_change(self, broker: FakeBroker | None = None, tp: TopicPartition | None = None,
                          expand_only: bool = False) -> bool:
        if broker is None:
            leaders = [(b, t) for b in self.brokers.values() for t in sorted(b.replicas) if b.leads(t)]
            if not leaders:
                return False
            broker, tp = self.rng.choice(leaders)
        local = broker.replicas[tp]
        if not broker.registered:
            return False                 # no session, no writes
        caught_up = [r for r in local.replicas if r != broker.broker_id and self._follows(r, tp, broker, local)]
        isr = list(local.isr)
        recovery = local.leader_recovery_state
        if recovery == RECOVERING and (expand_only or self.rng.random() < 0.5):
            recovery = RECOVERED                       # the unclean leader finished recovering
        elif recovery == RECOVERED and (joining := [r for r in caught_up if r not in isr]) \
                and (expand_only or self.rng.random() < 0.6):
            isr += joining
        elif not expand_only:
            lagging = [r for r in isr if r != broker.broker_id and (r not in caught_up or self.rng.random() < 0.2)]
            if not lagging:
                return False
            isr.remove(self.rng.choice(lagging))
        else:
            return False
        if not self._still_leads(broker, tp, local):
            self._count("leader_isr_write_refused")
            return False
        state = PartitionState(broker.broker_id, local.leader_epoch, isr, local.controller_epoch, recovery)
        path = layout.partition_state(tp.topic, tp.partition)
        if self.zk.set(path, codecs.encode_partition_state(state), local.zk_version) is not WriteResult.OK:
            self._count("leader_isr_write_failed")
            return False
        self._count("leader_isr_write")
        local.isr, local.zk_version, local.leader_recovery_state = isr, local.zk_version + 1, recovery
        self.zk.create_sequential(layout.ISR_CHANGE_PREFIX, codecs.encode_partition_list([tp]))
        self.enqueue("isr_change")
        return True

    def _still_leads(self, broker: FakeBroker, tp: TopicPartition, local: LocalReplica) -> bool:
        """A leader's ISR write is fenced only by the state znode's version,
        and a re-created topic starts its versions over: a broker that missed
        its StopReplica (it was cut off when its replica moved away, then the
        topic was deleted and created again) could write into the new
        topic's state. So, as Kafka's checkLeaderAndIsrZkData and topic ids
        do, the broker first checks that the znode is still its topic's and
        its own leadership (seed 1025 at 300 steps finds the write without)."""
        topic = self.zk.get(layout.topic(tp.topic))
        stored = self._partition_state(tp)
        return (topic is not None and self._topic(tp.topic).topic_id == local.topic_id and stored is not None
                and (stored.leader, stored.leader_epoch, stored.zk_version)
                == (broker.broker_id, local.leader_epoch, local.zk_version))

    def _follows(self, broker_id: int, tp: TopicPartition, leader: FakeBroker, local: LocalReplica) -> bool:
        follower = self.brokers[broker_id]
        theirs = follower.replicas.get(tp)
        return (follower.running and theirs is not None and theirs.topic_id == local.topic_id
                and theirs.leader == leader.broker_id and theirs.leader_epoch == local.leader_epoch)

    # --- broker lifecycle

    def _start_broker(self, broker: FakeBroker) -> None:
        broker.running = True
        broker.shutdown_requested = False
        for local in broker.replicas.values():
            local.leader = None                        # leadership is in memory only
        self._register(broker)

    def _register(self, broker: FakeBroker) -> None:
        registration = BrokerRegistration(broker.broker_id, "localhost", 9000 + broker.broker_id,
                                          (f"PLAINTEXT://localhost:{9000 + broker.broker_id}",))
        node = self.zk.create(layout.broker(broker.broker_id), codecs.encode_broker(registration),
                              owner=broker.broker_id)
        broker.registered, broker.epoch = True, node.czxid
        self.enqueue("broker_change")

    def _deregister(self, broker: FakeBroker) -> None:
        if broker.registered:
            self.zk.delete(layout.broker(broker.broker_id))
            broker.registered = False
            self.enqueue("broker_change")

    def crash_broker(self) -> None:
        running = [b for b in self.brokers.values() if b.running]
        if len(running) <= 1:
            return
        broker = self.rng.choice(running)
        broker.running = False
        broker.inbox.clear()
        self._deregister(broker)

    def restart_broker(self) -> None:
        candidates = [b for b in self.brokers.values() if not b.running or not b.registered]
        if not candidates:
            return
        broker = self.rng.choice(candidates)
        if broker.running:
            self._register(broker)                     # a paused broker reconnects: new session, new epoch
        else:
            self._start_broker(broker)

    def lose_session(self) -> None:
        """A long pause or a network partition: the session expires, the
        process keeps its beliefs; with the partition, the requests on their
        way to it are lost too."""
        registered = [b for b in self.brokers.values() if b.registered]
        if len(registered) <= 1:
            return
        broker = self.rng.choice(registered)
        if broker.inbox and self.rng.random() < 0.5:
            self._count("lost")
            broker.inbox.clear()
        self._deregister(broker)

    def controlled_shutdown(self) -> None:
        candidates = [b for b in self.brokers.values() if b.registered and not b.shutdown_requested]
        if len(candidates) <= 1:
            return
        broker = self.rng.choice(candidates)
        broker.shutdown_requested = True
        self.enqueue("controlled_shutdown", broker.broker_id, broker.epoch)

    def _on_shutdown_reply(self, reply) -> None:
        broker = self.brokers[reply.broker_id]
        if not broker.shutdown_requested:
            return
        if reply.error is None and reply.partitions_remaining and self.rng.random() < 0.5:
            self.enqueue("controlled_shutdown", broker.broker_id, broker.epoch)   # try once more
            return
        if reply.error is None and reply.partitions_remaining:
            self._count("shutdown_with_partitions_remaining")
        broker.running = False
        broker.inbox.clear()
        self._deregister(broker)

    # --- admin

    def _registered_brokers(self) -> list[BrokerInfo]:
        return [BrokerInfo(int(c)) for c in self.zk.children(layout.BROKER_IDS)]

    def create_topic(self) -> None:
        free = [t for t in TOPIC_NAMES
                if not self.zk.get(layout.topic(t)) and not self.zk.get(layout.delete_topic(t))]
        brokers = self._registered_brokers()
        if not free or not brokers:
            return
        topic = self.rng.choice(free)
        try:
            partitions = assign_replicas(brokers, self.rng.randint(1, 3),
                                         self.rng.randint(1, min(3, len(brokers))), rng=self.rng)
        except AssignmentError:
            return
        self.zk.create(layout.topic(topic), codecs.encode_topic(
            TopicAssignment(partitions, topic_id=f"id-{topic}-{self.zk.zxid}")))
        self.enqueue("topic_change")

    def add_partition(self) -> None:
        topics = [t for t in self.zk.children(layout.BROKER_TOPICS)
                  if self.zk.get(layout.topic(t)) and not self.zk.get(layout.delete_topic(t))]
        brokers = self._registered_brokers()
        if not topics or not brokers:
            return
        topic = self.rng.choice(topics)
        current = self._topic(topic)
        if self.zk.get(layout.REASSIGN_PARTITIONS):
            return                       # Kafka's tool refuses while partitions move
        if current.adding_replicas or current.removing_replicas or len(current.partitions) >= 4:
            return
        factor = len(next(iter(current.partitions.values())))
        if factor > len(brokers):
            return
        added = assign_replicas(brokers, 1, factor, start_partition=len(current.partitions), rng=self.rng)
        partitions = {**current.partitions, **added}
        self.zk.set(layout.topic(topic), codecs.encode_topic(
            TopicAssignment(partitions, current.topic_id, current.adding_replicas, current.removing_replicas)))
        self.enqueue("topic_change")

    def delete_topic(self) -> None:
        topics = [t for t in self.zk.children(layout.BROKER_TOPICS)
                  if self.zk.get(layout.topic(t)) and not self.zk.get(layout.delete_topic(t))]
        if not topics:
            return
        self.zk.create(layout.delete_topic(self.rng.choice(topics)))
        self.enqueue("delete_topics")

    def reassign(self) -> None:
        if self.zk.get(layout.REASSIGN_PARTITIONS):
            return
        brokers = [b.broker_id for b in self._registered_brokers()]
        partitions = [TopicPartition(t, p) for t in self.zk.children(layout.BROKER_TOPICS)
                      if self.zk.get(layout.topic(t)) for p in self._topic(t).partitions]
        if not partitions or not brokers:
            return
        targets = {}
        for tp in self.rng.sample(partitions, min(len(partitions), self.rng.randint(1, 3))):
            size = self.rng.randint(1, min(3, len(brokers)))
            targets[(tp.topic, tp.partition)] = self.rng.sample(brokers, size)
        self.zk.create(layout.REASSIGN_PARTITIONS, codecs.encode_reassignment(targets))
        self.enqueue("reassign")

    def preferred_election(self) -> None:
        if self.zk.get(layout.PREFERRED_REPLICA_ELECTION):
            return
        partitions = [(t, p) for t in self.zk.children(layout.BROKER_TOPICS)
                      if self.zk.get(layout.topic(t)) for p in self._topic(t).partitions]
        if not partitions:
            return
        chosen = self.rng.sample(partitions, min(len(partitions), self.rng.randint(1, 4)))
        self.zk.create(layout.PREFERRED_REPLICA_ELECTION, codecs.encode_partition_list(chosen))
        self.enqueue("preferred")

    def auto_rebalance(self) -> None:
        self.enqueue("rebalance")

    def toggle_unclean(self) -> None:
        topics = [t for t in self.zk.children(layout.BROKER_TOPICS) if self.zk.get(layout.topic(t))]
        if not topics:
            return
        topic = self.rng.choice(topics)
        data = codecs.encode_entity_config({"unclean.leader.election.enable": self.rng.choice(("true", "false"))})
        path = layout.topic_config(topic)
        if self.zk.get(path):
            self.zk.set(path, data)
        else:
            self.zk.create(path, data)
        self.enqueue("config", topic)

    # --- checks

    def check(self) -> None:
        """After every step; parts whose inputs did not change are skipped."""
        if self.ctx is not self.previous:
            try:
                check_invariants(self.ctx, self.previous)
            except InvariantViolation as error:
                self.fail(f"invariant: {error}")
            self.previous = self.ctx
        for tp, assignment in self.ctx.assignments.items():
            if assignment.is_being_reassigned and tp not in self.ctx.reassignments \
                    and not self.ctx.is_queued_for_deletion(tp.topic):
                self.fail(f"{tp}: {assignment} moves, but no reassignment tracks it")
        seen = (id(self.ctx), self.zk.zxid, len(self.zk.nodes))
        if seen != self._checked:
            self._check_zookeeper()
            self._checked = seen
        self._check_brokers()

    def _check_zookeeper(self) -> None:
        ctx = self.ctx
        for topic in self.zk.children(layout.BROKER_TOPICS):
            node = self.zk.get(layout.topic(topic))
            if node is None:
                self.fail(f"{topic}: partition znodes without a topic znode")
            assignment = self._topic(topic)
            for partition in self.zk.children(layout.partitions(topic)):
                tp = TopicPartition(topic, int(partition))
                state = self._partition_state(tp)
                if state is None:
                    continue
                self._check_state(tp, assignment, state)
            if topic in ctx.topic_ids and topic not in ctx.topics_to_delete:
                self._check_assignment(topic, assignment)
        for tp, state in ctx.leadership.items():
            stored = self._partition_state(tp)
            if stored is None or stored.zk_version < state.zk_version:
                self.fail(f"{tp}: controller's state {state} is ahead of ZooKeeper's {stored}")
            if stored.zk_version == state.zk_version and stored != state:
                self.fail(f"{tp}: same zk version, different state: {state} vs {stored}")

    def _check_assignment(self, topic: str, stored: TopicAssignment) -> None:
        # Partitions the admin added and the controller has not seen yet are
        # in ZooKeeper only; everything the controller knows must match.
        for tp in self.ctx.partitions_of(topic):
            mine = self.ctx.assignments[tp]
            theirs = (tuple(stored.partitions.get(tp.partition, ())),
                      tuple(stored.adding_replicas.get(tp.partition, ())),
                      tuple(stored.removing_replicas.get(tp.partition, ())))
            if (mine.replicas, mine.adding, mine.removing) != theirs:
                self.fail(f"{tp}: controller holds {mine}, ZooKeeper {theirs}")

    def _check_state(self, tp: TopicPartition, assignment: TopicAssignment, state: PartitionState) -> None:
        replicas = assignment.partitions.get(tp.partition, [])
        unclean = state.leader_recovery_state == RECOVERING
        if state.leader != NO_LEADER and state.leader not in state.isr and not unclean:
            self.fail(f"{tp}: ZooKeeper leader {state.leader} not in ISR {state.isr}")
        if not set(state.isr) <= set(replicas):
            self.fail(f"{tp}: ZooKeeper ISR {state.isr} not within replicas {replicas}")
        key = (assignment.topic_id, tp.partition)
        if state.zk_version < self.state_versions.get(key, -1):
            self.fail(f"{tp}: zk version went back")
        self.state_versions[key] = state.zk_version
        if state.leader != NO_LEADER:
            key = (assignment.topic_id, tp.partition, state.leader_epoch)
            if self.epoch_leaders.setdefault(key, state.leader) != state.leader:
                self.fail(f"{tp}: leader epoch {state.leader_epoch} had leaders {self.epoch_leaders[key]} "
                          f"and {state.leader}")

    def _check_brokers(self) -> None:
        leaders: dict[tuple, int] = {}
        for broker in self.brokers.values():
            for tp, local in broker.replicas.items():
                if broker.leads(tp):
                    key = (local.topic_id, tp.partition, local.leader_epoch)
                    if key in leaders:
                        self.fail(f"{tp}: brokers {leaders[key]} and {broker.broker_id} both lead epoch "
                                  f"{local.leader_epoch}")
                    leaders[key] = broker.broker_id

    # --- healing and liveness

    def heal(self, rounds: int = 40) -> None:
        """Every broker up, a fresh controller, reliable delivery, followers
        catching up; then every piece of pending work must be finished."""
        self.step_number += 1
        for broker in self.brokers.values():
            broker.shutdown_requested = False          # pending controlled shutdowns are called off
            if not broker.running:
                self._start_broker(broker)
            elif not broker.registered:
                self._register(broker)
        self._drain()
        self.failover()
        for _ in range(rounds):
            self._drain()
            progressed = False
            for broker in self.brokers.values():
                for tp in sorted(broker.replicas):
                    if broker.leads(tp) and self.leader_isr_change(broker, tp, expand_only=True):
                        progressed = True
            self.check()
            if not progressed and not self.events and not any(b.inbox for b in self.brokers.values()):
                break
        self.check()
        self._check_finished()

    def _drain(self) -> None:
        for _ in range(10_000):
            if self.events:
                self.process_event()
            elif any(b.inbox for b in self.brokers.values()):
                self.deliver(reliable=True)
            else:
                return
            self.check()
        self.fail("the cluster did not settle")

    def _check_finished(self) -> None:
        ctx, zk = self.ctx, self.zk
        if zk.children(layout.DELETE_TOPICS) or ctx.topics_to_delete:
            self.fail(f"deletions not finished: znodes {zk.children(layout.DELETE_TOPICS)}, "
                      f"controller {sorted(ctx.topics_to_delete)}")
        if zk.get(layout.REASSIGN_PARTITIONS) or ctx.reassignments:
            self.fail(f"reassignments not finished: {sorted(ctx.reassignments)}")
        if zk.get(layout.PREFERRED_REPLICA_ELECTION):
            self.fail("preferred replica election znode left behind")
        if zk.children(layout.ISR_CHANGE_NOTIFICATION):
            self.fail("ISR change notifications left behind")
        for tp in ctx.all_partitions():
            state = ctx.leadership.get(tp)
            if state is None or state.leader == NO_LEADER:
                self.fail(f"{tp}: no leader with every broker up: {state}")
            if sorted(state.isr) != sorted(ctx.replicas(tp)):
                self.fail(f"{tp}: ISR {state.isr} not every replica {ctx.replicas(tp)} with all caught up")
            for broker_id in ctx.replicas(tp):
                local = self.brokers[broker_id].replicas.get(tp)
                if local is None or (local.leader, local.leader_epoch) != (state.leader, state.leader_epoch):
                    self.fail(f"{tp}: broker {broker_id} thinks {local}, ZooKeeper says {state}")


def _swappable(request: BrokerRequest) -> bool:
    return isinstance(request, UpdateMetadata) or (isinstance(request, LeaderAndIsr) and not request.full)


class SimZk:
    """The fake ZooKeeper as the core's ZkPort: random multi sizes, the
    epoch check in each, and now and then a leader's ISR write slipping in
    between the controller's read and its conditional write."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim

    def apply_writes(self, writes: Sequence[ZkWrite], controller_epoch_zk_version: int) -> list[WriteResult]:
        sim, zk = self.sim, self.sim.zk
        results: list[WriteResult] = []
        index = 0
        while index < len(writes):
            batch = writes[index:index + sim.rng.randint(1, 4)]
            index += len(batch)
            self._maybe_race(batch)
            if zk.get(layout.CONTROLLER_EPOCH).version != controller_epoch_zk_version:
                results.extend([WriteResult.CONTROLLER_MOVED] * len(batch))
                continue
            errors = [self._check(w) for w in batch]
            failing = next((i for i, e in enumerate(errors) if e is not WriteResult.OK), None)
            if failing is None:
                for write in batch:
                    self._apply(write)
                results.extend([WriteResult.OK] * len(batch))
            else:
                sim._count(f"write_{errors[failing].value}")
                results.extend(errors[failing] if i == failing else WriteResult.NOT_APPLIED
                               for i in range(len(batch)))
        return results

    def read_partition_states(self, partitions):
        return {tp: self.sim._partition_state(tp) for tp in partitions}

    def _maybe_race(self, batch: Sequence[ZkWrite]) -> None:
        """Someone else writes the state between the controller's read and
        its write: the leader changing the ISR, or (for a new partition) a
        broker's interim leadership claim creating the state first."""
        sim = self.sim
        if sim.rng.random() >= 0.25 * sim.fault_rate:
            return
        write = sim.rng.choice(list(batch))
        if isinstance(write, UpdatePartitionState):
            tp = write.topic_partition
            for broker in sim.brokers.values():
                if broker.leads(tp) and sim.leader_isr_change(broker, tp):
                    sim._count("raced")
                    return
        elif isinstance(write, CreatePartitionState) and sim.zk.get(layout.topic(write.topic)):
            leader = write.state.leader
            claim = PartitionState(leader, 0, [leader], write.state.controller_epoch - 1)
            path = layout.partition_state(write.topic, write.partition)
            sim.zk.create(path, codecs.encode_partition_state(claim))
            sim._count("raced_create")

    def _check(self, write: ZkWrite) -> WriteResult:
        zk = self.sim.zk
        if isinstance(write, CreatePartitionState):
            if not zk.get(layout.topic(write.topic)):
                return WriteResult.NO_NODE
            if zk.get(layout.partition_state(write.topic, write.partition)):
                return WriteResult.NODE_EXISTS
        elif isinstance(write, UpdatePartitionState):
            node = zk.get(layout.partition_state(write.topic, write.partition))
            if node is None:
                return WriteResult.NO_NODE
            if node.version != write.expected_zk_version:
                return WriteResult.BAD_VERSION
        elif isinstance(write, UpdateTopicAssignment):
            if not zk.get(layout.topic(write.topic)):
                return WriteResult.NO_NODE
        elif isinstance(write, (DeleteAdminPath, DeleteNotification, SetReassignments)):
            path = write.path if not isinstance(write, SetReassignments) else layout.REASSIGN_PARTITIONS
            if not zk.get(path):
                return WriteResult.NO_NODE
        return WriteResult.OK

    def _apply(self, write: ZkWrite) -> None:
        zk = self.sim.zk
        if isinstance(write, CreatePartitionState):
            path = layout.partition_state(write.topic, write.partition)
            zk.create(path, codecs.encode_partition_state(write.state))
        elif isinstance(write, UpdatePartitionState):
            path = layout.partition_state(write.topic, write.partition)
            result = zk.set(path, codecs.encode_partition_state(write.state), write.expected_zk_version)
            invariant(result is WriteResult.OK, f"checked write failed: {result}")
            invariant(zk.get(path).version == write.state.zk_version, "zk_version after the write differs")
        elif isinstance(write, UpdateTopicAssignment):
            zk.set(layout.topic(write.topic), codecs.encode_topic(write.assignment))
        elif isinstance(write, DeleteTopicZnodes):
            zk.delete(layout.topic(write.topic), recursive=True)
            zk.delete(layout.topic_config(write.topic))
        elif isinstance(write, (DeleteAdminPath, DeleteNotification)):
            zk.delete(write.path)
        elif isinstance(write, SetReassignments):
            zk.set(layout.REASSIGN_PARTITIONS, codecs.encode_reassignment(
                {(tp.topic, tp.partition): list(t) for tp, t in write.targets}))
