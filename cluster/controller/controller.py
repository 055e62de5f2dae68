"""The controller: the thin I/O layer around the pure decision core.

Every broker runs one `Controller`; the one that wins the election through
ZooKeeper is active. ZooKeeper watches, broker responses, timers and
controlled-shutdown requests only enqueue typed events (events.py) on the
`ControllerEventManager`; the single event thread hands each to `process`,
which dispatches it by type: the handler reads what changed, asks the core
for a `Decision` and carries it out with `execution.execute`: fenced
ZooKeeper writes through `ZkPort`, requests to brokers through
`ControllerChannel`.

Rules: an event that needs an active controller is preempted when there is
none (a controlled shutdown is answered NOT_CONTROLLER); resigning preempts
the queued ones. Every ZooKeeper call made here has a timeout (the store's):
none may hold the event thread forever. An InvariantViolation on the event
thread is fatal: the controller gives up /controller, then halts the process
(fatal.py), since the state it decides from cannot be trusted.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from kazoo.protocol.states import KazooState
from kazoo.recipe.watchers import DataWatch
from kio.schema.errors import ErrorCode

from kafkactl.cluster import fatal
from kafkactl.cluster.controller import (
    admin_requests, broker_change, deletion, failover, isr_change, log_dir_events, offline_dirs, preferred, reassignment,
    shutdown, topic_change,
)
from kafkactl.cluster.controller import events as ev
from kafkactl.cluster.controller.channel import BrokerEndpoint, ControllerChannel
from kafkactl.cluster.controller.context import ControllerConfig, ControllerContext
from kafkactl.cluster.controller.event_manager import ControllerEventManager, EventQueueFull
from kafkactl.cluster.controller.events import ControllerEvent, ShutdownAnswer
from kafkactl.cluster.controller.execution import execute
from kafkactl.cluster.controller.invariants import check_invariants
from kafkactl.cluster.controller.retries import ZOOKEEPER_UNAVAILABLE, RetryPolicy
from kafkactl.cluster.controller.state_watches import ReassigningStateWatches
from kafkactl.cluster.controller.model import (
    ControlledShutdownReply, ControllerFencedError, LeaderAndIsr, StopReplica, TopicPartition,
)
from kafkactl.cluster.controller.step_timing import PausedCollector, StepTimer, TimedPort
from kafkactl.cluster.controller.wire import SEND_ORDER, response_class, storage_errors, wire_request
from kafkactl.cluster.controller.zk_port import ZkPort
from kafkactl.cluster.controller.zk_reads import ControllerReads
from kafkactl.cluster.controller.zk_store import ZkControllerStore
from kafkactl.cluster.invariant import InvariantViolation
from kafkactl.cluster.zk import codecs, layout
from kafkactl.cluster.zk.client import wait

log = logging.getLogger(__name__)

CONTROLLED_SHUTDOWN_TIMEOUT_S = 30.0


class Controller:
    def __init__(self, broker_id: int, client, config: ControllerConfig,
                 clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
                 leader_imbalance_check_interval_s: float = 300.0,
                 halt: Callable[[str, BaseException], None] = fatal.halt) -> None:
        self.broker_id = broker_id
        self.client = client
        self.config = config
        self.clock_ms = clock_ms
        self.store = ZkControllerStore(client)
        self._halt = halt
        self.events = ControllerEventManager(self.process, on_fatal=self._on_fatal)
        self.reads = ControllerReads(self.store, self._watch_event)
        self.context: ControllerContext | None = None   # owned by the event thread
        self.channel: ControllerChannel | None = None
        self._port: ZkPort | None = None
        self._rebalance_interval_s = leader_imbalance_check_interval_s
        self._retries = RetryPolicy()             # event thread only
        self._stopping = threading.Event()
        self._active = False
        self._watchers: dict[ControllerEvent, Callable] = {}       # see _watch
        # Watches on the state znodes of partitions being reassigned.
        self.state_watches = ReassigningStateWatches(self.events.put)
        # The dispatch table: one handler per type of event (events.py).
        self._handlers: dict[type, Callable[[Any], None]] = {
            ev.ControllerChange: self._elect_or_resign, ev.Reelect: self._elect_or_resign,
            ev.SessionExpired: self._resign, ev.Resign: self._resign,
            ev.BrokerChange: self._on_broker_change, ev.TopicChange: self._on_topic_change,
            ev.TopicDeletion: self._on_delete_topics, ev.PartitionReassignment: self._on_reassignment,
            ev.PreferredReplicaElection: self._on_preferred, ev.IsrChangeNotification: self._on_isr_change,
            ev.ConfigChange: self._on_config_change, ev.LogDirEventNotification: self._on_log_dir_event,
            ev.WatchReassigningStates: self._on_watch_reassigning,
            ev.PartitionReassignmentIsrChange: self._on_partition_states,
            ev.AutoPreferredReplicaLeaderElection: self._on_auto_rebalance,
            ev.ControlledShutdown: self._on_controlled_shutdown,
            ev.StopReplicaResponseReceived: self._on_stop_replica_response,
            ev.LeaderAndIsrResponseReceived: self._on_leader_and_isr_response,
            ev.ApiElectLeaders: self._on_elect_leaders,
            ev.ApiPartitionReassignment: self._on_api_reassignment,
            ev.ListPartitionReassignments: self._on_list_reassignments,
        }

    # --- lifecycle (any thread)

    def start(self) -> None:
        self.events.start()
        self.client.add_listener(self._on_session_state)
        DataWatch(self.client, layout.CONTROLLER, self._on_controller_znode)
        threading.Thread(target=self._rebalance_timer, name="controller-rebalance-timer", daemon=True).start()

    def stop(self) -> None:
        self._stopping.set()
        self.events.put(ev.Resign())
        self.events.stop()          # what is still queued is preempted
        if self.channel is not None:
            self.channel.shutdown()

    def is_active(self) -> bool:
        return self._active

    # --- triggers: they only enqueue

    def _on_controller_znode(self, data, stat) -> None:
        if not self._stopping.is_set():
            self.events.put(ev.ControllerChange())

    def _on_session_state(self, state) -> None:
        if state == KazooState.LOST:
            # As Kafka's clearAndPut(Expire): what this controller was to do
            # is void with its session; a waiting controlled shutdown is
            # answered NOT_CONTROLLER now. Who-is-controller events stay.
            self.events.preempt(lambda event: event.needs_active)
            self.events.put(ev.SessionExpired())
        elif state == KazooState.CONNECTED:
            self.events.put(ev.Reelect())

    def _watch(self, event: ControllerEvent):
        """The watcher of `event`: one object per event, made once. kazoo
        keeps a path's watchers in a set and calls all of them on a change, so
        re-reading a znode with the same object arms it once; a new object per
        read piled up on every znode that did not change (all topic znodes are
        read again on each topic change), and its next change fired them all:
        storms of topic-change events, each piling up more, that held admin
        events back for seconds to minutes and filled the queue."""
        watcher = self._watchers.get(event)
        if watcher is None:
            watcher = lambda _event=None: self.events.put(event)  # noqa: E731
            self._watchers[event] = watcher
        return watcher

    def _watch_event(self, name: str):
        """A new watch callback for ControllerReads: queues the event of `name`."""
        return self._watch(ev.WATCH_EVENTS[name])

    def _rebalance_timer(self) -> None:
        while not self._stopping.wait(self._rebalance_interval_s):
            if self.config.auto_leader_rebalance_enable:
                self.events.put(ev.AutoPreferredReplicaLeaderElection())

    # --- the event thread

    def process(self, event: ControllerEvent) -> None:
        """Kafka's ControllerEventProcessor.process: dispatch by type."""
        handler = self._handlers[type(event)]
        if not event.needs_active:
            handler(event)
            return
        if self.context is None:
            event.preempt()
            return
        try:
            handler(event)
        except ControllerFencedError as error:
            log.warning("controller %s fenced: %s", self.broker_id, error)
            self._resign()
        except ZOOKEEPER_UNAVAILABLE as error:
            if not event.retriable:
                raise
            self._retry_later(event, error)
        else:
            self._retries.succeeded(type(event))

    def _retry_later(self, event: ControllerEvent, error: Exception) -> None:
        """ZooKeeper did not answer: queue the event again after a backoff, or
        give up the controllership after too many failures (retries.py)."""
        delay_s = self._retries.failed(type(event))
        if delay_s is None:
            log.error("controller %s: %s could not reach ZooKeeper %d times in a row (%s); resigning so that "
                      "another controller reads everything afresh", self.broker_id, event.name,
                      self._retries.max_attempts, error)
            self._give_up_controllership()
            return
        log.warning("controller %s: %s could not reach ZooKeeper (%s); trying again in %.1f s",
                    self.broker_id, event.name, error, delay_s)
        timer = threading.Timer(delay_s, self._requeue, args=(event,))
        timer.daemon = True
        timer.start()

    def _requeue(self, event: ControllerEvent) -> None:
        """A retry timer's thread: only enqueues (the event thread decides)."""
        if self._stopping.is_set():
            return
        try:
            self.events.put(event)
        except EventQueueFull:
            log.error("controller %s: event queue full, %s not retried", self.broker_id, event.name)

    def _give_up_controllership(self) -> None:
        self._resign()
        try:
            self._delete_own_controller_znode()
        except Exception as error:   # unreachable still: the session's expiry removes it
            fatal.halt_if_fatal(error, "giving up /controller")
            log.warning("controller %s: could not delete /controller: %s", self.broker_id, error)

    def _on_fatal(self, violation: InvariantViolation, event: ControllerEvent) -> None:
        """The state this thread owns broke a guaranteed property, possibly
        after some of a decision went to ZooKeeper: decide nothing more. Give
        up /controller first (another broker takes over at once instead of
        after this session's timeout), then halt."""
        self.context = None
        self._active = False
        try:
            self._delete_own_controller_znode()
        except Exception as error:   # the halt below matters more
            log.error("could not give up /controller: %s", error)
        self._halt(f"controller {self.broker_id}, event {event.name}: invariant violated: {violation}", violation)

    def _elect_or_resign(self, _event: ControllerEvent | None = None) -> None:
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
            _, stat = wait(self.client.get_async(layout.CONTROLLER), self.store.timeout_s)
            if stat.ephemeralOwner == self.client.client_id[0]:
                return self.broker_id
            wait(self.client.delete_async(layout.CONTROLLER, version=stat.version), self.store.timeout_s)
            log.info("removed the /controller znode of a previous process of broker %s", self.broker_id)
        except Exception as error:  # gone already, or changed: read again
            fatal.halt_if_fatal(error, "stale /controller check")
            log.info("stale /controller check: %s", error)
        return self._controller_holder()

    def _delete_own_controller_znode(self) -> None:
        _, stat = wait(self.client.get_async(layout.CONTROLLER), self.store.timeout_s)
        if stat.ephemeralOwner == self.client.client_id[0]:
            wait(self.client.delete_async(layout.CONTROLLER, version=stat.version), self.store.timeout_s)

    def _controller_holder(self) -> int | None:
        try:
            data, _ = wait(self.client.get_async(layout.CONTROLLER), self.store.timeout_s)
            return codecs.decode_controller(data)
        except Exception as error:
            fatal.halt_if_fatal(error, "reading /controller")
            return None

    def _on_become_controller(self, won) -> None:
        self._retries.reset()
        log.info("broker %s is the controller at epoch %s", self.broker_id, won.epoch)
        self.channel = ControllerChannel(self.broker_id)
        self._port = ZkPort(self.store, won.epoch)
        self.state_watches.reset()       # the previous term's watches: this one reads afresh
        snapshot, notifications = self.reads.cluster(won.epoch, won.zk_version, self._port.read_partition_states)
        self.context = failover.load_context(snapshot, self.broker_id, self.config)
        self._sync_channel()
        self._active = True
        try:
            # What was read from ZooKeeper was never checked: check all of it.
            self._run(lambda ctx: failover.on_controller_failover(ctx, notifications), check_all=True)
        except ControllerFencedError:
            self._resign()

    def _resign(self, _event: ControllerEvent | None = None) -> None:
        if self.context is None:
            return
        log.info("broker %s resigns as controller", self.broker_id)
        self.context = None
        self._active = False
        self.state_watches.reset()
        if self.channel is not None:
            self.channel.shutdown()
            self.channel = None
        # Work queued for the controller this broker no longer is: answered
        # (a controlled shutdown: NOT_CONTROLLER) or dropped, not left waiting.
        preempted = self.events.preempt(lambda event: event.needs_active)
        if preempted:
            log.info("controller %s: %d queued events preempted", self.broker_id, preempted)

    # --- carrying out decisions

    def _run(self, decide: Callable[[ControllerContext], object], check_all: bool = False) -> list:
        """Make a decision and carry it out; invariants are checked after each
        step, on the partitions it changed (everything with `check_all`)."""
        timer = StepTimer(time.monotonic())
        collector = PausedCollector()
        try:
            decision = decide(self.context)
            timer.decided_s = time.monotonic()
            before = self.context
            context, replies = execute(self.context, decision, TimedPort(self._port, timer),
                                       lambda requests: self._send(requests, timer),
                                       on_outcome=lambda ctx, waiting: check_invariants(
                                           ctx, before, waiting, only_changed=not check_all))
        finally:
            collector.resume()
        self.context = context
        self._sync_channel()
        self.state_watches.after_step(self.context)
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

    def _send(self, requests, timer: "StepTimer | None" = None) -> None:
        if timer is not None:
            timer.sent(len(requests))
        # LeaderAndIsr to every broker before any UpdateMetadata, the broker
        # taking over the most leaderships first: new leaders start serving
        # first. Each broker still gets its requests in the core's order
        # (LeaderAndIsr, UpdateMetadata, StopReplica).
        for request in sorted(requests, key=_send_priority):
            log.info("controller %s: %s to broker %s (%d partitions)", self.broker_id,
                     type(request).__name__, request.broker_id, len(request.partitions))
            self.channel.send(request.broker_id, partial(wire_request, request), response_class(request),
                              self._response_callback(request))

    def _response_callback(self, request):
        """What a response queues (sender thread): the responses the core acts on."""
        if isinstance(request, LeaderAndIsr):
            return partial(self._on_leader_and_isr_answer, request)
        if isinstance(request, StopReplica) and request.delete:
            return partial(self._on_stop_replica_answer, request)
        return None

    def _on_stop_replica_answer(self, request: StopReplica, response, error) -> None:
        if error is not None:
            return  # the broker went away; its death marks the deletion ineligible
        errors = {TopicPartition(e.topic_name, e.partition_index): int(e.error_code)
                  for e in response.partition_errors}
        if response.error_code != ErrorCode.none:
            errors = {p.topic_partition: int(response.error_code) for p in request.partitions}
        self.events.put(ev.StopReplicaResponseReceived(request.broker_id, request.broker_epoch,
                                                       tuple(sorted(errors.items()))))

    def _on_leader_and_isr_answer(self, request: LeaderAndIsr, response, error) -> None:
        if error is not None:
            return  # the broker went away: its death is handled by the broker change
        offline = storage_errors(request, response)
        if offline:   # nothing else in the answer needs the controller
            self.events.put(ev.LeaderAndIsrResponseReceived(request.broker_id, request.broker_epoch, offline))

    # --- what each event does (event thread, active controller only)

    def _on_broker_change(self, _event: ev.BrokerChange) -> None:
        registrations = self.reads.brokers()
        log.info("controller %s: live brokers now %s", self.broker_id, sorted(registrations))
        # Senders to new brokers must exist before the decision's requests go
        # out (the context only lists them once the decision is carried out).
        self._add_to_channel(registrations)
        self._run(lambda ctx: broker_change.on_broker_change(ctx, registrations))

    def _on_topic_change(self, _event: ev.TopicChange) -> None:
        topics = self.reads.topics()
        self._run(lambda ctx: topic_change.on_topic_change(ctx, topics))

    def _on_delete_topics(self, _event: ev.TopicDeletion) -> None:
        topics = self.reads.topics_to_delete()
        self._run(lambda ctx: deletion.on_delete_topics(ctx, topics))

    def _on_reassignment(self, _event: ev.PartitionReassignment) -> None:
        targets = self.reads.reassignments()
        self._run(lambda ctx: reassignment.on_partition_reassignment(ctx, targets or None))

    def _on_preferred(self, _event: ev.PreferredReplicaElection) -> None:
        partitions = self.reads.preferred()
        if partitions is not None:
            self._refresh_states(partitions)
        self._run(lambda ctx: preferred.on_preferred_replica_election(ctx, partitions))

    def _refresh_states(self, partitions) -> None:
        """Take the partitions' states as ZooKeeper has them now, as Kafka
        elects on them: a leader's ISR expansion reaches the controller only
        with its batched notification, and a replica back in the ISR must be
        electable at once."""
        known = [tp for tp in partitions if tp in self.context.assignments]
        if known:
            states = self._port.read_partition_states(known)
            self._run(lambda ctx: isr_change.on_isr_change(ctx, states))

    def _on_isr_change(self, _event: ev.IsrChangeNotification) -> None:
        states, paths = self.reads.isr_changes(self._port.read_partition_states)
        self._run(lambda ctx: isr_change.on_isr_change(ctx, states, paths))

    def _on_log_dir_event(self, _event: ev.LogDirEventNotification) -> None:
        brokers, paths = self.reads.log_dir_events()
        if brokers:
            log.warning("controller %s: log dirs failed on brokers %s: asking them which replicas are offline",
                        self.broker_id, sorted(set(brokers)))
        self._run(lambda ctx: log_dir_events.on_log_dir_event(ctx, brokers, paths))

    def _on_config_change(self, _event: ev.ConfigChange) -> None:
        configs = self.reads.config_changes(sorted(self.context.topic_ids))
        for topic, config in configs.items():
            self._run(lambda ctx, t=topic, c=config: topic_change.on_topic_config_change(ctx, t, c))

    def _on_auto_rebalance(self, _event: ev.AutoPreferredReplicaLeaderElection) -> None:
        self._run(preferred.on_auto_leader_rebalance)

    def _on_stop_replica_response(self, event: ev.StopReplicaResponseReceived) -> None:
        self._run(lambda ctx: deletion.on_stop_replica_response(ctx, event.broker_id, event.broker_epoch,
                                                                dict(event.errors)))

    def _on_leader_and_isr_response(self, event: ev.LeaderAndIsrResponseReceived) -> None:
        log.warning("controller %s: broker %s cannot store %s (KAFKA_STORAGE_ERROR): replicas offline",
                    self.broker_id, event.broker_id, [f"{tp.topic}-{tp.partition}" for tp in event.offline])
        self._run(lambda ctx: offline_dirs.on_leader_and_isr_response(
            ctx, event.broker_id, event.broker_epoch, event.offline))

    # --- partitions being reassigned: their state znodes are watched (state_watches.py)

    def _on_watch_reassigning(self, event: ev.WatchReassigningStates) -> None:
        self._read_reassigning(event.partitions)

    def _on_partition_states(self, _event: ev.PartitionReassignmentIsrChange) -> None:
        partitions, paths = self.state_watches.take_fired()
        try:
            self._read_reassigning(partitions)
        except ZOOKEEPER_UNAVAILABLE:
            self.state_watches.restore(paths)     # read them again when the event is retried
            raise

    def _read_reassigning(self, partitions) -> None:
        states = self.state_watches.read(self.context, partitions, self.store)
        if states:
            self._run(lambda ctx: isr_change.on_isr_change(ctx, states))

    # --- the Admin API: asked by request threads (handlers/elect_leaders.py, ...), answered through `reply`

    def admin_request(self, event: ev.AdminRequest) -> None:
        """Any thread: queue it; a full queue answers None (NOT_CONTROLLER,
        which clients retry after refreshing their metadata)."""
        try:
            self.events.put(event)
        except EventQueueFull:
            event.preempt()

    def _answering(self, event: ev.AdminRequest, work: Callable[[], object]) -> None:
        """Run `work` and reply with its result; if it fails, reply with the
        error code (NOT_CONTROLLER when fenced) and let the failure go on."""
        answer: object = ErrorCode.unknown_server_error
        try:
            answer = work()
        except ControllerFencedError:
            answer = ErrorCode.not_controller
            raise
        except ZOOKEEPER_UNAVAILABLE:
            answer = ErrorCode.request_timed_out
            raise
        finally:
            event.reply(answer)

    def _on_elect_leaders(self, event: ev.ApiElectLeaders) -> None:
        def work():
            settled, electable = admin_requests.election_candidates(self.context, event.partitions, event.unclean)
            if electable:
                self._refresh_states(electable)
                fresh, electable = admin_requests.election_candidates(self.context, electable, event.unclean)
                settled.update(fresh)
            if electable:
                self._run(lambda ctx: admin_requests.elect(ctx, frozenset(electable), event.unclean))
            results = {tp: (*result, -1) for tp, result in settled.items()}
            results.update(admin_requests.election_results(self.context, electable, event.unclean))
            return results
        self._answering(event, work)

    def _on_api_reassignment(self, event: ev.ApiPartitionReassignment) -> None:
        def work():
            results, starts, retargets = admin_requests.reassignment_requests(self.context, dict(event.targets))
            if any(result == admin_requests.NONE for result in results.values()):
                self._run(lambda ctx: admin_requests.alter_reassignments(ctx, results, starts, retargets))
            return admin_requests.reassignment_results(self.context, results, starts, retargets)
        self._answering(event, work)

    def _on_list_reassignments(self, event: ev.ListPartitionReassignments) -> None:
        self._answering(event, lambda: admin_requests.ongoing_reassignments(self.context, event.partitions))

    # --- controlled shutdown: asked by a broker's request thread

    def controlled_shutdown(self, broker_id: int, broker_epoch: int) -> ShutdownAnswer:
        answer = _Answer()
        self.events.put(ev.ControlledShutdown(broker_id, broker_epoch, answer.give))
        return answer.wait(CONTROLLED_SHUTDOWN_TIMEOUT_S)

    def _on_controlled_shutdown(self, event: ev.ControlledShutdown) -> None:
        answer: ShutdownAnswer = (ErrorCode.request_timed_out, [])   # if the step fails
        try:
            replies = self._run(lambda ctx: shutdown.on_controlled_shutdown(ctx, event.broker_id,
                                                                            event.broker_epoch))
            reply = next((r for r in replies if isinstance(r, ControlledShutdownReply)
                          and r.broker_id == event.broker_id), None)
            answer = _shutdown_answer(reply)
        except ControllerFencedError:
            answer = (ErrorCode.not_controller, [])
            raise
        finally:
            event.reply(answer)


class _Answer:
    """A controlled shutdown's answer, given once (by the event thread or by
    preemption) to the request thread waiting for it."""

    def __init__(self) -> None:
        self._given = threading.Event()
        self._value: ShutdownAnswer = (ErrorCode.request_timed_out, [])
        self._lock = threading.Lock()

    def give(self, value: ShutdownAnswer) -> None:
        with self._lock:
            if self._given.is_set():
                return
            self._value = value
            self._given.set()

    def wait(self, timeout_s: float) -> ShutdownAnswer:
        self._given.wait(timeout_s)
        with self._lock:
            return self._value


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
