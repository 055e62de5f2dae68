"""The simulation's fake brokers.

They apply LeaderAndIsr/StopReplica with Kafka's epoch checks, receive
requests at random later steps (sometimes two swapped), crash, restart with
a new broker epoch, lose their session while still running, ask for a
controlled shutdown, and as leaders change their ISR in ZooKeeper
themselves (Kafka's ZooKeeper-era AlterIsr), announcing it with an ISR
change notification, which makes the controller's conditional writes fail.

A broker may also find it cannot store a partition it is told about (its
log dir for it is offline): it answers that LeaderAndIsr entry with
KAFKA_STORAGE_ERROR, and every later one too, until it restarts. Or one of
its log dirs fails while it serves (KIP-112): the replicas on it stop (it
no longer leads or follows them), and it writes a log dir event
notification, which fires the controller's watch; its LeaderAndIsr
answers then name those replicas.

The controller hears of brokers only through ZooKeeper: registrations and
ISR change notifications fire its watches. Only controlled shutdown (a
request) and the responses it acts on (StopReplica with delete, LeaderAndIsr
with storage errors) go to its event queue directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kafkactl.cluster.controller import events as ev
from kafkactl.cluster.controller.model import (
    EPOCH_DURING_DELETE, NO_EPOCH, RECOVERED, RECOVERING, BrokerRequest, LeaderAndIsr, StopReplica,
    TopicPartition, UpdateMetadata, WriteResult,
)
from kafkactl.cluster.zk import codecs, layout
from kafkactl.cluster.zk.codecs import BrokerRegistration, PartitionState

STORAGE_ERROR = 56                      # KAFKA_STORAGE_ERROR
FENCED_LEADER_EPOCH = 74


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
    offline: set[TopicPartition] = field(default_factory=set)   # answered KAFKA_STORAGE_ERROR until restart

    def leads(self, tp: TopicPartition) -> bool:
        local = self.replicas.get(tp)
        return self.running and local is not None and local.leader == self.broker_id


def _no_answer(_answer) -> None:
    """The simulation answers a controlled shutdown from the decision's reply (on_shutdown_reply)."""


def _swappable(request: BrokerRequest) -> bool:
    return isinstance(request, UpdateMetadata) or (isinstance(request, LeaderAndIsr) and not request.full)


class BrokerActions:
    """The brokers' part of `Simulation` (a mixin: it shares its state)."""

    def send(self, requests) -> None:
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
            self.count("reordered")
        self.handle(broker, broker.inbox.pop(index), reliable)

    def handle(self, broker: FakeBroker, request: BrokerRequest, reliable: bool = False) -> None:
        if request.controller_epoch < broker.max_controller_epoch:
            return                                               # STALE_CONTROLLER_EPOCH
        if request.broker_epoch != broker.epoch:
            self.count("stale_broker_epoch")
            return                                               # STALE_BROKER_EPOCH
        broker.max_controller_epoch = request.controller_epoch
        if isinstance(request, LeaderAndIsr):
            failed = []
            for p in request.partitions:
                if self._storage_error(broker, p.topic_partition, reliable):
                    failed.append(p.topic_partition)
                else:
                    self._become_leader_or_follower(broker, p)
            if failed:
                self.enqueue(ev.LeaderAndIsrResponseReceived(broker.broker_id, broker.epoch, tuple(failed)))
            if request.full:
                # KIP-516: a full request lists every partition the broker
                # hosts; anything else here is a leftover.
                listed = {p.topic_partition for p in request.partitions}
                for tp in [tp for tp in broker.replicas if tp not in listed]:
                    self.count("stray_removed")
                    del broker.replicas[tp]
        elif isinstance(request, StopReplica):
            errors = {}
            for p in request.partitions:
                errors[p.topic_partition] = self._stop_replica(broker, p, request.delete, reliable)
            if request.delete:
                self.enqueue(ev.StopReplicaResponseReceived(broker.broker_id, broker.epoch,
                                                            tuple(sorted(errors.items()))))
        elif isinstance(request, UpdateMetadata):
            pass

    def _storage_error(self, broker: FakeBroker, tp: TopicPartition, reliable: bool) -> bool:
        """A partition the broker does not hold yet may find its log dir
        offline (creating its log fails), now and then."""
        if tp in broker.offline:
            return True
        if tp in broker.replicas or reliable or self.rng.random() >= 0.01 * self.fault_rate:
            return False
        self.count("storage_error")
        broker.offline.add(tp)
        return True

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
            self.count("leader_isr_write_refused")
            return False
        state = PartitionState(broker.broker_id, local.leader_epoch, isr, local.controller_epoch, recovery)
        path = layout.partition_state(tp.topic, tp.partition)
        if self.zk.set(path, codecs.encode_partition_state(state), local.zk_version) is not WriteResult.OK:
            self.count("leader_isr_write_failed")
            return False
        self.count("leader_isr_write")
        local.isr, local.zk_version, local.leader_recovery_state = isr, local.zk_version + 1, recovery
        # The controller's child watch on the notifications tells it.
        self.zk.create_sequential(layout.ISR_CHANGE_PREFIX, codecs.encode_partition_list([tp]))
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
        stored = self.partition_state(tp)
        return (topic is not None and self.topic(tp.topic).topic_id == local.topic_id and stored is not None
                and (stored.leader, stored.leader_epoch, stored.zk_version)
                == (broker.broker_id, local.leader_epoch, local.zk_version))

    def _follows(self, broker_id: int, tp: TopicPartition, leader: FakeBroker, local: LocalReplica) -> bool:
        follower = self.brokers[broker_id]
        theirs = follower.replicas.get(tp)
        return (follower.running and theirs is not None and theirs.topic_id == local.topic_id
                and theirs.leader == leader.broker_id and theirs.leader_epoch == local.leader_epoch)

    # --- broker lifecycle

    def start_broker(self, broker: FakeBroker) -> None:
        broker.running = True
        broker.shutdown_requested = False
        broker.offline.clear()                         # its log dirs were repaired
        for local in broker.replicas.values():
            local.leader = None                        # leadership is in memory only
        self.register(broker)

    def register(self, broker: FakeBroker) -> None:
        # The controller's child watch on /brokers/ids tells it.
        registration = BrokerRegistration(broker.broker_id, "localhost", 9000 + broker.broker_id,
                                          (f"PLAINTEXT://localhost:{9000 + broker.broker_id}",))
        node = self.zk.create(layout.broker(broker.broker_id), codecs.encode_broker(registration),
                              owner=broker.broker_id)
        broker.registered, broker.epoch = True, node.czxid

    def _deregister(self, broker: FakeBroker) -> None:
        if broker.registered:
            self.zk.delete(layout.broker(broker.broker_id))
            broker.registered = False

    def fail_log_dir(self) -> None:
        """A running broker's log dir fails: some of its replicas (those in
        that dir) go offline there, and it tells the controller."""
        candidates = [b for b in self.brokers.values() if b.running and b.registered and b.replicas]
        if not candidates:
            return
        rng = self.log_dir_rng
        broker = rng.choice(candidates)
        hosted = sorted(broker.replicas)
        on_dir = [tp for tp in hosted if rng.random() < 0.5] or [rng.choice(hosted)]
        for tp in on_dir:
            del broker.replicas[tp]                    # it stops leading and following them
            broker.offline.add(tp)
        self.count("log_dir_failed")
        self.zk.create_sequential(layout.LOG_DIR_EVENT_PREFIX, codecs.encode_log_dir_event(broker.broker_id))

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
            self.register(broker)                      # a paused broker reconnects: new session, new epoch
        else:
            self.start_broker(broker)

    def lose_session(self) -> None:
        """A long pause or a network partition: the session expires, the
        process keeps its beliefs; with the partition, the requests on their
        way to it are lost too."""
        registered = [b for b in self.brokers.values() if b.registered]
        if len(registered) <= 1:
            return
        broker = self.rng.choice(registered)
        if broker.inbox and self.rng.random() < 0.5:
            self.count("lost")
            broker.inbox.clear()
        self._deregister(broker)

    def controlled_shutdown(self) -> None:
        candidates = [b for b in self.brokers.values() if b.registered and not b.shutdown_requested]
        if len(candidates) <= 1:
            return
        broker = self.rng.choice(candidates)
        broker.shutdown_requested = True
        self.enqueue(ev.ControlledShutdown(broker.broker_id, broker.epoch, _no_answer))

    def on_shutdown_reply(self, reply) -> None:
        broker = self.brokers[reply.broker_id]
        if not broker.shutdown_requested:
            return
        if reply.error is None and reply.partitions_remaining and self.rng.random() < 0.5:
            self.enqueue(ev.ControlledShutdown(broker.broker_id, broker.epoch, _no_answer))   # try once more
            return
        if reply.error is None and reply.partitions_remaining:
            self.count("shutdown_with_partitions_remaining")
        broker.running = False
        broker.inbox.clear()
        self._deregister(broker)
