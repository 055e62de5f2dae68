"""The controller: the thin I/O layer around the pure decision core.

Every broker runs one `Controller`; the one that wins the election through
ZooKeeper is active. ZooKeeper watches, broker responses, timers and
controlled-shutdown requests only enqueue events (`ControllerEventManager`);
the single event thread reads what changed, asks the core for a `Decision`
and carries it out with `execution.execute`: fenced ZooKeeper writes through
`ZkPort`, requests to brokers through `ControllerChannel`.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections.abc import Callable
from functools import partial

from kazoo.protocol.states import KazooState
from kazoo.recipe.watchers import DataWatch
from kio.schema.errors import ErrorCode

from kafkactl.cluster.controller import (
    broker_change, deletion, failover, isr_change, preferred, reassignment, shutdown, topic_change, zk_reads,
)
from kafkactl.cluster.controller.channel import BrokerEndpoint, ControllerChannel
from kafkactl.cluster.controller.context import ControllerConfig, ControllerContext
from kafkactl.cluster.controller.event_manager import ControllerEventManager
from kafkactl.cluster.controller.execution import execute
from kafkactl.cluster.controller.invariants import check_invariants
from kafkactl.cluster.controller.model import (
    ControlledShutdownReply, ControllerFencedError, LeaderAndIsr, StopReplica, TopicPartition,
)
from kafkactl.cluster.controller.wire import SEND_ORDER, response_class, wire_request
from kafkactl.cluster.controller.zk_port import ZkPort
from kafkactl.cluster.controller.zk_reads import ControllerReads
from kafkactl.cluster.controller.zk_store import ZkControllerStore
from kafkactl.cluster.zk import codecs, layout

log = logging.getLogger(__name__)

CONTROLLED_SHUTDOWN_TIMEOUT_S = 30.0


class Controller:
    def __init__(self, broker_id: int, client, config: ControllerConfig,
                 clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
                 leader_imbalance_check_interval_s: float = 300.0) -> None:
        self.broker_id = broker_id
        self.client = client
        self.config = config
        self.clock_ms = clock_ms
        self.store = ZkControllerStore(client)
        self.events = ControllerEventManager()
        self.reads = ControllerReads(self.store, self._watch_event)
        self.context: ControllerContext | None = None   # owned by the event thread
        self.channel: ControllerChannel | None = None
        self._port: ZkPort | None = None
        self._rebalance_interval_s = leader_imbalance_check_interval_s
        self._stopping = threading.Event()
        self._active = False
        self._watchers: dict[str, Callable] = {}       # see _watch
        # Reassigning partitions whose state znode has our watch (event thread only).
        self._state_watched: set[TopicPartition] = set()
        # State znodes whose watch fired and that were not read since: the
        # watches of a whole reassignment fire together (the controller's own
        # epoch bumps), and one event reads them all instead of one decision
        # (a context copy) each. Shared with kazoo's thread, hence the lock.
        self._states_changed: set[str] = set()
        self._states_changed_lock = threading.Lock()

    # --- lifecycle (any thread)

    def start(self) -> None:
        self.events.start()
        self.client.add_listener(self._on_session_state)
        DataWatch(self.client, layout.CONTROLLER, self._on_controller_znode)
        threading.Thread(target=self._rebalance_timer, name="controller-rebalance-timer", daemon=True).start()

    def stop(self) -> None:
        self._stopping.set()
        self.events.put("resign", self._resign)
        self.events.stop()
        if self.channel is not None:
            self.channel.shutdown()

    def is_active(self) -> bool:
        return self._active

    # --- triggers: they only enqueue

    def _on_controller_znode(self, data, stat) -> None:
        if not self._stopping.is_set():
            self.events.put("controller-change", self._elect_or_resign)

    def _on_session_state(self, state) -> None:
        if state == KazooState.LOST:
            self.events.put("session-expired", self._resign)
        elif state == KazooState.CONNECTED:
            self.events.put("reconnected", self._elect_or_resign)

    def _watch(self, name: str, handler: Callable[[], None]):
        """The watcher of event `name`: one object per name, made once. kazoo
        keeps a path's watchers in a set and calls all of them on a change, so
        re-reading a znode with the same object arms it once; a new object per
        read piled up on every znode that did not change (all topic znodes are
        read again on each topic change), and its next change fired them all:
        storms of topic-change events, each piling up more, that held admin
        events back for seconds to minutes and filled the queue."""
        watcher = self._watchers.get(name)
        if watcher is None:
            watcher = lambda _event=None: self.events.put(name, lambda: self._if_active(handler))  # noqa: E731
            self._watchers[name] = watcher
        return watcher

    def _watch_event(self, name: str):
        """A new watch callback for ControllerReads: queues the handler of `name`."""
        handlers = {
            zk_reads.BROKER_CHANGE: self._on_broker_change, zk_reads.TOPIC_CHANGE: self._on_topic_change,
            zk_reads.DELETE_TOPICS: self._on_delete_topics, zk_reads.REASSIGN: self._on_reassignment,
            zk_reads.PREFERRED_ELECTION: self._on_preferred, zk_reads.ISR_CHANGE: self._on_isr_change,
            zk_reads.CONFIG_CHANGE: self._on_config_change,
        }
        return self._watch(name, handlers[name])

    def _rebalance_timer(self) -> None:
        while not self._stopping.wait(self._rebalance_interval_s):
            if self.config.auto_leader_rebalance_enable:
                self.events.put("auto-leader-rebalance",
                                lambda: self._if_active(lambda: self._run(preferred.on_auto_leader_rebalance)))

    # --- event handlers (event thread)

    def _if_active(self, handler: Callable[[], None]) -> None:
        if self.context is not None:
            try:
                handler()
            except ControllerFencedError as error:
                log.warning("controller %s fenced: %s", self.broker_id, error)
                self._resign()

    def _elect_or_resign(self) -> None:
        holder = self._controller_holder()
        if self.context is not None and holder != self.broker_id:
            self._resign()
        if self.context is None and holder == self.broker_id:
            holder = self._remove_own_stale_controller_znode()
        if self.context is None and holder is None:
            won = self.store.elect(self.broker_id, self.clock_ms())
            if won is not None:
                self._on_become_controller(won)

    def _remove_own_stale_controller_znode(self) -> int | None:
        """/controller names this broker but an earlier process of it (killed
        before its session expired). This process holds the broker id's
        registration and listening port, so that process is gone: delete the
        node (conditionally) instead of waiting out the dead session."""
        try:
            _, stat = self.client.get(layout.CONTROLLER)
            if stat.ephemeralOwner == self.client.client_id[0]:
                return self.broker_id
            self.client.delete(layout.CONTROLLER, version=stat.version)
            log.info("removed the /controller znode of a previous process of broker %s", self.broker_id)
        except Exception as error:  # gone already, or changed: read again
            log.info("stale /controller check: %s", error)
        return self._controller_holder()

    def _controller_holder(self) -> int | None:
        try:
            data, _ = self.client.get(layout.CONTROLLER)
            return codecs.decode_controller(data)
        except Exception:
            return None

    def _on_become_controller(self, won) -> None:
        log.info("broker %s is the controller at epoch %s", self.broker_id, won.epoch)
        self.channel = ControllerChannel(self.broker_id)
        self._port = ZkPort(self.store, won.epoch)
        snapshot, notifications = self.reads.cluster(won.epoch, won.zk_version, self._port.read_partition_states)
        self.context = failover.load_context(snapshot, self.broker_id, self.config)
        self._sync_channel()
        self._active = True
        try:
            # What was read from ZooKeeper was never checked: check all of it.
            self._run(lambda ctx: failover.on_controller_failover(ctx, notifications), check_all=True)
        except ControllerFencedError:
            self._resign()

    def _resign(self) -> None:
        if self.context is None:
            return
        log.info("broker %s resigns as controller", self.broker_id)
        self.context = None
        self._active = False
        self._state_watched.clear()
        if self.channel is not None:
            self.channel.shutdown()
            self.channel = None

    # --- carrying out decisions

    def _run(self, decide: Callable[[ControllerContext], object], check_all: bool = False) -> list:
        """Make a decision and carry it out; invariants are checked after each
        step, on the partitions it changed (everything with `check_all`)."""
        timer = _StepTimer(time.monotonic())
        collector = _PausedCollector()
        try:
            decision = decide(self.context)
            timer.decided_s = time.monotonic()
            before = self.context
            context, replies = execute(self.context, decision, _TimedPort(self._port, timer),
                                       lambda requests: self._send(requests, timer),
                                       on_outcome=lambda ctx, waiting: check_invariants(
                                           ctx, before, waiting, only_changed=not check_all))
        finally:
            collector.resume()
        self.context = context
        self._sync_channel()
        self._watch_reassigning()
        timer.report(self.broker_id)
        return replies

    def _sync_channel(self) -> None:
        """Senders for exactly the live brokers of the (updated) context."""
        live = self.context.live_brokers
        for broker_id in set(self.channel.brokers()) - set(live):
            self.channel.remove_broker(broker_id)
        self._add_to_channel(live)

    def _add_to_channel(self, registrations) -> None:
        for registration in registrations.values():
            self.channel.add_broker(BrokerEndpoint(registration.broker_id, registration.host, registration.port))

    def _send(self, requests, timer: "_StepTimer | None" = None) -> None:
        if timer is not None:
            timer.sent(len(requests))
        # LeaderAndIsr to every broker before any UpdateMetadata, the broker
        # taking over the most leaderships first: new leaders start serving
        # first. Each broker still gets its requests in the core's order
        # (LeaderAndIsr, UpdateMetadata, StopReplica).
        for request in sorted(requests, key=_send_priority):
            log.info("controller %s: %s to broker %s (%d partitions)", self.broker_id,
                     type(request).__name__, request.broker_id, len(request.partitions))
            callback = self._stop_replica_callback(request) if isinstance(request, StopReplica) and request.delete else None
            self.channel.send(request.broker_id, partial(wire_request, request), response_class(request), callback)

    def _stop_replica_callback(self, request: StopReplica):
        def on_response(response, error) -> None:
            if error is not None:
                return  # the broker went away; its death marks the deletion ineligible
            errors = {TopicPartition(e.topic_name, e.partition_index): int(e.error_code)
                      for e in response.partition_errors}
            if response.error_code != ErrorCode.none:
                errors = {p.topic_partition: int(response.error_code) for p in request.partitions}
            self.events.put("stop-replica-response", lambda: self._if_active(lambda: self._run(
                lambda ctx: deletion.on_stop_replica_response(ctx, request.broker_id, request.broker_epoch, errors))))
        return on_response

    # --- what each watch does (event thread, active controller only)

    def _on_broker_change(self) -> None:
        registrations = self.reads.brokers()
        log.info("controller %s: live brokers now %s", self.broker_id, sorted(registrations))
        # Senders to new brokers must exist before the decision's requests go
        # out (the context only lists them once the decision is carried out).
        self._add_to_channel(registrations)
        self._run(lambda ctx: broker_change.on_broker_change(ctx, registrations))

    def _on_topic_change(self) -> None:
        topics = self.reads.topics()
        self._run(lambda ctx: topic_change.on_topic_change(ctx, topics))

    def _on_delete_topics(self) -> None:
        topics = self.reads.topics_to_delete()
        self._run(lambda ctx: deletion.on_delete_topics(ctx, topics))

    def _on_reassignment(self) -> None:
        targets = self.reads.reassignments()
        self._run(lambda ctx: reassignment.on_partition_reassignment(ctx, targets or None))

    def _on_preferred(self) -> None:
        partitions = self.reads.preferred()
        self._run(lambda ctx: preferred.on_preferred_replica_election(ctx, partitions))

    def _on_isr_change(self) -> None:
        states, paths = self.reads.isr_changes(self._port.read_partition_states)
        self._run(lambda ctx: isr_change.on_isr_change(ctx, states, paths))

    # --- partitions being reassigned: their state znodes are watched (seed
    # 002's ReassignedPartitionsIsrChangeListener; Kafka's
    # PartitionReassignmentIsrChangeHandler). ISR change notifications are the
    # leaders' best effort (a leader killed between its state write and its
    # notification never writes it), and a state the controller takes in
    # otherwise (read back after a lost conditional write, then written over)
    # brings no notification at all: without the watch such a reassignment
    # waited, target in the ISR, for some later ISR change.

    def _watch_reassigning(self) -> None:
        """After each step: a read with the watch (and a check) for every
        partition that started moving."""
        moving = {tp for tp, r in self.context.reassignments.items() if not r.completing}
        self._state_watched &= moving
        new = sorted(moving - self._state_watched)
        if new:
            self._state_watched.update(new)
            self.events.put("reassignment-watch", lambda: self._if_active(lambda: self._read_reassigning(new)))

    def _state_watcher(self, event) -> None:
        """kazoo's thread: note the path; queue one event for all noted."""
        with self._states_changed_lock:
            first = not self._states_changed
            self._states_changed.add(event.path)
        if first:
            self.events.put("reassignment-isr-change", self._on_partition_states)

    def _on_partition_states(self) -> None:
        with self._states_changed_lock:        # taken even when not active, or later ones would never queue
            paths, self._states_changed = self._states_changed, set()
        self._if_active(lambda: self._read_changed_states(paths))

    def _read_changed_states(self, paths: set[str]) -> None:
        tps = []
        for path in sorted(paths):
            parts = path.strip("/").split("/")     # brokers/topics/<t>/partitions/<p>/state
            tps.append(TopicPartition(parts[2], int(parts[4])))
        self._state_watched.difference_update(tps)   # those watches fired: read again to re-arm them
        self._read_reassigning(tps)

    def _read_reassigning(self, tps: list[TopicPartition]) -> None:
        moving = [tp for tp in tps if self.context.is_being_reassigned(tp)]
        if not moving:
            return
        paths = {tp: layout.partition_state(tp.topic, tp.partition) for tp in moving}
        nodes = self.store.get_many(list(paths.values()), watch=self._state_watcher)
        self._state_watched.update(moving)
        states = {tp: None if nodes[path] is None else codecs.decode_partition_state(path, nodes[path][0],
                                                                                     nodes[path][1].version)
                  for tp, path in paths.items()}
        self._run(lambda ctx: isr_change.on_isr_change(ctx, states))

    def _on_config_change(self) -> None:
        configs = self.reads.config_changes(sorted(self.context.topic_ids))
        for topic, config in configs.items():
            self._run(lambda ctx, t=topic, c=config: topic_change.on_topic_config_change(ctx, t, c))

    # --- controlled shutdown: asked by a broker's request thread

    def controlled_shutdown(self, broker_id: int, broker_epoch: int) -> tuple[ErrorCode, list[tuple[str, int]]]:
        done = threading.Event()
        answer: list = []

        def run() -> None:
            try:
                if self.context is None:
                    answer.append((ErrorCode.not_controller, []))
                    return
                replies = self._run(lambda ctx: shutdown.on_controlled_shutdown(ctx, broker_id, broker_epoch))
                reply = next((r for r in replies if isinstance(r, ControlledShutdownReply)
                              and r.broker_id == broker_id), None)
                answer.append(_shutdown_answer(reply))
            finally:
                done.set()

        self.events.put("controlled-shutdown", run)
        if not done.wait(CONTROLLED_SHUTDOWN_TIMEOUT_S) or not answer:
            return ErrorCode.request_timed_out, []
        return answer[0]


def _send_priority(request) -> tuple[int, int]:
    leaderships = sum(1 for p in request.partitions if p.leader == request.broker_id) \
        if isinstance(request, LeaderAndIsr) else 0
    return SEND_ORDER.index(type(request)), -leaderships


def _shutdown_answer(reply: ControlledShutdownReply | None) -> tuple[ErrorCode, list[tuple[str, int]]]:
    if reply is None:
        return ErrorCode.unknown_server_error, []
    if reply.error is not None:
        return ErrorCode[reply.error.lower()], []
    return ErrorCode.none, [(tp.topic, tp.partition) for tp in reply.partitions_remaining]


class _PausedCollector:
    """Python's cyclic garbage collector off while a step runs.

    A failover decision allocates 100,000s of objects that live on (the new
    states, writes and request entries); the collector, triggered by the
    allocation count, traverses them again and again: 30+ ms of collections
    between the broker's death and the LeaderAndIsr, and more while the
    sender threads encode the requests (they run during the step's invariant
    checks). Deferred to the end of the step, the same work runs once the
    requests are on their way. Nothing is lost meanwhile: reference counting
    still frees what it can, and cycles are collected once the collector is
    back (it is process-wide, off for one step at a time).

    gc.freeze() after the context is loaded was measured too
    (bench/controller_decide.py --gc): with the collector on, it shortened
    full collections of a 10,000-partition step but made them more frequent
    in a 50,000-partition one (the frozen heap no longer counts towards the
    threshold), and it keeps cyclic garbage of the whole broker from being
    collected while this broker is controller. Pausing makes it unnecessary."""

    def __init__(self) -> None:
        self._was_enabled = gc.isenabled()
        gc.disable()

    def resume(self) -> None:
        if self._was_enabled:
            self._was_enabled = False
            gc.enable()


class _StepTimer:
    """Where a step's time went, logged for steps big enough to matter (a
    failover of thousands of partitions): decision, ZooKeeper writes, until
    the requests are queued, and the invariant checks after."""

    REPORT_WRITES = 1000

    def __init__(self, start_s: float) -> None:
        self.start_s = start_s
        self.decided_s = start_s
        self.writes = 0
        self.writes_s = 0.0
        self.first_send_s: float | None = None
        self.requests = 0

    def sent(self, count: int) -> None:
        if self.first_send_s is None:
            self.first_send_s = time.monotonic()
        self.requests += count

    def report(self, broker_id: int) -> None:
        if self.writes < self.REPORT_WRITES:
            return
        ms = lambda t: (t - self.start_s) * 1000  # noqa: E731
        sent = f"{ms(self.first_send_s):.0f}" if self.first_send_s is not None else "-"
        log.info("controller %s: step of %d writes: decided at %.0f ms, writes took %.0f ms, "
                 "%d requests queued at %s ms, done at %.0f ms", broker_id, self.writes,
                 ms(self.decided_s), self.writes_s * 1000, self.requests, sent, ms(time.monotonic()))


class _TimedPort:
    """The ZooKeeper port, timing the writes for _StepTimer."""

    def __init__(self, port: ZkPort, timer: _StepTimer) -> None:
        self._port = port
        self._timer = timer

    def apply_writes(self, writes, controller_epoch_zk_version):
        start_s = time.monotonic()
        try:
            return self._port.apply_writes(writes, controller_epoch_zk_version)
        finally:
            self._timer.writes += len(writes)
            self._timer.writes_s += time.monotonic() - start_s

    def read_partition_states(self, partitions):
        return self._port.read_partition_states(partitions)
