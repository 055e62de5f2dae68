"""What the simulation checks, after every step and at the end.

After every step: the core's invariants, ZooKeeper's content (against the
controller's mirror and its own history), that no two brokers lead a
partition in the same leader epoch, and that no partition is led by a
replica its broker told the controller it cannot store (KAFKA_STORAGE_ERROR)
since the broker last registered (and the controller took over). After each controller failover: no dead
broker left in an ISR. Once the cluster is healed: every admin znode the
tool wrote was read by the controller (through its watches, before any new
controller read everything afresh) and every announced ISR change taken in,
and then every piece of work finished.
"""

from __future__ import annotations

from dataclasses import replace

from kafkactl.cluster.controller.context import ControllerContext
from kafkactl.cluster.controller.execution import execute
from kafkactl.cluster.controller.invariants import check_invariants
from kafkactl.cluster.controller.model import (
    NO_LEADER, RECOVERING, ControllerFencedError, Decision, TopicPartition, UpdatePartitionState,
)
from kafkactl.cluster.controller.simulation.client import SimZk
from kafkactl.cluster.invariant import InvariantViolation
from kafkactl.cluster.zk import codecs, layout
from kafkactl.cluster.zk.codecs import PartitionState, TopicAssignment


class SimulationFailure(AssertionError):
    """A property did not hold; the message names the seed and step."""


class Checks:
    """The checks of `Simulation` (a mixin: it shares its state)."""

    def fail(self, message: str) -> None:
        raise SimulationFailure(f"seed {self.seed}, step {self.step_number}: {message}")

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
        if self.zk.piled_up:
            self.fail(f"watch callbacks pile up: {self.zk.piled_up[0]}")
        seen = (id(self.ctx), self.zk.zxid, len(self.zk.nodes))
        if seen != self._checked:
            self._check_zookeeper()
            self._checked = seen
        self._check_brokers()
        if self.unable_to_store:
            self._check_offline_dirs()
        self.forget_superseded()

    def _check_zookeeper(self) -> None:
        ctx = self.ctx
        for topic in self.zk.children(layout.BROKER_TOPICS):
            node = self.zk.get(layout.topic(topic))
            if node is None:
                self.fail(f"{topic}: partition znodes without a topic znode")
            assignment = self.topic(topic)
            for partition in self.zk.children(layout.partitions(topic)):
                tp = TopicPartition(topic, int(partition))
                state = self.partition_state(tp)
                if state is None:
                    continue
                self._check_state(tp, assignment, state)
            if topic in ctx.topic_ids and topic not in ctx.topics_to_delete:
                self._check_assignment(topic, assignment)
        for tp, state in ctx.leadership.items():
            stored = self.partition_state(tp)
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

    def note_storage_errors(self, event) -> None:
        """The controller is about to handle a LeaderAndIsr answered with
        KAFKA_STORAGE_ERROR: from now on, until the broker registers again
        or another controller takes over, none of those partitions (of the
        topic known now: a topic re-created under its name is another) may
        be led by that broker. An answer from an earlier incarnation, or
        from a broker the controller holds dead, tells it nothing."""
        ctx = self.ctx
        if event.broker_epoch != ctx.broker_epoch(event.broker_id):
            return
        epoch, held = self.unable_to_store.get(event.broker_id, (event.broker_epoch, set()))
        if epoch != event.broker_epoch:
            held = set()
        held.update((tp, ctx.topic_ids.get(tp.topic)) for tp in event.offline if tp in ctx.assignments)
        if held:
            self.unable_to_store[event.broker_id] = (event.broker_epoch, held)
            self.count("offline_dir_remembered")

    def _check_offline_dirs(self) -> None:
        ctx = self.ctx
        for broker_id, (epoch, held) in self.unable_to_store.items():
            if self.brokers[broker_id].epoch != epoch:
                continue                     # registered again: the controller may forget
            for tp, topic_id in held:
                if ctx.topic_ids.get(tp.topic) != topic_id or ctx.is_queued_for_deletion(tp.topic):
                    continue
                mine, stored = ctx.leadership.get(tp), self.partition_state(tp)
                for where, state in (("the controller", mine), ("ZooKeeper", stored)):
                    if state is not None and state.leader == broker_id:
                        self.fail(f"{tp}: {where} has it led by broker {broker_id}, which answered "
                                  f"KAFKA_STORAGE_ERROR for it in broker epoch {epoch}")
                self.count("offline_dir_checked")

    def check_failed_dirs_acted_on(self) -> None:
        """Once everything queued is delivered and handled, no partition is
        led by a broker that cannot store it: every log dir failure a broker
        announced, and every storage error it answered, reached the
        controller (a controller that ignored log dir event notifications
        would leave leaders on failed dirs for good)."""
        ctx = self.ctx
        for broker in self.brokers.values():
            registration = ctx.live_brokers.get(broker.broker_id)
            if not broker.running or registration is None or registration.broker_epoch != broker.epoch:
                continue
            for tp in sorted(broker.offline):
                state = ctx.leadership.get(tp)
                if tp in ctx.assignments and not ctx.is_queued_for_deletion(tp.topic) \
                        and state is not None and state.leader == broker.broker_id:
                    self.fail(f"{tp}: still led by broker {broker.broker_id}, whose log dir for it failed")
                self.count("failed_dir_checked")

    # --- after a controller failover

    def check_isr_members_live(self) -> None:
        """Once a new controller has acted, no partition it can lead keeps a
        dead broker in its ISR (seed 000 D step 5)."""
        ctx = self.ctx
        for tp, state in ctx.leadership.items():
            if ctx.is_queued_for_deletion(tp.topic) or not ctx.has_live_leader(tp):
                continue
            dead = [r for r in state.isr if not ctx.is_broker_live(r)]
            if dead:
                self.fail(f"{tp}: ISR {state.isr} keeps dead brokers {dead} after the controller failover")
        self.count("failover_isr_checked")

    def check_old_controller_fenced(self, old: ControllerContext) -> None:
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
            self.count("old_controller_fenced")
            return
        self.fail("a replaced controller's write went through")

    # --- at the end

    def check_admin_read(self) -> None:
        """Every admin znode the tool wrote has been read by the controller,
        which learns of them only through its watches. Run once everything
        queued has been delivered and handled, before a new controller reads
        everything afresh (which would hide a lost watch)."""
        ctx, zk = self.ctx, self.zk
        if zk.unread_admin:
            unread = ", ".join(f"{path} (created at step {step})"
                               for path, (_, step) in sorted(zk.unread_admin.items()))
            self.fail(f"the controller never read {unread}: a watch was lost")
        # Read and acted on: what is left in ZooKeeper is what the controller is working on.
        node = zk.get(layout.REASSIGN_PARTITIONS)
        listed = {TopicPartition(*k): tuple(v) for k, v in codecs.decode_reassignment(node.data).items()} \
            if node else {}
        if listed != ctx.reassign_admin:
            self.fail(f"{layout.REASSIGN_PARTITIONS} lists {listed}, the controller {ctx.reassign_admin}")
        marked = set(zk.children(layout.DELETE_TOPICS))
        if not marked <= ctx.topics_to_delete:
            self.fail(f"topics {sorted(marked - ctx.topics_to_delete)} marked for deletion, not being deleted")
        if zk.get(layout.PREFERRED_REPLICA_ELECTION):
            self.fail(f"{layout.PREFERRED_REPLICA_ELECTION} read but left in place")
        self.count("admin_read_checked")

    def check_isr_changes_taken_in(self) -> None:
        """Every ISR change a leader wrote (and announced) is in the
        controller's context once everything queued has been handled; a
        notification deleted without its change being read (say, listed
        after the states were read) would leave it out until the next
        failover, and a reassignment waiting for that ISR with it. Run when
        check_admin_read runs, for the same reason."""
        for tp, state in self.ctx.leadership.items():
            stored = self.partition_state(tp)
            if not self.ctx.is_queued_for_deletion(tp.topic) and stored != state:
                self.fail(f"{tp}: the controller holds {state}, ZooKeeper {stored}: an ISR change was missed")

    def check_finished(self) -> None:
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
        if zk.children(layout.LOG_DIR_EVENT_NOTIFICATION):
            self.fail("log dir event notifications left behind")
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
