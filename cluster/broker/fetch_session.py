"""Incremental fetch sessions on the serving side (KIP-227).

A follower of 10,000 partitions would otherwise send all 10,000 in every
Fetch, and the leader answer all 10,000, twice a second even when nothing
moves. With a session the leader remembers the partitions and what it last
told the fetcher about each; an incremental request lists only partitions
whose fetch position changed, added or forgotten, and the response only
those with records, a new high watermark or log start offset, or an error.

The protocol, by (session_id, session_epoch) of the request:
- (0, -1): no session; a full request and a full response.
- (id, -1): close session `id`; otherwise as (0, -1).
- (any, 0): a full request that asks for a new session (closing `id` if
  given); the response carries the new session's id, or 0 when the cache
  has no room, and every partition.
- (id, n > 0): incremental; n must be the session's next epoch, else
  INVALID_FETCH_SESSION_EPOCH; an unknown id is FETCH_SESSION_ID_NOT_FOUND.

Sessions are bounded (max.incremental.fetch.session.cache.slots). When the
cache is full a session idle longer than min.incremental.fetch.session.
eviction.ms is evicted, and a follower's session may evict a consumer's.

An idle incremental fetch costs O(partitions that changed), not O(session):
the replica manager notes every partition whose log end offset, high
watermark, log start offset, role or ISR changes in a `PartitionChanges`
log, and a session reads only (a) the partitions its request lists, (b) the
partitions noted since its last fetch and (c) its `active` ones: those whose
last read left the fetcher something to do (records to read, an error, a
follower not yet in the ISR). Every other partition is *settled*: the fetcher
has everything, so reading it again could only answer "nothing new". For a
follower, a fetch still proves each settled partition caught up (it fetched
at the log end offset); that is recorded once per fetch in the session's
`FollowerFetchClock` (isr.py), which the leader's follower states of the
settled partitions point to, so the ISR rules see every fetch in O(1).
"""

from __future__ import annotations

import random
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Callable, NamedTuple

from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker.isr import FollowerFetchClock

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
NO_SESSION_ID = 0
MAX_EPOCH = 2**31 - 1


class FetchTarget(NamedTuple):
    """One partition to read, from the request or from the session."""

    topic: str
    partition: int
    fetch_offset: int
    log_start_offset: int          # the fetcher's own (followers), -1 for consumers
    partition_max_bytes: int
    current_leader_epoch: int


Key = tuple[str, int]


class PartitionChanges:
    """Which partitions changed, newest last, each with the sequence number of
    its latest change: a fetch session asks for what changed since the
    position it saw at its previous fetch and visits only those.

    `note` must be called before the change becomes visible (under the
    partition's lock, ahead of the append), so a session that does not see a
    note when its fetch starts knows the partition was unchanged at that time.
    One entry per partition, so the log is bounded by the partitions hosted.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._position = 0
        self._changed: dict[Key, int] = {}

    @property
    def position(self) -> int:
        return self._position

    def note(self, key: Key) -> None:
        with self._lock:
            self._position += 1
            self._changed.pop(key, None)    # re-inserted: dicts keep insertion order
            self._changed[key] = self._position

    def note_many(self, keys: Iterable[Key]) -> None:
        with self._lock:
            for key in keys:
                self._position += 1
                self._changed.pop(key, None)
                self._changed[key] = self._position

    def since(self, position: int) -> tuple[int, list[Key]]:
        """(the current position, the partitions changed after `position`)."""
        changed = []
        with self._lock:
            for key, at in reversed(self._changed.items()):
                if at <= position:
                    break
                changed.append(key)
            return self._position, changed


@dataclass(slots=True)
class CachedPartition:
    target: FetchTarget
    ordinal: int = 0               # its place in the session: reads follow the session's order
    high_watermark: int = -1       # as last sent to this session's fetcher
    log_start_offset: int = -1     # the leader's, as last sent

    def must_respond(self, has_records: bool, error: ErrorCode, high_watermark: int,
                     log_start_offset: int) -> bool:
        """Whether an incremental response includes the partition; remembers what it sends."""
        changed = (has_records or error != ErrorCode.none or high_watermark != self.high_watermark
                   or log_start_offset != self.log_start_offset)
        if error != ErrorCode.none:
            self.high_watermark = -1   # resend the state once the error clears
        elif changed:
            self.high_watermark, self.log_start_offset = high_watermark, log_start_offset
        return changed


@dataclass(slots=True)
class FetchSession:
    session_id: int
    privileged: bool               # a follower's
    partitions: OrderedDict[tuple[str, int], CachedPartition]
    next_epoch: int
    last_used_ms: int
    # Partitions to read at the next fetch whatever changed: their last read
    # left the fetcher something to do. All of them until the first answer.
    active: set[Key] = field(default_factory=set)
    seen: int = 0                  # the PartitionChanges position read at the last fetch
    next_ordinal: int = 0
    clock: FollowerFetchClock = field(default_factory=FollowerFetchClock)


class FetchContext:
    """What one Fetch reads and how its response is cut down.

    `targets` are the partitions to read now; in an incremental fetch with
    change tracking, only the session's listed, changed and active ones (see
    the module's docstring). `forgotten`: the partitions this request dropped
    from the session."""

    def __init__(self, targets: list[FetchTarget], session: FetchSession | None = None,
                 incremental: bool = False, error: ErrorCode = ErrorCode.none,
                 changes: PartitionChanges | None = None, forgotten: list[Key] | None = None) -> None:
        self.targets = targets
        self.session_id = session.session_id if session is not None else NO_SESSION_ID
        self.error = error
        self.forgotten = forgotten or []
        self._session = session
        self._incremental = incremental
        self._changes = changes

    @property
    def clock(self) -> FollowerFetchClock | None:
        """The session's clock, for a session that skips its settled partitions."""
        if self._session is None or self._changes is None:
            return None
        return self._session.clock

    @property
    def waits_for_changes(self) -> bool:
        """An incremental fetch with nothing to read now still long-polls for changes."""
        return self._session is not None and self._changes is not None and bool(self._session.partitions)

    def more_targets(self) -> list[FetchTarget]:
        """Partitions of the session that changed since the fetch began and
        are not read yet (a long poll woken by an append reads them too)."""
        session = self._session
        if session is None or self._changes is None:
            return []
        position, changed = self._changes.since(session.seen)
        session.seen = position
        reading = {(t.topic, t.partition) for t in self.targets} if changed else ()
        added = [cached.target for key in changed
                 if key not in reading and (cached := session.partitions.get(key)) is not None]
        self.targets.extend(added)
        return added

    def include(self, topic: str, partition: int, has_records: bool, error: ErrorCode,
                high_watermark: int, log_start_offset: int) -> bool:
        """Whether the response carries this partition: always, except in an
        incremental fetch; a session remembers what it was sent."""
        cached = None if self._session is None else self._session.partitions.get((topic, partition))
        if cached is None:
            return True
        changed = cached.must_respond(has_records, error, high_watermark, log_start_offset)
        return changed or not self._incremental

    def settle(self, settled: Iterable[Key], unsettled: Iterable[Key]) -> None:
        """After the answer: which partitions read now need reading at the next fetch."""
        session = self._session
        if session is None:
            return
        session.active.difference_update(settled)
        session.active.update(key for key in unsettled if key in session.partitions)


def targets_of(request) -> list[FetchTarget]:
    return [FetchTarget(topic.topic, p.partition, p.fetch_offset, getattr(p, "log_start_offset", -1),
                        p.partition_max_bytes, getattr(p, "current_leader_epoch", -1))
            for topic in request.topics for p in topic.partitions]


def forgotten_of(request) -> list[tuple[str, int]]:
    return [(topic.topic, partition) for topic in getattr(request, "forgotten_topics_data", ())
            for partition in topic.partitions]


class FetchSessionCache:
    """`changes`: the replica manager's PartitionChanges; without it every
    incremental fetch reads every partition of its session."""

    def __init__(self, max_sessions: int = 1000, eviction_ms: int = 120_000,
                 clock_ms: Callable[[], int] | None = None, rng: random.Random | None = None,
                 changes: PartitionChanges | None = None) -> None:
        self.max_sessions = max_sessions
        self.eviction_ms = eviction_ms
        self.changes = changes
        self._clock_ms = clock_ms or (lambda: 0)
        self._rng = rng or random.Random()
        self._sessions: OrderedDict[int, FetchSession] = OrderedDict()   # least recently used first
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._sessions)

    def context(self, request, replica_id: int) -> FetchContext:
        session_id = getattr(request, "session_id", NO_SESSION_ID)
        epoch = getattr(request, "session_epoch", FINAL_EPOCH)
        with self._lock:
            if epoch in (FINAL_EPOCH, INITIAL_EPOCH):
                if session_id != NO_SESSION_ID:
                    self._sessions.pop(session_id, None)
                targets = targets_of(request)
                if epoch == FINAL_EPOCH:
                    return FetchContext(targets)
                session = self._create(targets, privileged=replica_id >= 0)
                return FetchContext(targets, session, changes=self.changes if session is not None else None)
            return self._incremental(request, session_id, epoch)

    def _incremental(self, request, session_id: int, epoch: int) -> FetchContext:
        session = self._sessions.get(session_id)
        if session is None:
            return FetchContext([], error=ErrorCode.fetch_session_id_not_found)
        if epoch != session.next_epoch:
            return FetchContext([], error=ErrorCode.invalid_fetch_session_epoch)
        forgotten = forgotten_of(request)
        for key in forgotten:
            if session.partitions.pop(key, None) is not None:
                session.active.discard(key)
        listed = targets_of(request)
        for target in listed:
            key = (target.topic, target.partition)
            cached = session.partitions.get(key)
            if cached is None:
                session.partitions[key] = CachedPartition(target, session.next_ordinal)
                session.next_ordinal += 1
            else:
                if (target.fetch_offset < cached.target.fetch_offset
                        or target.current_leader_epoch != cached.target.current_leader_epoch):
                    cached.high_watermark = -1   # it truncated or moved on: tell it everything again
                cached.target = target
        session.next_epoch = 1 if epoch >= MAX_EPOCH else epoch + 1
        session.last_used_ms = self._clock_ms()
        self._sessions.move_to_end(session_id)
        if self.changes is None:
            targets = [cached.target for cached in session.partitions.values()]
        else:
            session.seen, changed = self.changes.since(session.seen)
            reading = {(t.topic, t.partition) for t in listed}
            reading.update(session.active)
            reading.update(key for key in changed if key in session.partitions)
            # In the session's order, as a read of the whole session would go.
            cached_partitions = [session.partitions[key] for key in reading]
            cached_partitions.sort(key=_ordinal)
            targets = [cached.target for cached in cached_partitions]
        return FetchContext(targets, session, incremental=True, changes=self.changes, forgotten=forgotten)

    def _create(self, targets: list[FetchTarget], privileged: bool) -> FetchSession | None:
        """A new session holding `targets`; None when the cache is full."""
        if len(self._sessions) >= self.max_sessions and not self._evict_one(privileged):
            return None
        session_id = self._new_id()
        partitions = OrderedDict(((t.topic, t.partition), CachedPartition(t, i)) for i, t in enumerate(targets))
        # Read before any partition is: a change after this is seen by the next fetch.
        seen = self.changes.position if self.changes is not None else 0
        session = FetchSession(session_id, privileged, partitions, next_epoch=1, last_used_ms=self._clock_ms(),
                               active=set(partitions), seen=seen, next_ordinal=len(partitions))
        self._sessions[session_id] = session
        return session

    def _evict_one(self, privileged: bool) -> bool:
        now = self._clock_ms()
        idle = next((s for s in self._sessions.values() if now - s.last_used_ms >= self.eviction_ms), None)
        if idle is None and privileged:
            idle = next((s for s in self._sessions.values() if not s.privileged), None)
        if idle is None:
            return False
        del self._sessions[idle.session_id]
        return True

    def _new_id(self) -> int:
        while True:
            session_id = self._rng.randint(1, MAX_EPOCH)
            if session_id not in self._sessions:
                return session_id


def _ordinal(cached: CachedPartition) -> int:
    return cached.ordinal
