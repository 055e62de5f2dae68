"""Pure ISR rules (broker.isr): caught-up time, lag, pending reads, HW, joining."""

from kafkactl.cluster.broker import isr
from kafkactl.cluster.broker.isr import UNKNOWN_OFFSET, FollowerState

LAG_MS = 10_000
T0 = 1_000_000


def fetch(state, offset, leader_leo, at_ms, pending=False):
    return isr.record_fetch(state, offset, 0, leader_leo, at_ms, pending)


def test_fetch_at_the_leader_log_end_is_caught_up_at_fetch_time():
    state = fetch(FollowerState(2), 100, 100, T0).state
    assert state.log_end_offset == 100 and state.last_caught_up_time_ms == T0


def test_fetch_reaching_the_previous_fetch_leader_end_was_caught_up_at_the_previous_fetch():
    # t0: follower at 950, leader at 1002; t0+5s: follower at 1002, leader now at 1100
    first = fetch(FollowerState(2), 950, 1002, T0).state
    assert first.last_caught_up_time_ms == 0
    second = fetch(first, 1002, 1100, T0 + 5_000).state
    assert second.last_caught_up_time_ms == T0
    assert second.last_fetch_leader_log_end_offset == 1100


def test_a_follower_behind_for_longer_than_the_lag_is_out_of_sync():
    state = fetch(FollowerState(2), 100, 100, T0).state
    assert not isr.is_out_of_sync(state, 150, T0 + LAG_MS, LAG_MS, False)
    assert isr.is_out_of_sync(state, 150, T0 + LAG_MS + 1, LAG_MS, False)
    # with the leader's log end offset it stays in sync, however long it was silent
    assert not isr.is_out_of_sync(state, 100, T0 + 10 * LAG_MS, LAG_MS, False)


def test_a_follower_that_keeps_fetching_but_never_reaches_the_leader_drops_out():
    state = FollowerState(2, last_caught_up_time_ms=T0)
    leader_leo = 1000
    for step in range(1, 20):
        leader_leo += 100  # the leader grows faster than the follower catches up
        state = fetch(state, state.log_end_offset + 50 if state.log_end_offset > 0 else 900,
                      leader_leo, T0 + step * 1000).state
    assert isr.is_out_of_sync(state, leader_leo, T0 + 19_000, LAG_MS, False)


def test_pending_read_keeps_a_follower_in_sync_while_the_leader_is_slow_to_serve_it():
    # KIP example: fetch at t_y with offset 1002 = leader LEO of the previous fetch;
    # the leader takes 25 s to serve it.
    first = fetch(FollowerState(2, last_caught_up_time_ms=T0), 950, 1002, T0).state
    record = fetch(first, 1002, 1100, T0 + 1_000, pending=True)
    assert record.pending and record.state.pending_reads == 1
    during = T0 + 20_000
    assert isr.is_out_of_sync(record.state, 1100, during, LAG_MS, False)
    assert not isr.is_out_of_sync(record.state, 1100, during, LAG_MS, True)
    served = isr.complete_fetch(record.state, record, T0 + 26_000)
    assert served.pending_reads == 0 and served.last_caught_up_time_ms == T0 + 26_000
    assert not isr.is_out_of_sync(served, 1100, T0 + 30_000, LAG_MS, True)


def test_a_fetch_behind_the_previous_leader_end_is_not_pending():
    first = fetch(FollowerState(2), 900, 1002, T0).state
    record = fetch(first, 950, 1100, T0 + 1_000, pending=True)
    assert not record.pending and record.state.pending_reads == 0
    assert isr.complete_fetch(record.state, record, T0 + 2_000) == record.state


def test_new_leader_keeps_isr_followers_for_one_lag_period_and_not_others():
    in_isr = isr.reset_on_become_leader(2, True, T0)
    outside = isr.reset_on_become_leader(3, False, T0)
    assert in_isr.log_end_offset == UNKNOWN_OFFSET
    assert not isr.is_out_of_sync(in_isr, 10, T0 + LAG_MS, LAG_MS, False)
    assert isr.is_out_of_sync(in_isr, 10, T0 + LAG_MS + 1, LAG_MS, False)
    assert isr.is_out_of_sync(outside, 10, T0, LAG_MS, False)


def test_out_of_sync_replicas_never_names_the_leader():
    followers = {2: FollowerState(2, 10, last_caught_up_time_ms=T0), 3: FollowerState(3, 50, last_caught_up_time_ms=T0)}
    out = isr.out_of_sync_replicas(1, (1, 2, 3), followers, 50, T0 + LAG_MS + 1, LAG_MS, False)
    assert out == {2}


def test_high_watermark_is_the_smallest_log_end_offset_in_the_isr():
    followers = {2: FollowerState(2, 40), 3: FollowerState(3, 7)}
    assert isr.high_watermark_candidate(1, 50, (1, 2), followers) == 40
    assert isr.high_watermark_candidate(1, 50, (1, 2, 3), followers) == 7
    assert isr.high_watermark_candidate(1, 50, (1,), followers) == 50
    assert isr.high_watermark_candidate(1, 50, (1, 4), followers) == UNKNOWN_OFFSET
    assert isr.next_high_watermark(30, UNKNOWN_OFFSET) == 30
    assert isr.next_high_watermark(30, 7) == 30 and isr.next_high_watermark(30, 40) == 40


def test_joining_needs_the_high_watermark_and_the_leader_epoch_start():
    assert isr.can_join_isr(FollowerState(2, 20), high_watermark=20, leader_epoch_start_offset=15)
    assert not isr.can_join_isr(FollowerState(2, 19), high_watermark=20, leader_epoch_start_offset=15)
    # at the HW but not yet at the start of this leader's epoch: its tail may still diverge
    assert not isr.can_join_isr(FollowerState(2, 20), high_watermark=20, leader_epoch_start_offset=25)
    assert not isr.can_join_isr(FollowerState(2), high_watermark=0, leader_epoch_start_offset=0)
