"""The simulation's runner: the steps, the controller, healing at the end.

The controller here is the real one minus its threads and sockets: it reads
ZooKeeper through the real read layer (zk_reads.ControllerReads, whose reads
leave the watches the real controller relies on), decides with the core and
carries decisions out with `execution.execute`. Its watches only queue
events; each step does one thing: deliver a fired watch to the controller,
handle one queued event, deliver one request to a broker, or an admin, broker
or fault action (see _choose_action). Handling an event, the controller may
be killed between two batches of its writes (client.py, KILL_*): the rest
of what it was doing never happens, and another controller takes over.
"""

from __future__ import annotations

import random
from collections import deque

from kafkactl.cluster.controller import decisions as ops
from kafkactl.cluster.controller import events as ev
from kafkactl.cluster.controller.context import ControllerConfig, ControllerContext
from kafkactl.cluster.controller.execution import execute
from kafkactl.cluster.controller.invariants import check_invariants
from kafkactl.cluster.controller.model import TopicPartition
from kafkactl.cluster.controller.simulation.admin import AdminActions
from kafkactl.cluster.controller.simulation.api_admin import ApiAdminActions, Expectation
from kafkactl.cluster.controller.simulation.brokers import BrokerActions, FakeBroker
from kafkactl.cluster.controller.simulation.checks import Checks
from kafkactl.cluster.controller.simulation.client import SimStore, SimZk
from kafkactl.cluster.controller.simulation.zookeeper import FakeZooKeeper
from kafkactl.cluster.controller.state_watches import ReassigningStateWatches
from kafkactl.cluster.controller.testing import ControllerKilled
from kafkactl.cluster.controller.zk_reads import ControllerReads
from kafkactl.cluster.invariant import InvariantViolation, invariant
from kafkactl.cluster.zk import codecs, layout
from kafkactl.cluster.zk.codecs import PartitionState, TopicAssignment

# The chance that the controller is killed before each batch of its writes:
# while it carries out an AlterPartitionReassignments (the operation whose
# steps a failover must resume exactly), and while it does anything else.
KILL_IN_API_REASSIGNMENT = 0.15
KILL_ELSEWHERE = 0.003
LOG_DIR_FAILURE_PER_STEP = 0.004     # about one a seed of 200 steps


class Simulation(BrokerActions, AdminActions, ApiAdminActions, Checks):
    def __init__(self, seed: int, broker_count: int | None = None, fault_rate: float = 1.0) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        # Log dir failures draw from a generator of their own: a seed runs
        # as it did before they were simulated until the first one.
        self.log_dir_rng = random.Random(seed ^ 0x5EED)
        self.zk = FakeZooKeeper()
        self.step_number = 0
        self.fault_rate = fault_rate
        self.healing = False                 # no more admin writes racing the controller's reads
        count = broker_count or self.rng.randint(3, 5)
        self.brokers = {i: FakeBroker(i) for i in range(1, count + 1)}
        self.events: deque[ev.ControllerEvent] = deque()  # the controller's event queue
        self.config = ControllerConfig(
            unclean_leader_election_enable=self.rng.random() < 0.2,
            leader_imbalance_per_broker_percentage=self.rng.choice((0, 10, 50)),
        )
        self.ctx: ControllerContext | None = None
        self.previous: ControllerContext | None = None
        self.reads: ControllerReads | None = None
        self.state_watches = ReassigningStateWatches(self.events.append)   # the controller's, unchanged
        self.port = SimZk(self)
        self.epoch_leaders: dict[tuple[str | None, int, int], int] = {}   # (topic id, p, leader epoch) -> leader
        self.state_versions: dict[tuple[str | None, int], int] = {}
        # broker -> (its broker epoch, partitions it told the controller it cannot store); see Checks
        self.unable_to_store: dict[int, tuple[int, set[tuple[TopicPartition, str | None]]]] = {}
        self.stats: dict[str, int] = {}
        self._checked: tuple = ()
        self.kill_rate = 0.0                  # see KILL_*; SimZk kills the controller at this rate
        self.expected: dict[TopicPartition, Expectation] = {}   # see api_admin.py
        self.zk.create(layout.CONTROLLER_EPOCH, codecs.encode_controller_epoch(0))
        for broker in self.brokers.values():
            self.start_broker(broker)
        self.failover()

    # --- driving

    def run(self, steps: int) -> None:
        for _ in range(steps):
            self.step()
        self.heal()

    def step(self) -> None:
        self.step_number += 1
        self.zk.step = self.step_number
        action = self._choose_action()
        if self.log_dir_rng.random() < LOG_DIR_FAILURE_PER_STEP * self.fault_rate:
            self.count("fail_log_dir")
            self.fail_log_dir()
        self.count(action.__name__)
        action()
        self.check()

    def _choose_action(self):
        f = self.fault_rate
        weighted = [
            (self.process_event, 30), (self.notify, 20), (self.deliver, 30), (self.leader_isr_change, 8),
            (self.create_topic, 4), (self.add_partition, 1), (self.delete_topic, 2),
            (self.reassign, 3), (self.api_reassign, 2), (self.preferred_election, 1), (self.auto_rebalance, 1),
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

    def count(self, name: str) -> None:
        self.stats[name] = self.stats.get(name, 0) + 1

    # --- what the checks and the actors read (decoded once per znode version)

    def topic(self, topic: str) -> TopicAssignment:
        node = self.zk.get(layout.topic(topic))
        if node.decoded is None:
            node.decoded = codecs.decode_topic(topic, node.data)
        return node.decoded

    def partition_state(self, tp) -> PartitionState | None:
        path = layout.partition_state(tp.topic, tp.partition)
        node = self.zk.get(path)
        if node is not None and node.decoded is None:
            node.decoded = codecs.decode_partition_state(path, node.data, node.version)
        return node.decoded if node else None

    # --- the controller

    def failover(self) -> None:
        """A new controller: epoch + 1 in ZooKeeper, everything read through
        the read layer (arming its watches), context loaded from it. The old
        controller, if it tries anything, must be fenced."""
        old = self.ctx
        node = self.zk.get(layout.CONTROLLER_EPOCH)
        epoch = codecs.decode_controller_epoch(node.data) + 1
        self.zk.set(layout.CONTROLLER_EPOCH, codecs.encode_controller_epoch(epoch))
        epoch_version = self.zk.get(layout.CONTROLLER_EPOCH).version
        live = [b.broker_id for b in self.brokers.values() if b.registered]
        controller_id = self.rng.choice(live) if live else 1
        # The old controller's watches and queued events are ignored from now
        # on (it resigned); the new one reads everything afresh.
        self.zk.new_session()
        self.events.clear()
        self.unable_to_store.clear()            # a new controller has not been told yet
        self.state_watches.reset()
        self.reads = ControllerReads(SimStore(self), self._watch)
        snapshot, notifications = self.reads.cluster(epoch, epoch_version, self.port.read_partition_states)
        ctx = ops.load_context(snapshot, controller_id, self.config)
        if any(r not in snapshot.brokers for s in snapshot.partition_states.values() for r in s.isr):
            self.count("failover_with_dead_isr_members")   # the case seed 000 D step 5 is about
        self.previous = self.previous or ctx
        self.kill_rate = 0.0 if self.healing else KILL_ELSEWHERE * self.fault_rate
        try:
            self._execute(ctx, ops.on_controller_failover(ctx, notifications))
        except ControllerKilled:
            self.controller_killed(controller_id)     # during its own failover: yet another one takes over
            return
        finally:
            self.kill_rate = 0.0
        self.check_isr_members_live()
        if old is not None and self.rng.random() < 0.3:
            self.check_old_controller_fenced(old)

    def _watch(self, name: str) -> QueueEvent:
        return QueueEvent(self.events, ev.WATCH_EVENTS[name])

    def notify(self) -> None:
        """The oldest fired watch reaches the controller."""
        notification = self.zk.deliver()
        if notification is None:
            return
        if self.zk.zxid > notification.zxid:
            self.count("watch_delivered_late")             # other writes went on meanwhile
        if self.zk.reads.get(notification.event.path, 0) > notification.reads:
            self.count("watch_delivered_after_reread")     # the controller saw the change first

    def enqueue(self, event: ev.ControllerEvent) -> None:
        """Events that do not come from ZooKeeper: broker requests and responses, timers."""
        if not self.events or self.events[-1] != event:
            self.events.append(event)

    def auto_rebalance(self) -> None:
        self.enqueue(ev.AutoPreferredReplicaLeaderElection())

    def process_event(self) -> None:
        if not self.events:
            return
        event = self.events.popleft()
        self.count(f"event_{event.name}")
        api = isinstance(event, ev.ApiPartitionReassignment)
        if not self.healing:
            self.kill_rate = (KILL_IN_API_REASSIGNMENT if api else KILL_ELSEWHERE) * self.fault_rate
        try:
            if api:
                self.handle_api_reassignment(event)
                return
            # Reads first (as the real controller's handlers do), then the
            # decisions on the context of the moment; by type, as Controller.process.
            for make in self._handlers[type(event)](self, event):
                for reply in self._execute(self.ctx, make(self.ctx)):
                    self.on_shutdown_reply(reply)
        except ControllerKilled:
            self.kill_rate = 0.0
            self.controller_killed(self.ctx.controller_id)
        finally:
            self.kill_rate = 0.0

    def controller_killed(self, controller_id: int) -> None:
        """kill -9 of the controller's process between two of its writes:
        what it was doing stops there, its queued events and answers are
        lost, its broker dies with it (half the time; otherwise only its
        controller stops, as when it resigns), and another controller takes
        over from what ZooKeeper holds."""
        self.count("controller_killed")
        broker = self.brokers.get(controller_id)
        running = [b for b in self.brokers.values() if b.running]
        if broker is not None and broker.running and len(running) > 1 and self.rng.random() < 0.5:
            broker.running = False
            broker.inbox.clear()
            self._deregister(broker)
        self.failover()

    def _broker_change(self, _event) -> list:
        registrations = self.reads.brokers()
        return [lambda c: ops.on_broker_change(c, registrations)]

    def _topic_change(self, _event) -> list:
        topics = self.reads.topics()
        return [lambda c: ops.on_topic_change(c, topics)]

    def _topic_deletion(self, _event) -> list:
        to_delete = self.reads.topics_to_delete()
        return [lambda c: ops.on_delete_topics(c, to_delete)]

    def _reassignment(self, _event) -> list:
        targets = self.reads.reassignments()
        return [lambda c: ops.on_partition_reassignment(c, targets or None)]

    def _preferred(self, _event) -> list:
        partitions = self.reads.preferred()
        steps = []
        if partitions is not None:     # elect on ZooKeeper's states, as Controller._refresh_states
            states = self.port.read_partition_states([tp for tp in partitions if tp in self.ctx.assignments])
            steps.append(lambda c: ops.on_isr_change(c, states))
        return [*steps, lambda c: ops.on_preferred_replica_election(c, partitions)]

    def _isr_change(self, _event) -> list:
        states, paths = self.reads.isr_changes(self.port.read_partition_states)
        return [lambda c: ops.on_isr_change(c, states, paths)]

    def _config_change(self, _event) -> list:
        configs = self.reads.config_changes(sorted(self.ctx.topic_ids))
        return [lambda c, t=t, cf=cf: ops.on_topic_config_change(c, t, cf) for t, cf in configs.items()]

    def _watch_reassigning(self, event) -> list:
        states = self.state_watches.read(self.ctx, event.partitions, self.reads.store)
        return [lambda c: ops.on_isr_change(c, states)] if states else []

    def _reassigning_states_changed(self, _event) -> list:
        partitions, _paths = self.state_watches.take_fired()
        states = self.state_watches.read(self.ctx, partitions, self.reads.store)
        return [lambda c: ops.on_isr_change(c, states)] if states else []

    def _log_dir_event(self, _event) -> list:
        brokers, paths = self.reads.log_dir_events()
        return [lambda c: ops.on_log_dir_event(c, brokers, paths)]

    def _storage_errors(self, event) -> list:
        self.note_storage_errors(event)          # what the checks hold the controller to from now on
        return [lambda c: ops.on_leader_and_isr_response(c, event.broker_id, event.broker_epoch, event.offline)]

    _handlers = {
        ev.WatchReassigningStates: _watch_reassigning,
        ev.PartitionReassignmentIsrChange: _reassigning_states_changed,
        ev.BrokerChange: _broker_change, ev.TopicChange: _topic_change, ev.TopicDeletion: _topic_deletion,
        ev.PartitionReassignment: _reassignment, ev.PreferredReplicaElection: _preferred,
        ev.IsrChangeNotification: _isr_change, ev.ConfigChange: _config_change,
        ev.LogDirEventNotification: _log_dir_event,
        ev.StopReplicaResponseReceived: lambda _self, e: [
            lambda c: ops.on_stop_replica_response(c, e.broker_id, e.broker_epoch, dict(e.errors))],
        ev.LeaderAndIsrResponseReceived: _storage_errors,
        ev.AutoPreferredReplicaLeaderElection: lambda _self, _e: [ops.on_auto_leader_rebalance],
        ev.ControlledShutdown: lambda _self, e: [
            lambda c: ops.on_controlled_shutdown(c, e.broker_id, e.broker_epoch)],
    }

    def _execute(self, ctx: ControllerContext, decision) -> list:
        def check(context: ControllerContext, retrying) -> None:
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
            self.ctx, replies = execute(ctx, decision, self.port, self.send, on_outcome=check)
        except InvariantViolation as error:
            self.fail(f"invariant: {error}")
        self.state_watches.after_step(self.ctx)     # as Controller._run, after every step
        return replies

    # --- healing and liveness

    def heal(self, rounds: int = 40) -> None:
        """Every broker up, reliable delivery, everything queued handled: the
        controller must have read every admin znode by then. Then a fresh
        controller, followers catching up; every piece of pending work must
        be finished."""
        self.step_number += 1
        self.zk.step = self.step_number
        self.healing = True
        self._drain()                                  # before the restarts repair the failed dirs
        self.check_failed_dirs_acted_on()
        for broker in self.brokers.values():
            broker.shutdown_requested = False          # pending controlled shutdowns are called off
            if broker.running and broker.offline:      # an offline log dir comes back with a restart
                broker.running = False
                broker.inbox.clear()
                self._deregister(broker)
            if not broker.running:
                self.start_broker(broker)
            elif not broker.registered:
                self.register(broker)
        self._drain()
        self.check_admin_read()
        self.check_isr_changes_taken_in()
        self.failover()
        for _ in range(rounds):
            self._drain()
            progressed = False
            for broker in self.brokers.values():
                for tp in sorted(broker.replicas):
                    if broker.leads(tp) and self.leader_isr_change(broker, tp, expand_only=True):
                        progressed = True
            self.check()
            if not progressed and not self._busy():
                break
        self.check()
        self.check_finished()
        self.check_api_outcomes()

    def _busy(self) -> bool:
        return bool(self.zk.notifications or self.events or any(b.inbox for b in self.brokers.values()))

    def _drain(self) -> None:
        for _ in range(10_000):
            if self.zk.notifications:
                self.notify()
            elif self.events:
                self.process_event()
            elif any(b.inbox for b in self.brokers.values()):
                self.deliver(reliable=True)
            else:
                return
            self.check()
        self.fail("the cluster did not settle")


class QueueEvent:
    """The callback a read leaves as its watch, as the real controller's: it
    only queues the event (one thread owns the controller's state). Compared
    by identity, as kazoo does; `event` lets the checks see what it queues."""

    __slots__ = ("events", "event")

    def __init__(self, events: deque, event: ev.ControllerEvent) -> None:
        self.events = events
        self.event = event

    def __call__(self, _watched=None) -> None:
        self.events.append(self.event)
