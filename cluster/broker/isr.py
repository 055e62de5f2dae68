"""In-sync replica rules of a partition leader (pure: no locks, no clock, no I/O).

The leader keeps one `FollowerState` per follower, updated on each of its
fetches (KIP-392's "replica state"; seed 001):

- `log_end_offset`: the follower's fetch offset, i.e. everything below it is
  on the follower. -1 until its first fetch after this broker became leader.
- `last_fetch_leader_log_end_offset` / `last_fetch_time_ms`: the leader's log
  end offset and the time at the follower's previous fetch.
- `last_caught_up_time_ms`: the last time the follower was known to have
  everything the leader had. A fetch at or past the leader's current log end
  offset proves it caught up now; a fetch at or past the leader's log end
  offset of the previous fetch proves it was caught up at that fetch.
- `pending_reads`: fetches that proved the follower caught up (offset at or
  past the previous fetch's leader log end offset) and are still being
  served; with `follower.fetch.pending.reads.insync.enable` they keep the
  follower in sync, and the caught-up time becomes the time the fetch is
  served rather than received, so a leader slow to serve reads does not
  push its followers out of the ISR.

- `clock`: a follower fetching through an incremental fetch session does
  not list, and the leader does not read, a partition where it already has
  everything (fetch_session.py). Each of its fetches would record the same
  fetch at the same log end offset, proving it caught up at that fetch's
  time; the session's `FollowerFetchClock` records that once per fetch for
  every such partition, and a state whose last fetch was at the log end
  points to it. The partition's next real fetch folds the clock in (`settle`).

A follower is out of sync when it is behind the leader's log end offset and
has not caught up for more than replica.lag.time.max.ms. It may join the ISR
once it has everything up to the high watermark and up to the start of the
current leader epoch (so a follower never joins with a log that may still
diverge from this leader's). The high watermark is the smallest log end
offset in the ISR.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple

UNKNOWN_OFFSET = -1


class FollowerFetchClock:
    """The fetches of one follower's fetch session, for the partitions it did
    not have to read (see FollowerState.clock). Written by the one thread
    serving the session's current fetch; read by the ISR checks."""

    __slots__ = ("last_fetch_time_ms", "last_caught_up_time_ms", "pending_reads")

    def __init__(self) -> None:
        self.last_fetch_time_ms = 0
        self.last_caught_up_time_ms = 0
        self.pending_reads = 0

    def begin_fetch(self, fetch_time_ms: int, pending_reads_enabled: bool) -> None:
        """A fetch of the session began: every partition it skips was at the log end."""
        self.last_fetch_time_ms = max(self.last_fetch_time_ms, fetch_time_ms)
        if pending_reads_enabled:
            self.pending_reads += 1   # caught up once served, as record_fetch
        else:
            self.last_caught_up_time_ms = max(self.last_caught_up_time_ms, fetch_time_ms)

    def end_fetch(self, served_time_ms: int, pending_reads_enabled: bool) -> None:
        if pending_reads_enabled:
            self.pending_reads = max(self.pending_reads - 1, 0)
            self.last_caught_up_time_ms = max(self.last_caught_up_time_ms, served_time_ms)


class FollowerState(NamedTuple):
    # A tuple: one is made for every partition of every follower fetch, and
    # a tuple is built several times faster than a frozen dataclass.
    broker_id: int
    log_end_offset: int = UNKNOWN_OFFSET
    log_start_offset: int = UNKNOWN_OFFSET
    last_fetch_leader_log_end_offset: int = UNKNOWN_OFFSET
    last_fetch_time_ms: int = 0
    last_caught_up_time_ms: int = 0
    pending_reads: int = 0
    clock: FollowerFetchClock | None = None   # the session's fetches since, when this fetch was at the log end


def settle(state: FollowerState) -> FollowerState:
    """The state with its session's later fetches folded in, detached from the clock."""
    clock = state.clock
    if clock is None:
        return state
    return state._replace(last_fetch_time_ms=max(state.last_fetch_time_ms, clock.last_fetch_time_ms),
                          last_caught_up_time_ms=max(state.last_caught_up_time_ms, clock.last_caught_up_time_ms),
                          clock=None)


def reset_on_become_leader(broker_id: int, in_isr: bool, now_ms: int) -> FollowerState:
    """A follower's state when this broker (re)becomes leader.

    What the follower had under the previous leader is unknown here, so its
    log end offset is unknown and holds the high watermark back until it
    fetches. An ISR member counts as caught up now, so it is not dropped
    before it had replica.lag.time.max.ms to fetch; any other follower as
    never caught up.
    """
    return FollowerState(broker_id, last_caught_up_time_ms=now_ms if in_isr else 0)


class FetchRecord(NamedTuple):
    """What one follower fetch proved, and the state after it."""

    state: FollowerState
    pending: bool          # counted in pending_reads until the fetch is served
    proves_caught_up: bool


def record_fetch(state: FollowerState, fetch_offset: int, follower_log_start_offset: int,
                 leader_log_end_offset: int, fetch_time_ms: int,
                 pending_reads_enabled: bool, clock: FollowerFetchClock | None = None) -> FetchRecord:
    """The follower fetched from `fetch_offset` at `fetch_time_ms`; `clock`:
    its fetch session's, which the state follows while the follower stays at
    the log end without listing the partition again."""
    if state.clock is not None:
        state = settle(state)
    caught_up_now = fetch_offset >= leader_log_end_offset
    caught_up_at_previous_fetch = (
        state.last_fetch_leader_log_end_offset != UNKNOWN_OFFSET
        and fetch_offset >= state.last_fetch_leader_log_end_offset
    )
    caught_up_time_ms = state.last_caught_up_time_ms
    pending = False
    if pending_reads_enabled and (caught_up_now or caught_up_at_previous_fetch):
        pending = True  # the caught-up time is set when the fetch is served
    elif caught_up_now:
        caught_up_time_ms = max(caught_up_time_ms, fetch_time_ms)
    elif caught_up_at_previous_fetch:
        caught_up_time_ms = max(caught_up_time_ms, state.last_fetch_time_ms)
    # The constructor, not _replace: this runs for every partition
    # of every follower fetch (10,000s per second on a large leader).
    new_state = FollowerState(
        state.broker_id,
        log_end_offset=fetch_offset,
        log_start_offset=follower_log_start_offset,
        last_fetch_leader_log_end_offset=leader_log_end_offset,
        last_fetch_time_ms=fetch_time_ms,
        last_caught_up_time_ms=caught_up_time_ms,
        pending_reads=state.pending_reads + (1 if pending else 0),
        clock=clock if caught_up_now else None,
    )
    return FetchRecord(new_state, pending, caught_up_now or caught_up_at_previous_fetch)


def complete_fetch(state: FollowerState, record: FetchRecord, served_time_ms: int) -> FollowerState:
    """A fetch counted as pending has been served: it proved the follower caught up now."""
    if not record.pending:
        return state
    return state._replace(
        pending_reads=max(state.pending_reads - 1, 0),
        last_caught_up_time_ms=max(state.last_caught_up_time_ms, served_time_ms),
    )


def is_out_of_sync(state: FollowerState, leader_log_end_offset: int, now_ms: int,
                   replica_lag_time_max_ms: int, pending_reads_enabled: bool) -> bool:
    if state.log_end_offset == leader_log_end_offset:
        return False  # has everything, however long ago it fetched
    if state.clock is not None:
        state = settle(state)._replace(pending_reads=state.pending_reads + state.clock.pending_reads)
    if pending_reads_enabled and state.pending_reads > 0:
        return False
    return now_ms - state.last_caught_up_time_ms > replica_lag_time_max_ms


def out_of_sync_replicas(leader_id: int, isr: Iterable[int], followers: Mapping[int, FollowerState],
                         leader_log_end_offset: int, now_ms: int, replica_lag_time_max_ms: int,
                         pending_reads_enabled: bool) -> set[int]:
    """ISR members the leader should drop (never itself)."""
    result = set()
    for replica in isr:
        if replica == leader_id:
            continue
        state = followers.get(replica)
        if state is None or is_out_of_sync(state, leader_log_end_offset, now_ms,
                                           replica_lag_time_max_ms, pending_reads_enabled):
            result.add(replica)
    return result


def can_join_isr(state: FollowerState, high_watermark: int, leader_epoch_start_offset: int) -> bool:
    """Kafka's rule: at or past the high watermark and the current epoch's start."""
    if state.log_end_offset == UNKNOWN_OFFSET or leader_epoch_start_offset == UNKNOWN_OFFSET:
        return False
    return state.log_end_offset >= high_watermark and state.log_end_offset >= leader_epoch_start_offset


def high_watermark_candidate(leader_id: int, leader_log_end_offset: int, isr: Iterable[int],
                             followers: Mapping[int, FollowerState]) -> int:
    """The smallest log end offset in the ISR; UNKNOWN_OFFSET if one is unknown.

    The caller only ever moves the high watermark up to this value.
    """
    candidate = leader_log_end_offset
    for replica in isr:
        if replica == leader_id:
            continue
        state = followers.get(replica)
        if state is None or state.log_end_offset == UNKNOWN_OFFSET:
            return UNKNOWN_OFFSET
        candidate = min(candidate, state.log_end_offset)
    return candidate


def next_high_watermark(current: int, candidate: int) -> int:
    """A leader's high watermark never goes back."""
    return max(current, candidate)
