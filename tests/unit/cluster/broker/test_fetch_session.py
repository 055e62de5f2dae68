"""Incremental fetch sessions (KIP-227): the leader's cache and the fetcher's
view of its session, together, without sockets."""

import datetime
import random

from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12 import request as fetch_v12

from kafkactl.cluster.broker.fetch_session import (
    FINAL_EPOCH, INITIAL_EPOCH, NO_SESSION_ID, FetchSessionCache, PartitionChanges,
)
from kafkactl.cluster.broker.fetcher_session import FetchSessionState


def request(session_id=0, epoch=-1, partitions=(), forgotten=(), replica_id=2):
    """partitions: (topic, index, fetch_offset[, leader_epoch]); forgotten: (topic, index)."""
    by_topic, gone = {}, {}
    for topic, index, offset, *epoch_ in partitions:
        by_topic.setdefault(topic, []).append(fetch_v12.FetchPartition(
            partition=index, fetch_offset=offset, current_leader_epoch=(epoch_ or [0])[0],
            log_start_offset=0, partition_max_bytes=1 << 20))
    for topic, index in forgotten:
        gone.setdefault(topic, []).append(index)
    return fetch_v12.FetchRequest(
        replica_id=replica_id, max_wait=datetime.timedelta(milliseconds=500), min_bytes=1,
        session_id=session_id, session_epoch=epoch,
        topics=tuple(fetch_v12.FetchTopic(topic=t, partitions=tuple(p)) for t, p in by_topic.items()),
        forgotten_topics_data=tuple(fetch_v12.ForgottenTopic(topic=t, partitions=tuple(p)) for t, p in gone.items()))


def answered(context, leader):
    """The partitions a response carries; `leader` maps (topic, index) to
    (has_records, error, high_watermark, log_start_offset)."""
    return [(t.topic, t.partition) for t in context.targets
            if context.include(t.topic, t.partition, *leader[(t.topic, t.partition)])]


def quiet(keys, high_watermark=10):
    return {key: (False, ErrorCode.none, high_watermark, 0) for key in keys}


KEYS = [("t", 0), ("t", 1), ("u", 0)]


def test_a_session_then_only_what_changed():
    cache = FetchSessionCache(rng=random.Random(1))
    full = cache.context(request(0, INITIAL_EPOCH, [(t, p, 5) for t, p in KEYS]), replica_id=2)
    assert full.session_id != NO_SESSION_ID and [(t.topic, t.partition) for t in full.targets] == KEYS
    assert answered(full, quiet(KEYS)) == KEYS                     # a full response: everything
    nothing = cache.context(request(full.session_id, 1), replica_id=2)
    assert [(t.topic, t.partition, t.fetch_offset) for t in nothing.targets] == [(t, p, 5) for t, p in KEYS]
    assert answered(nothing, quiet(KEYS)) == []                    # nothing new: an empty response
    moved = cache.context(request(full.session_id, 2, [("t", 1, 9)]), replica_id=2)
    leader = quiet(KEYS) | {("u", 0): (True, ErrorCode.none, 10, 0), ("t", 0): (False, ErrorCode.none, 11, 0)}
    assert answered(moved, leader) == [("t", 0), ("u", 0)]         # a new HW, and records
    assert next(t for t in moved.targets if t.partition == 1 and t.topic == "t").fetch_offset == 9
    again = cache.context(request(full.session_id, 3), replica_id=2)
    assert answered(again, leader) == [("u", 0)]                   # the HW was sent already


def test_errors_are_always_answered_and_their_state_resent_after():
    cache = FetchSessionCache(rng=random.Random(2))
    session_id = cache.context(request(0, 0, [("t", 0, 0)]), 2).session_id
    failing = {("t", 0): (False, ErrorCode.not_leader_or_follower, -1, -1)}
    assert answered(cache.context(request(session_id, 1), 2), failing) == [("t", 0)]
    assert answered(cache.context(request(session_id, 2), 2), quiet([("t", 0)])) == [("t", 0)]
    assert answered(cache.context(request(session_id, 3), 2), quiet([("t", 0)])) == []


def test_forgotten_added_and_a_truncated_partition_resent():
    cache = FetchSessionCache(rng=random.Random(3))
    session_id = cache.context(request(0, 0, [("t", 0, 7), ("t", 1, 7)]), 2).session_id
    context = cache.context(request(session_id, 1, [("u", 0, 0)], forgotten=[("t", 1)]), 2)
    assert [(t.topic, t.partition) for t in context.targets] == [("t", 0), ("u", 0)]
    assert answered(context, quiet([("t", 0), ("u", 0)])) == [("t", 0), ("u", 0)]   # t-0's HW was never sent
    truncated = cache.context(request(session_id, 2, [("t", 0, 3)]), 2)
    assert answered(truncated, quiet([("t", 0), ("u", 0)])) == [("t", 0)]


def test_wrong_epoch_unknown_session_and_closing():
    cache = FetchSessionCache(rng=random.Random(4))
    session_id = cache.context(request(0, 0, [("t", 0, 0)]), 2).session_id
    assert cache.context(request(session_id, 5), 2).error == ErrorCode.invalid_fetch_session_epoch
    assert cache.context(request(session_id + 1, 1), 2).error == ErrorCode.fetch_session_id_not_found
    assert cache.context(request(session_id, 1), 2).error == ErrorCode.none
    closed = cache.context(request(session_id, FINAL_EPOCH, [("t", 0, 0)]), 2)
    assert closed.session_id == NO_SESSION_ID and len(cache) == 0
    assert cache.context(request(session_id, 2), 2).error == ErrorCode.fetch_session_id_not_found


def test_a_full_cache_evicts_idle_sessions_and_prefers_followers():
    now = [0]
    cache = FetchSessionCache(max_sessions=2, eviction_ms=1000, clock_ms=lambda: now[0], rng=random.Random(5))
    consumer = cache.context(request(0, 0, [("t", 0, 0)], replica_id=-1), -1).session_id
    follower = cache.context(request(0, 0, [("t", 0, 0)]), 2).session_id
    assert cache.context(request(0, 0, [("t", 0, 0)], replica_id=-1), -1).session_id == NO_SESSION_ID
    other_follower = cache.context(request(0, 0, [("t", 1, 0)], replica_id=3), 3).session_id
    assert other_follower != NO_SESSION_ID                         # took the consumer's place
    assert cache.context(request(consumer, 1), -1).error == ErrorCode.fetch_session_id_not_found
    now[0] = 1000
    assert cache.context(request(0, 0, [("t", 0, 0)], replica_id=-1), -1).session_id != NO_SESSION_ID
    assert {cache.context(request(s, 1), 2).error for s in (follower, other_follower)} \
        == {ErrorCode.none, ErrorCode.fetch_session_id_not_found}  # the idle one went


def test_the_fetcher_and_the_leader_stay_in_step():
    cache = FetchSessionCache(rng=random.Random(6))
    fetcher = FetchSessionState()
    positions = {key: (0, 0, 1) for key in KEYS}
    sent_partitions = []
    for round_ in range(6):
        plan = fetcher.plan(dict(positions))
        sent_partitions.append((len(plan.send), len(plan.forgotten)))
        wire = request(plan.session_id, plan.epoch, [(*key, p[0], p[2]) for key, p in plan.send.items()],
                       plan.forgotten)
        context = cache.context(wire, 2)
        assert context.error == ErrorCode.none
        assert {(t.topic, t.partition): t.fetch_offset for t in context.targets} \
            == {key: position[0] for key, position in positions.items()}
        fetcher.answered(plan, context.session_id)
        if round_ == 2:
            positions[("t", 1)] = (4, 0, 1)                        # it appended what it fetched
            fetcher.note_changed([("t", 1), ("t", 0)])             # t-0 looked at, unchanged
        if round_ == 3:
            del positions[("u", 0)]                                # it stopped following u-0
            fetcher.note_changed([("u", 0)])
    assert sent_partitions == [(3, 0), (0, 0), (0, 0), (1, 0), (0, 1), (0, 0)]
    fetcher.reset()
    assert fetcher.plan(dict(positions)).epoch == INITIAL_EPOCH


def test_a_change_not_noted_is_not_sent():
    """The fetcher notes what it touched; the plan compares only those (so an
    idle round over 10,000 partitions costs nothing)."""
    fetcher = FetchSessionState()
    positions = {("t", 0): (0, 0, 1)}
    fetcher.answered(fetcher.plan(positions), 77)
    positions[("t", 0)] = (5, 0, 1)
    assert fetcher.plan(positions).send == {}
    fetcher.note_changed([("t", 0)])
    assert fetcher.plan(positions).send == {("t", 0): (5, 0, 1)}


# --- change tracking: an idle incremental fetch reads nothing ------------------------

def tracked(keys, replica_id=2):
    """A cache with change tracking and a session of `keys`, all settled after its first answer."""
    changes = PartitionChanges()
    cache = FetchSessionCache(rng=random.Random(7), changes=changes)
    full = cache.context(request(0, INITIAL_EPOCH, [(t, p, 5) for t, p in keys], replica_id=replica_id), replica_id)
    assert [(t.topic, t.partition) for t in full.targets] == list(keys)
    full.settle(keys, [])
    return changes, cache, full.session_id


def read(context):
    return [(t.topic, t.partition) for t in context.targets]


def test_an_idle_incremental_fetch_reads_no_partition_but_still_waits():
    changes, cache, session_id = tracked(KEYS)
    idle = cache.context(request(session_id, 1), 2)
    assert read(idle) == [] and idle.waits_for_changes and idle.clock is not None
    assert idle.more_targets() == []


def test_noted_listed_and_unsettled_partitions_are_read_in_the_sessions_order():
    changes, cache, session_id = tracked(KEYS)
    changes.note(("u", 0))
    changes.note(("t", 0))
    changes.note(("other", 0))                                      # not in this session
    context = cache.context(request(session_id, 1, [("t", 1, 9)]), 2)
    assert read(context) == [("t", 0), ("t", 1), ("u", 0)]
    context.settle([("t", 0), ("t", 1)], [("u", 0)])               # u-0 still has something to send
    assert read(cache.context(request(session_id, 2), 2)) == [("u", 0)]
    assert read(cache.context(request(session_id, 3), 2)) == [("u", 0)]
    cache.context(request(session_id, 4), 2).settle([("u", 0)], [])
    assert read(cache.context(request(session_id, 5), 2)) == []


def test_a_change_during_the_long_poll_is_read_before_answering():
    changes, cache, session_id = tracked(KEYS)
    context = cache.context(request(session_id, 1), 2)
    assert read(context) == []
    changes.note(("t", 1))                                          # an append while it waits
    assert [(t.topic, t.partition) for t in context.more_targets()] == [("t", 1)]
    assert read(context) == [("t", 1)] and context.more_targets() == []
    context.settle([("t", 1)], [])
    assert read(cache.context(request(session_id, 2), 2)) == []    # already read: not again


def test_a_forgotten_partition_is_not_read_when_it_changes():
    changes, cache, session_id = tracked(KEYS)
    context = cache.context(request(session_id, 1, forgotten=[("t", 1)]), 2)
    assert context.forgotten == [("t", 1)] and read(context) == []
    changes.note(("t", 1))
    assert read(cache.context(request(session_id, 2), 2)) == []


def test_partition_changes_keep_one_entry_per_partition_newest_last():
    changes = PartitionChanges()
    start = changes.position
    changes.note(("t", 0))
    changes.note_many([("t", 1), ("t", 0)])
    position, changed = changes.since(start)
    assert position == start + 3 and sorted(changed) == [("t", 0), ("t", 1)]
    assert changes.since(position) == (position, [])
    assert changes.since(start + 2)[1] == [("t", 0)]
