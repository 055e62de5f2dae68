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
"""

from __future__ import annotations

import random
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, NamedTuple

from kio.schema.errors import ErrorCode

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


@dataclass(slots=True)
class CachedPartition:
    target: FetchTarget
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


class FetchContext:
    """What one Fetch reads and how its response is cut down."""

    def __init__(self, targets: list[FetchTarget], session: FetchSession | None = None,
                 incremental: bool = False, error: ErrorCode = ErrorCode.none) -> None:
        self.targets = targets
        self.session_id = session.session_id if session is not None else NO_SESSION_ID
        self.error = error
        self._session = session
        self._incremental = incremental

    def include(self, topic: str, partition: int, has_records: bool, error: ErrorCode,
                high_watermark: int, log_start_offset: int) -> bool:
        """Whether the response carries this partition: always, except in an
        incremental fetch; a session remembers what it was sent."""
        cached = None if self._session is None else self._session.partitions.get((topic, partition))
        if cached is None:
            return True
        changed = cached.must_respond(has_records, error, high_watermark, log_start_offset)
        return changed or not self._incremental


def targets_of(request) -> list[FetchTarget]:
    return [FetchTarget(topic.topic, p.partition, p.fetch_offset, getattr(p, "log_start_offset", -1),
                        p.partition_max_bytes, getattr(p, "current_leader_epoch", -1))
            for topic in request.topics for p in topic.partitions]


def forgotten_of(request) -> list[tuple[str, int]]:
    return [(topic.topic, partition) for topic in getattr(request, "forgotten_topics_data", ())
            for partition in topic.partitions]


class FetchSessionCache:
    def __init__(self, max_sessions: int = 1000, eviction_ms: int = 120_000,
                 clock_ms: Callable[[], int] | None = None, rng: random.Random | None = None) -> None:
        self.max_sessions = max_sessions
        self.eviction_ms = eviction_ms
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
                return FetchContext(targets, self._create(targets, privileged=replica_id >= 0))
            return self._incremental(request, session_id, epoch)

    def _incremental(self, request, session_id: int, epoch: int) -> FetchContext:
        session = self._sessions.get(session_id)
        if session is None:
            return FetchContext([], error=ErrorCode.fetch_session_id_not_found)
        if epoch != session.next_epoch:
            return FetchContext([], error=ErrorCode.invalid_fetch_session_epoch)
        for key in forgotten_of(request):
            session.partitions.pop(key, None)
        for target in targets_of(request):
            cached = session.partitions.get((target.topic, target.partition))
            if cached is None:
                session.partitions[(target.topic, target.partition)] = CachedPartition(target)
            else:
                if (target.fetch_offset < cached.target.fetch_offset
                        or target.current_leader_epoch != cached.target.current_leader_epoch):
                    cached.high_watermark = -1   # it truncated or moved on: tell it everything again
                cached.target = target
        session.next_epoch = 1 if epoch >= MAX_EPOCH else epoch + 1
        session.last_used_ms = self._clock_ms()
        self._sessions.move_to_end(session_id)
        targets = [cached.target for cached in session.partitions.values()]
        return FetchContext(targets, session, incremental=True)

    def _create(self, targets: list[FetchTarget], privileged: bool) -> FetchSession | None:
        """A new session holding `targets`; None when the cache is full."""
        if len(self._sessions) >= self.max_sessions and not self._evict_one(privileged):
            return None
        session_id = self._new_id()
        partitions = OrderedDict(((t.topic, t.partition), CachedPartition(t)) for t in targets)
        session = FetchSession(session_id, privileged, partitions, next_epoch=1, last_used_ms=self._clock_ms())
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
