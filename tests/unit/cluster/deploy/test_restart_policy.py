import pytest

from kafkactl.cluster.deploy.restart_policy import GiveUp, Restart, RestartPolicy, backoff_s, decide, short_streak
from kafkactl.cluster.invariant import InvariantViolation

DEFAULT = RestartPolicy()


def test_the_first_crash_waits_the_initial_backoff():
    assert decide([(100.0, 110.0)], now=110.0) == Restart(1.0)


def test_each_further_short_run_in_a_row_doubles_the_backoff_up_to_the_maximum():
    # Runs of 5 s, 400 s apart: never 5 crashes in the window, and no run stayed up 60 s.
    history = [(number * 400.0, number * 400.0 + 5.0) for number in range(8)]
    waits = [decide(history[:n], now=history[n - 1][1]).after_s for n in range(1, 9)]
    assert waits == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0]


def test_the_backoff_stops_at_max_backoff_s():
    policy = RestartPolicy(max_crashes=64, window_s=1.0)
    history = [(float(10 * n), float(10 * n + 1)) for n in range(10)]
    assert decide(history, now=91.0, policy=policy) == Restart(30.0)


def test_a_run_that_stayed_up_reset_after_s_resets_the_backoff():
    policy = RestartPolicy(max_crashes=64)
    history = [(0.0, 1.0), (2.0, 3.0), (5.0, 6.0), (10.0, 70.0), (71.0, 72.0)]
    assert decide(history[:3], now=6.0, policy=policy) == Restart(4.0)
    assert decide(history[:4], now=70.0, policy=policy) == Restart(1.0)    # up exactly 60 s: reset
    assert decide(history, now=72.0, policy=policy) == Restart(1.0)        # a new streak of one


def test_gives_up_at_max_crashes_within_the_window():
    history = [(0.0, 10.0), (20.0, 30.0), (40.0, 50.0), (60.0, 70.0)]
    assert isinstance(decide(history, now=70.0), Restart)
    verdict = decide([*history, (80.0, 90.0)], now=90.0)
    assert verdict == GiveUp("5 crashes within 300 s (max_crashes 5)")


def test_crashes_older_than_the_window_do_not_count():
    history = [(0.0, 10.0), (20.0, 30.0), (40.0, 50.0), (60.0, 70.0), (400.0, 401.0)]
    assert decide(history, now=401.0) == Restart(16.0)   # not given up; still the 5th short run in a row
    # The window's edge counts as within: 10 s ago, window 10 s.
    assert decide([(0.0, 1.0), (5.0, 11.0)], now=11.0, policy=RestartPolicy(window_s=10.0, max_crashes=2)) \
        == GiveUp("2 crashes within 10 s (max_crashes 2)")


def test_overridden_numbers_are_used():
    policy = RestartPolicy(initial_backoff_s=0.1, max_backoff_s=0.2, max_crashes=3, window_s=60.0)
    history = [(0.0, 1.0), (1.1, 2.0), (2.2, 3.0)]
    assert [decide(history[:n], now=history[n - 1][1], policy=policy) for n in (1, 2, 3)] == [
        Restart(0.1), Restart(0.2), GiveUp("3 crashes within 60 s (max_crashes 3)")]


def test_short_streak_counts_from_the_latest_run_back():
    assert short_streak([(0.0, 100.0), (100.0, 101.0), (102.0, 103.0)], reset_after_s=60.0) == 2
    assert short_streak([(0.0, 1.0), (1.0, 100.0)], reset_after_s=60.0) == 0


def test_a_huge_streak_does_not_overflow():
    assert backoff_s(10_000, DEFAULT) == 30.0
    assert backoff_s(0, DEFAULT) == 1.0


@pytest.mark.parametrize("history, now", [([], 0.0), ([(5.0, 4.0)], 5.0), ([(0.0, 9.0)], 8.0)])
def test_an_impossible_history_is_a_bug(history, now):
    with pytest.raises(InvariantViolation):
        decide(history, now)


def test_a_policy_with_bounds_out_of_order_is_a_bug():
    with pytest.raises(InvariantViolation):
        RestartPolicy(initial_backoff_s=5.0, max_backoff_s=1.0)
