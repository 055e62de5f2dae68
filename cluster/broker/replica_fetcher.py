"""Followers copy their leaders' logs: one fetcher thread per source broker.

Kafka's num.replica.fetchers=1: every partition this broker follows from
broker L is fetched by L's one thread, in one Fetch request per round, with
`replica_id` = this broker and each partition's current leader epoch.

Before its first fetch at a leader epoch a partition truncates only its
divergent tail (KIP-101, KIP-279): it asks the leader, with
OffsetForLeaderEpoch, where the follower's latest epoch ends on the leader,
and truncates to the smaller of that and where the epoch ends locally. If
the leader does not know the epoch, the follower falls back to its high
watermark. A follower that does not know the epoch the leader answered with
truncates to where its own largest smaller epoch ends and asks again.

Each fetcher keeps an incremental fetch session with its leader (KIP-227,
fetcher_session.py): after a first full request, a request lists only
partitions whose fetch position changed, were added, or are left out this
round (forgotten), and the leader answers only partitions that have
something new. Where to truncate is decided by truncation.py (pure).

Roles change only through the ReplicaManager, which removes a partition from
its fetcher (waiting for a response being processed) before making it leader
or following another broker, so no batch from an old leader is appended
afterwards. Errors back a partition off (replica.fetch.backoff.ms);
connection errors back the whole thread off, doubling up to a bound.
"""

from __future__ import annotations

import datetime
import logging
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12 import request as fetch_v12
from kio.schema.offset_for_leader_epoch.v4 import request as epoch_v4

from kafkactl.cluster import fatal
from kafkactl.cluster.broker.broker_client import BrokerClient, BrokerConnectionError
from kafkactl.cluster.broker.fetcher_session import FetchPlan, FetchSessionState, Position, Positions
from kafkactl.cluster.broker.truncation import truncation_for
from kafkactl.cluster.log.errors import LogError, OffsetsOutOfOrderError, UnexpectedAppendOffsetError
from kafkactl.cluster.log.leader_epoch import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
from kafkactl.cluster.protocol.fetch_response import FetchResponseV12
from kafkactl.cluster.protocol.record_batch import InvalidRecordError

log = logging.getLogger(__name__)

# A partition that has not finished truncating after this many rounds falls
# back to its high watermark; each round lowers the epoch asked about, so this
# is only a guard against a misbehaving leader.
MAX_TRUNCATION_ROUNDS = 16
THROTTLED_DELAY_S = 0.1   # how long a throttled partition waits before asking again
IDLE_WAIT_S = 0.5
FULL_REFRESH_S = 10.0     # every partition's position is looked at again at least this often

RETRIABLE_PARTITION_ERRORS = frozenset({
    ErrorCode.not_leader_or_follower,
    ErrorCode.fenced_leader_epoch,
    ErrorCode.unknown_leader_epoch,
    ErrorCode.unknown_topic_or_partition,
    ErrorCode.leader_not_available,
    ErrorCode.kafka_storage_error,
})


@dataclass(frozen=True, slots=True)
class FetcherConfig:
    fetch_max_bytes: int = 1048576             # replica.fetch.max.bytes (per partition)
    fetch_response_max_bytes: int = 10485760   # replica.fetch.response.max.bytes
    fetch_wait_max_ms: int = 500               # replica.fetch.wait.max.ms
    fetch_min_bytes: int = 1                   # replica.fetch.min.bytes
    fetch_backoff_ms: int = 1000               # replica.fetch.backoff.ms
    socket_timeout_ms: int = 30000             # replica.socket.timeout.ms
    connect_timeout_ms: int = 10000            # socket.connection.setup.timeout.ms
    connect_backoff_initial_ms: int = 100
    connect_backoff_max_ms: int = 1000


def fetcher_config_from(broker_config) -> FetcherConfig:
    """The fetcher settings of a BrokerConfig; Kafka's defaults where it has none."""
    defaults = FetcherConfig()
    return FetcherConfig(**{
        name: getattr(broker_config, f"replica_{name}", getattr(defaults, name))
        for name in ("fetch_max_bytes", "fetch_response_max_bytes", "fetch_wait_max_ms",
                     "fetch_min_bytes", "fetch_backoff_ms", "socket_timeout_ms")
    })


# --- one partition's fetch state ----------------------------------------------

@dataclass(slots=True, eq=False)
class PartitionFetchState:
    partition: object            # partition.Partition
    leader_id: int
    leader_epoch: int
    truncating: bool = True
    delayed_until: float = 0.0   # time.monotonic()
    truncation_rounds: int = 0
    out_of_range_after_truncation: bool = False
    key: tuple[str, int] = field(init=False)   # fixed: looked up for every partition every round

    def __post_init__(self) -> None:
        self.key = (self.partition.topic, self.partition.index)

    def delay(self, seconds: float) -> None:
        self.delayed_until = time.monotonic() + seconds


SESSION_ERRORS = frozenset({ErrorCode.fetch_session_id_not_found, ErrorCode.invalid_fetch_session_epoch})


@dataclass(slots=True)
class _Round:
    truncating: list[PartitionFetchState] = field(default_factory=list)
    fetching: bool = False


class ReplicaFetcherThread:
    """Fetches every partition this broker follows from one source broker."""

    def __init__(self, broker_id: int, source_broker_id: int, host: str, port: int,
                 config: FetcherConfig, client=None) -> None:
        self.broker_id = broker_id
        self.source_broker_id = source_broker_id
        self.endpoint = (host, port)
        self.config = config
        self.client = client or BrokerClient(host, port, f"replica-fetcher-{broker_id}",
                                             connect_timeout_s=config.connect_timeout_ms / 1000,
                                             request_timeout_s=config.socket_timeout_ms / 1000)
        self._states: dict[tuple[str, int], PartitionFetchState] = {}
        # Kept up to date from `_dirty` (partitions added, removed or touched
        # by a round), so an idle round costs O(partitions that changed), not
        # O(partitions): a follower may follow 10,000 partitions of one leader.
        self._wanted: dict[tuple[str, int], tuple[Position, PartitionFetchState]] = {}
        self._truncating: set[tuple[str, int]] = set()
        self._delayed: dict[tuple[str, int], float] = {}
        self._dirty: set[tuple[str, int]] = set()
        self._next_full_refresh = 0.0
        self._lock = threading.Lock()       # held while a response is applied to the logs
        self._changed = threading.Condition(self._lock)
        self._stopping = threading.Event()
        self._connect_backoff_s = config.connect_backoff_initial_ms / 1000
        self.session = FetchSessionState()     # the fetcher thread's only
        self._thread = threading.Thread(target=self._run, name=f"replica-fetcher-{source_broker_id}",
                                        daemon=True)

    # --- control (ReplicaManager threads)

    throttle = None   # set by the manager

    def start(self) -> None:
        self._thread.start()

    def add_partitions(self, states: Iterable[PartitionFetchState]) -> None:
        with self._lock:
            for state in states:
                self._states[state.key] = state
                self._dirty.add(state.key)
            self._changed.notify_all()

    def remove_partitions(self, keys: Iterable[tuple[str, int]]) -> list[PartitionFetchState]:
        """Stop fetching `keys`; returns once no response for them is being applied."""
        with self._lock:
            removed = [self._states.pop(key) for key in keys if key in self._states]
            self._dirty.update(state.key for state in removed)
            self._changed.notify_all()
        return removed

    def partition_count(self) -> int:
        with self._lock:
            return len(self._states)

    def partitions(self) -> dict[tuple[str, int], PartitionFetchState]:
        with self._lock:
            return dict(self._states)

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    @property
    def connect_backoff_s(self) -> float:
        """The wait before the next connection attempt after a failure."""
        return self._connect_backoff_s

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop and wait for the thread (at most `timeout_s`)."""
        self.request_stop()
        self.join(timeout_s)

    def request_stop(self) -> None:
        """Stop without waiting: the thread ends on its own. Its partitions were
        removed first (remove_partitions), so it cannot touch them any more.
        The control thread must not wait here: the thread may be in a request
        to a broker whose own control thread waits likewise (two brokers each
        deleting a topic the other leads waited 5 s each for the other's
        fetcher, in the admin soak of issue 12)."""
        self._stopping.set()
        with self._lock:
            self._changed.notify_all()
        self.client.shutdown()   # fails a request in flight, and any after it

    def join(self, timeout_s: float) -> None:
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout_s)

    # --- the fetcher thread

    def _run(self) -> None:
        log.info("fetcher from broker %s at %s:%s started", self.source_broker_id, *self.endpoint)
        while not self._stopping.is_set():
            self.run_once()
        self.client.close()
        log.info("fetcher from broker %s stopped", self.source_broker_id)

    def run_once(self) -> None:
        """One round: truncate the partitions that must, fetch the others."""
        work = self._next_round()
        if work is None:
            return
        try:
            # Connect before building a request for thousands of partitions:
            # retrying a dead leader must cost a connection attempt, no more.
            self.client.connect()
            if work.truncating:
                self._truncate(work.truncating)
            if work.fetching:
                self._fetch()
            self._connect_backoff_s = self.config.connect_backoff_initial_ms / 1000
        except BrokerConnectionError as error:
            self.session.reset()   # the leader may have moved the session on without us
            if self._stopping.is_set():
                return
            log.info("fetcher from broker %s: %s; retrying in %.1f s",
                     self.source_broker_id, error, self._connect_backoff_s)
            self._stopping.wait(self._connect_backoff_s)
            self._connect_backoff_s = min(self._connect_backoff_s * 2,
                                          self.config.connect_backoff_max_ms / 1000)
        except Exception as error:  # a bug or a broken log: keep the thread, slow it down
            fatal.halt_if_fatal(error, f"fetcher from broker {self.source_broker_id}")
            log.exception("fetcher from broker %s failed; backing off", self.source_broker_id)
            self._stopping.wait(self.config.fetch_backoff_ms / 1000)

    def _next_round(self) -> _Round | None:
        with self._lock:
            now = time.monotonic()
            self._refresh(now)
            if not self._wanted and not self._truncating:
                delays = [until - now for until in self._delayed.values()]
                self._changed.wait(min(delays + [IDLE_WAIT_S]))
                return None
            return _Round([self._states[key] for key in self._truncating], bool(self._wanted))

    def _refresh(self, now: float) -> None:
        """Under the lock: bring `_wanted`, `_truncating` and `_delayed` up to
        date for the partitions that changed (all of them now and then, and
        while throttling: log start offsets move with retention, and the
        throttle's verdicts with the rate)."""
        throttling = self._throttling()
        if throttling or now >= self._next_full_refresh:
            self._dirty.update(self._states)
            self._dirty.update(self._wanted)
            self._next_full_refresh = now + FULL_REFRESH_S
        for key, until in list(self._delayed.items()):
            if until <= now:
                self._dirty.add(key)
        for key in self._dirty:
            self._wanted.pop(key, None)
            self._truncating.discard(key)
            self._delayed.pop(key, None)
            state = self._states.get(key)
            if state is None:
                continue
            if state.delayed_until > now:
                self._delayed[key] = state.delayed_until
            elif state.truncating:
                self._truncating.add(key)
            elif throttling and self.throttle.is_throttled(state.partition):
                state.delay(THROTTLED_DELAY_S)   # sits out while the rate is exceeded
                self._delayed[key] = state.delayed_until
            else:
                log_ = state.partition.log
                self._wanted[key] = ((log_.log_end_offset, log_.log_start_offset, state.leader_epoch), state)
        self.session.note_changed(self._dirty)
        self._dirty = set()

    def _throttling(self) -> bool:
        """Whether throttled, out-of-sync partitions sit out this round (the rate is exceeded)."""
        return self.throttle is not None and self.throttle.exceeded()

    def _still_fetching(self, state: PartitionFetchState) -> bool:
        """Under the lock: the partition was not removed or re-added meanwhile."""
        return self._states.get(state.key) is state

    # --- truncation

    def _truncate(self, states: list[PartitionFetchState]) -> None:
        asking = []
        with self._lock:
            for state in states:
                if not self._still_fetching(state):
                    continue
                epoch = state.partition.log.latest_epoch
                if epoch is None or state.truncation_rounds >= MAX_TRUNCATION_ROUNDS:
                    self._truncate_to_high_watermark(state)
                else:
                    asking.append((state, epoch))
        with self._lock:
            self._dirty.update(state.key for state in states)   # whatever happens next
        if not asking:
            return
        response = self.client.request(self._epoch_request(asking))
        answers = {(t.topic, p.partition): p for t in response.topics for p in t.partitions}
        with self._lock:
            for state, _ in asking:
                answer = answers.get(state.key)
                if not self._still_fetching(state):
                    continue
                if answer is None:
                    state.delay(self.config.fetch_backoff_ms / 1000)
                elif answer.error_code != ErrorCode.none:
                    self._back_off(state, answer.error_code, "OffsetForLeaderEpoch")
                else:
                    self._apply_epoch_answer(state, answer.leader_epoch, answer.end_offset)
        log.info("fetcher from broker %s: %d partitions asked OffsetForLeaderEpoch, %d truncated and fetching",
                 self.source_broker_id, len(asking), sum(1 for state, _ in asking if not state.truncating))

    def _epoch_request(self, asking) -> epoch_v4.OffsetForLeaderEpochRequest:
        by_topic: dict[str, list] = {}
        for state, epoch in asking:
            by_topic.setdefault(state.partition.topic, []).append(epoch_v4.OffsetForLeaderPartition(
                partition=state.partition.index,
                current_leader_epoch=state.leader_epoch,
                leader_epoch=epoch,
            ))
        return epoch_v4.OffsetForLeaderEpochRequest(
            replica_id=self.broker_id,
            topics=tuple(epoch_v4.OffsetForLeaderTopic(topic=topic, partitions=tuple(parts))
                         for topic, parts in by_topic.items()),
        )

    def _apply_epoch_answer(self, state: PartitionFetchState, leader_epoch: int, leader_end_offset: int) -> None:
        partition = state.partition
        if not partition.is_following(state.leader_id, state.leader_epoch):
            return
        local_epoch, local_end_offset = (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
        if leader_epoch != UNDEFINED_EPOCH:
            local_epoch, local_end_offset = partition.log.end_offset_for_epoch(leader_epoch)
        decision = truncation_for(leader_epoch, leader_end_offset, local_epoch, local_end_offset,
                                  partition.log.log_end_offset, partition.high_watermark)
        partition.follower_truncate_to(decision.offset)
        state.truncation_rounds += 1
        if decision.complete:
            state.truncating = False
            state.truncation_rounds = 0
            # Debug: a broker taking over 10,000 followerships would log 10,000 lines.
            log.debug("%s-%s: fetching from %s (leader %s, epoch %s)", partition.topic, partition.index,
                      partition.log.log_end_offset, state.leader_id, state.leader_epoch)

    def _truncate_to_high_watermark(self, state: PartitionFetchState) -> None:
        partition = state.partition
        partition.follower_truncate_to(min(partition.high_watermark, partition.log.log_end_offset))
        state.truncating = False
        state.truncation_rounds = 0

    # --- fetching

    def _fetch(self) -> None:
        plan = self.session.plan(Positions(self._wanted))
        wait_s = self.config.fetch_wait_max_ms / 1000
        # Records arrive as views of the client's receive buffer (no copy):
        # they are appended below, before the next request reuses it.
        response = self.client.request(self._fetch_request(plan),
                                       timeout_s=wait_s + self.config.socket_timeout_ms / 1000,
                                       response_cls=FetchResponseV12)
        if response.error_code in SESSION_ERRORS:
            log.info("fetcher from broker %s: %s; starting a new fetch session", self.source_broker_id,
                     ErrorCode(response.error_code).name)
            self.session.reset()
            return
        if response.error_code != ErrorCode.none:
            self.session.reset()
            with self._lock:
                for _, state in self._wanted.values():
                    self._back_off(state, response.error_code, "Fetch")
                self._dirty.update(self._wanted)
            return
        self.session.answered(plan, response.session_id)
        with self._lock:
            for topic in response.responses:
                for data in topic.partitions:
                    key = (topic.topic, data.partition_index)
                    entry = self._wanted.get(key)
                    if entry is None:
                        continue
                    (fetch_offset, _, _), state = entry
                    self._dirty.add(key)
                    if self._still_fetching(state):
                        self._apply_fetched(state, fetch_offset, data)

    def _fetch_request(self, plan: FetchPlan) -> fetch_v12.FetchRequest:
        by_topic: dict[str, list] = {}
        for key, (fetch_offset, log_start_offset, leader_epoch) in plan.send.items():
            by_topic.setdefault(key[0], []).append(fetch_v12.FetchPartition(
                partition=key[1],
                current_leader_epoch=leader_epoch,
                fetch_offset=fetch_offset,
                log_start_offset=log_start_offset,
                partition_max_bytes=self.config.fetch_max_bytes,
            ))
        forgotten: dict[str, list[int]] = {}
        for topic, index in plan.forgotten:
            forgotten.setdefault(topic, []).append(index)
        return fetch_v12.FetchRequest(
            replica_id=self.broker_id,
            max_wait=datetime.timedelta(milliseconds=self.config.fetch_wait_max_ms),
            min_bytes=self.config.fetch_min_bytes,
            max_bytes=self.config.fetch_response_max_bytes,
            session_id=plan.session_id,
            session_epoch=plan.epoch,
            topics=tuple(fetch_v12.FetchTopic(topic=topic, partitions=tuple(parts))
                         for topic, parts in by_topic.items()),
            forgotten_topics_data=tuple(fetch_v12.ForgottenTopic(topic=topic, partitions=tuple(parts))
                                        for topic, parts in forgotten.items()),
        )

    def _apply_fetched(self, state: PartitionFetchState, fetch_offset: int, data) -> None:
        partition = state.partition
        error = data.error_code
        if error == ErrorCode.offset_out_of_range:
            self._on_out_of_range(state, data.log_start_offset)
            return
        if error != ErrorCode.none:
            self._back_off(state, error, "Fetch")
            return
        if not partition.is_following(state.leader_id, state.leader_epoch):
            return  # the role changed without us being told: never append then
        if partition.log.log_end_offset != fetch_offset:
            return  # truncated since the request was sent; fetch again from the new end
        state.out_of_range_after_truncation = False
        if data.records:
            if self.throttle is not None and self.throttle.is_throttled(partition):
                self.throttle.record(len(data.records))
            try:
                partition.follower_append(data.records)
            except (UnexpectedAppendOffsetError, OffsetsOutOfOrderError) as problem:
                log.warning("%s-%s: %s; truncating again", partition.topic, partition.index, problem)
                state.truncating = True
                return
            except (InvalidRecordError, LogError) as problem:
                log.warning("%s-%s: cannot append fetched batches: %s", partition.topic, partition.index, problem)
                state.delay(self.config.fetch_backoff_ms / 1000)
                return
        partition.follower_update(data.high_watermark, data.log_start_offset)

    def _on_out_of_range(self, state: PartitionFetchState, leader_log_start_offset: int) -> None:
        partition = state.partition
        log_end_offset = partition.log.log_end_offset
        if leader_log_start_offset > log_end_offset:
            # Retention on the leader moved its log start past our end: what
            # we have is older than anything it keeps; start again there.
            log.info("%s-%s: leader's log starts at %s, past our end %s: starting over there",
                     partition.topic, partition.index, leader_log_start_offset, log_end_offset)
            partition.follower_truncate_fully_and_start_at(leader_log_start_offset)
            return
        if state.out_of_range_after_truncation:
            log.warning("%s-%s: still out of range at the leader after truncation; backing off",
                        partition.topic, partition.index)
            state.delay(self.config.fetch_backoff_ms / 1000)
        state.out_of_range_after_truncation = True
        state.truncating = True  # our end is past the leader's: cut the divergent tail

    def _back_off(self, state: PartitionFetchState, error: ErrorCode, what: str) -> None:
        if error not in RETRIABLE_PARTITION_ERRORS:
            log.warning("%s-%s: %s from broker %s answered %s", state.partition.topic,
                        state.partition.index, what, self.source_broker_id, error.name)
        if error == ErrorCode.fenced_leader_epoch:
            state.truncating = True  # a newer epoch exists: truncate again once told of it
        state.delay(self.config.fetch_backoff_ms / 1000)


class ReplicaFetcherManager:
    """The fetcher threads of one broker, one per source broker."""

    def __init__(self, broker_id: int, config: FetcherConfig, throttle=None) -> None:
        self.broker_id = broker_id
        self.config = config
        self.throttle = throttle   # FollowerThrottle-like: skip(partition) / record(size); None: never
        self._fetchers: dict[int, ReplicaFetcherThread] = {}
        self._stopped: list[ReplicaFetcherThread] = []   # asked to stop, joined at shutdown
        self._lock = threading.Lock()

    def add_partitions(self, leader_id: int, endpoint: tuple[str, int],
                       states: Iterable[PartitionFetchState]) -> None:
        with self._lock:
            fetcher = self._fetchers.get(leader_id)
            moved: list[PartitionFetchState] = []
            if fetcher is not None and fetcher.endpoint != tuple(endpoint):
                moved = fetcher.remove_partitions(list(fetcher.partitions()))
                self._retire(fetcher)
                fetcher = None
            if fetcher is None:
                fetcher = ReplicaFetcherThread(self.broker_id, leader_id, endpoint[0], endpoint[1], self.config)
                fetcher.throttle = self.throttle
                self._fetchers[leader_id] = fetcher
                fetcher.start()
            fetcher.add_partitions(moved + list(states))

    def remove_partitions(self, keys: Iterable[tuple[str, int]]) -> None:
        keys = list(keys)
        with self._lock:
            for leader_id, fetcher in list(self._fetchers.items()):
                fetcher.remove_partitions(keys)
                if fetcher.partition_count() == 0:
                    del self._fetchers[leader_id]
                    self._retire(fetcher)

    def _retire(self, fetcher: ReplicaFetcherThread) -> None:
        """Under the lock: stop it without waiting (see request_stop)."""
        fetcher.request_stop()
        self._stopped = [f for f in self._stopped if f.is_alive()]
        self._stopped.append(fetcher)

    def fetcher_for(self, source_broker_id: int) -> ReplicaFetcherThread | None:
        with self._lock:
            return self._fetchers.get(source_broker_id)

    def fetching(self) -> Mapping[tuple[str, int], PartitionFetchState]:
        with self._lock:
            fetchers = list(self._fetchers.values())
        result = {}
        for fetcher in fetchers:
            result.update(fetcher.partitions())
        return result

    def shutdown(self) -> None:
        with self._lock:
            fetchers, self._fetchers = list(self._fetchers.values()), {}
            stopped, self._stopped = self._stopped, []
        for fetcher in fetchers:
            fetcher.request_stop()
        for fetcher in fetchers + stopped:
            fetcher.join(5.0)
