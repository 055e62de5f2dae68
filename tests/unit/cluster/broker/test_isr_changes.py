"""A leader's ISR changes: proposed on the request and housekeeping threads,
written by the ISR writer's thread (isr_writer.py), never waited for by a
fetch or a produce; the split-brain guard (seed 000, discussion 3)."""

import threading
import time

from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker.isr_writer import (
    MAX_CONFLICT_RETRIES, RETRY_BACKOFF_MAX_MS, IsrProposal, IsrWriter, retry_backoff_ms,
)
from kafkactl.cluster.zk.codecs import PartitionState
from support.replication_nodes import (  # noqa: F401  (clock, zk, nodes: fixtures)
    KEY, LAG_MS, TOPIC, batch, clock, control, fetcher_for, follower_fetch, nodes, produce, shrink, state, zk,
)


# --- ISR maintenance -----------------------------------------------------------

def test_a_silent_follower_leaves_the_isr_after_the_lag_and_the_hw_moves_on(nodes, zk, clock):
    leader = nodes(1)
    zk.seed(1, 0, (1, 2))
    control(leader, state(1, 0, (1, 2)))
    produce(leader, b"a")
    shrink(leader, clock.now_ms + LAG_MS)
    assert leader.partition().isr == (1, 2) and leader.partition().high_watermark == 0
    shrink(leader, clock.now_ms + LAG_MS + 1)
    assert leader.partition().isr == (1,)
    assert zk.states[KEY].isr == [1] and zk.states[KEY].zk_version == 1 and zk.states[KEY].leader_epoch == 0
    assert leader.partition().zk_version == 1 and zk.notifications == [KEY]
    assert leader.partition().high_watermark == 1


def test_a_follower_joins_once_at_the_high_watermark_and_the_epoch_start(nodes, zk):
    leader = nodes(1)
    zk.seed(1, 0, (1, 3), zk_version=4)
    control(leader, state(1, 0, (1, 3), replicas=(1, 2, 3), zk_version=4))
    produce(leader, b"a", b"b", b"c", b"d", b"e")
    follower_fetch(leader, 3, 2)                     # HW 2
    zk.seed(1, 1, (1, 3), zk_version=5)
    control(leader, state(1, 1, (1, 3), replicas=(1, 2, 3), zk_version=5))   # epoch 1 starts at 5
    assert leader.partition().high_watermark == 2
    follower_fetch(leader, 2, 3)                     # past the HW, before the epoch start
    assert leader.partition().isr == (1, 3)
    follower_fetch(leader, 2, 5)
    assert leader.partition().isr == (1, 3, 2) and zk.states[KEY].isr == [1, 3, 2]


def test_pending_reads_keep_a_follower_in_sync_when_enabled(nodes, zk, clock):
    leader = nodes(1, **{"follower.fetch.pending.reads.insync.enable": "true"})
    zk.seed(1, 0, (1, 2))
    control(leader, state(1, 0, (1, 2)))
    produce(leader, b"a")
    follower_fetch(leader, 2, 0)       # leader's end was 1 at this fetch
    produce(leader, b"b")
    slow = leader.manager.begin_follower_fetch(TOPIC, 0, 2, 1, 0, -1)   # reached it: pending
    clock.advance(LAG_MS + 5_000)      # the leader takes long to serve it
    shrink(leader)
    assert leader.partition().isr == (1, 2)
    leader.manager.end_follower_fetch(slow)
    clock.advance(LAG_MS)
    shrink(leader)
    assert leader.partition().isr == (1, 2)
    clock.advance(1)
    shrink(leader)
    assert leader.partition().isr == (1,)


def test_min_insync_replicas_before_and_after_append(nodes, zk, clock):
    leader = nodes(1, **{"min.insync.replicas": "2"})
    zk.seed(1, 0, (1, 2))
    control(leader, state(1, 0, (1, 2)))
    result = produce(leader, b"a", acks=-1)
    clock.advance(LAG_MS + 1)
    shrink(leader)   # the follower never came: ISR 1 < 2
    assert leader.manager.await_commit(TOPIC, 0, result.last_offset, time.monotonic() + 1,
                                       result.leader_epoch) == ErrorCode.not_enough_replicas_after_append
    refused = leader.manager.append(TOPIC, 0, batch(b"b"), -1)
    assert refused.error == ErrorCode.not_enough_replicas
    assert leader.partition().log.log_end_offset == 1


# --- the split-brain guard (seed 000, discussion 3) -----------------------------

def test_a_leader_whose_isr_write_meets_a_newer_epoch_stops_leading(nodes, zk, clock):
    old = nodes(1)
    zk.seed(1, 0, (1, 2))
    control(old, state(1, 0, (1, 2)))
    result = produce(old, b"m", acks=-1)
    # Paused past its session: the controller elected broker 2 at epoch 1.
    zk.seed(2, 1, (2,), zk_version=1)
    clock.advance(LAG_MS + 1)
    shrink(old)          # wants ISR [1]: the conditional write fails
    partition = old.partition()
    assert not partition.is_leader and partition.high_watermark == 0
    assert zk.states[KEY].leader == 2 and zk.states[KEY].isr == [2]
    assert old.manager.await_commit(TOPIC, 0, result.last_offset, time.monotonic() + 1,
                                    result.leader_epoch) == ErrorCode.not_leader_or_follower
    assert old.manager.append(TOPIC, 0, batch(b"n"), 1).error == ErrorCode.not_leader_or_follower
    assert old.manager.read(TOPIC, 0, 0, 1024, -1, True).error == ErrorCode.not_leader_or_follower
    # The controller's LeaderAndIsr for epoch 1 still applies.
    assert control(old, state(2, 1, (2,), zk_version=1)) == {KEY: ErrorCode.none}
    assert partition.leader_id == 2 and partition.leader_epoch == 1


def test_an_isr_write_with_unknown_outcome_keeps_the_maximal_isr_until_read_back(nodes, zk, clock):
    leader = nodes(1)
    zk.seed(1, 0, (1, 2, 3))
    control(leader, state(1, 0, (1, 2, 3), replicas=(1, 2, 3)))
    produce(leader, b"a", b"b")
    follower_fetch(leader, 2, 2)
    clock.advance(LAG_MS + 1)
    follower_fetch(leader, 2, 2)
    zk.write_error = TimeoutError("zookeeper did not answer")
    shrink(leader)       # drop 3: the write's fate is unknown
    # The HW is computed over the maximal ISR [1, 2, 3]: 3 never fetched.
    assert leader.partition().pending_isr is not None and leader.partition().high_watermark == 0
    follower_fetch(leader, 2, 2)
    assert leader.partition().high_watermark == 0
    zk.write_error = None
    zk.read_error = TimeoutError("still down")
    clock.advance(retry_backoff_ms(1))   # the writer reads the znode back after its backoff
    assert leader.manager.isr_writer.flush()
    assert leader.partition().pending_isr is not None and leader.partition().isr == (1, 2, 3)
    # It had landed: reading the znode back settles it.
    zk.read_error = None
    zk.seed(1, 0, (1, 2), zk_version=1)
    clock.advance(retry_backoff_ms(2))
    assert leader.manager.isr_writer.flush()
    assert leader.partition().isr == (1, 2) and leader.partition().zk_version == 1
    assert leader.partition().is_leader and leader.partition().high_watermark == 2
    assert leader.partition().pending_isr is None and zk.notifications == [KEY]


# --- off the request path (KIP-497's AlterPartitionManager, for ZooKeeper) --------

def test_a_follower_fetch_and_an_acks_all_answer_never_wait_for_a_blocked_isr_write(nodes, zk):
    leader, follower = nodes(1), nodes(2)
    zk.seed(1, 0, (1,))
    control(leader, state(1, 0, (1,)))
    control(follower, state(1, 0, (1,)))
    produce(leader, b"a", b"b")
    zk.gate = threading.Event()            # ZooKeeper stops answering writes
    fetcher = fetcher_for(follower, leader, epoch=0)
    started = time.monotonic()
    for _ in range(3):                     # truncation, the records, then a fetch at the end: joins
        fetcher.run_once()                 # real Fetch requests through the leader's handlers
    assert zk.writing.wait(5)              # the expansion's write is stuck in ZooKeeper ...
    assert time.monotonic() - started < 5  # ... and no fetch waited for it
    partition = leader.partition()
    assert partition.isr == (1,) and partition.pending_isr.isr == (1, 2)
    # The high watermark counts the joining follower (the maximal ISR), so an
    # acks=-1 produce completes once the follower has it, ZooKeeper or not.
    result = produce(leader, b"c", acks=-1)
    fetcher.run_once()
    fetcher.run_once()
    assert leader.manager.await_commit(TOPIC, 0, result.last_offset, time.monotonic() + 5,
                                       result.leader_epoch) == ErrorCode.none
    assert partition.high_watermark == 3 and partition.isr == (1,)
    zk.gate.set()
    assert leader.manager.isr_writer.flush()
    assert partition.isr == (1, 2) and partition.pending_isr is None
    assert zk.states[KEY].isr == [1, 2] and partition.zk_version == 1 and zk.notifications == [KEY]


def test_a_housekeeping_tick_never_waits_for_a_blocked_isr_write(nodes, zk, clock):
    leader = nodes(1)
    zk.seed(1, 0, (1, 2))
    control(leader, state(1, 0, (1, 2)))
    zk.gate = threading.Event()
    clock.advance(LAG_MS + 1)
    started = time.monotonic()
    leader.manager.maybe_shrink_isr()
    assert zk.writing.wait(5) and time.monotonic() - started < 5
    assert leader.partition().isr == (1, 2)        # only once the write went in
    zk.gate.set()
    assert leader.manager.isr_writer.flush() and leader.partition().isr == (1,)


def test_a_conflict_is_read_back_and_the_rules_applied_again_a_bounded_number_of_times(nodes, zk, clock):
    leader = nodes(1)
    zk.seed(1, 0, (1, 2))
    control(leader, state(1, 0, (1, 2)))
    zk.always_conflict = True              # another writer bumps the znode every time
    clock.advance(LAG_MS + 1)
    shrink(leader)
    for _ in range(2 * MAX_CONFLICT_RETRIES):
        clock.advance(RETRY_BACKOFF_MAX_MS)
        assert leader.manager.isr_writer.flush()
    assert zk.writes == 1 + MAX_CONFLICT_RETRIES
    partition = leader.partition()
    # Each read back kept the znode's ISR and version; the leader still leads.
    assert partition.pending_isr is None and partition.isr == (1, 2) and partition.is_leader
    assert partition.zk_version == zk.states[KEY].zk_version
    zk.always_conflict = False
    shrink(leader)                         # the next tick proposes again
    assert partition.isr == (1,) and zk.states[KEY].isr == [1]


class _Partition:
    """What the ISR writer needs of a partition."""

    def __init__(self, index: int) -> None:
        self.topic, self.index = TOPIC, index
        self.pending_isr = None
        self.completed: list[tuple[tuple[int, ...], int]] = []

    def propose(self, isr: tuple[int, ...]) -> IsrProposal:
        state = PartitionState(leader=1, leader_epoch=0, isr=list(isr), controller_epoch=1)
        self.pending_isr = IsrProposal(self, isr, 0, state, 0)
        return self.pending_isr

    def complete_isr_change(self, proposal: IsrProposal, version: int) -> bool:
        self.completed.append((proposal.isr, version))
        self.pending_isr = None
        return True


class _RecordingStore:
    def __init__(self) -> None:
        self.written: list[tuple[int, list[int]]] = []

    def write_many(self, writes):
        self.written += [(partition, state.isr) for _, partition, state, _ in writes]
        return [1] * len(writes)

    def notify_many(self, partitions) -> None:
        pass


def test_the_writer_replaces_a_waiting_proposal_and_bounds_what_waits(clock):
    writer = IsrWriter(None, clock, reapply=lambda partition, now_ms: None, on_changed=lambda _: None,
                       max_pending=1)
    writer.start()
    try:
        first, other = _Partition(0), _Partition(1)
        assert writer.submit(first.propose((1,)))
        assert writer.submit(first.propose((1, 2)))          # newer, same partition: replaces it
        assert not writer.submit(other.propose((1, 3)))      # the bound: refused, nothing queued
        assert writer.flush() and writer.pending_count() == 1   # no store yet: it waits
        writer.set_store(_RecordingStore())
        assert writer.flush()
        assert writer.store.written == [(0, [1, 2])] and first.completed == [((1, 2), 1)]
        assert writer.pending_count() == 0
    finally:
        writer.stop()


def test_retry_backoffs_double_up_to_a_bound():
    assert [retry_backoff_ms(n) for n in (1, 2, 3)] == [100, 200, 400]
    assert retry_backoff_ms(40) == RETRY_BACKOFF_MAX_MS
