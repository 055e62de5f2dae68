"""When the supervisor restarts a crashed service, and when it gives up (pure).

The host-side supervisor (supervisor.py) asks `decide` each time its child
exits without having been told to stop. The answer depends only on the
crashes so far and the time, which the caller passes in: no clock is read
here, so every rule is tested with literal numbers.

Rules, with the defaults of `RestartPolicy` (a service definition may
override each one under its "restart" key):

- Give up after `max_crashes` (5) crashes within the last `window_s` (300 s),
  the crash being handled included: a service that keeps failing needs an
  operator, and restarting it for ever only fills its log.
- Otherwise restart after a backoff of `initial_backoff_s` (1 s), doubled for
  each further crash in a row, up to `max_backoff_s` (30 s). Crashes "in a
  row" are the most recent runs that each lasted less than `reset_after_s`
  (60 s): a run that stayed up that long shows the service can work, so the
  backoff starts again from `initial_backoff_s` after it.

A crash is one run, `(started_at, exited_at)` in seconds of one monotonic
clock, oldest first. The supervisor keeps at most `HISTORY_LIMIT` of them:
`max_crashes` is bounded by it, and a longer streak of short runs could not
raise the backoff further (it is at `max_backoff_s` long before).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kafkactl.cluster.invariant import invariant

HISTORY_LIMIT = 64
MAX_DOUBLINGS = 62   # 2**62 times any allowed initial backoff is far past any allowed maximum


@dataclass(frozen=True, slots=True)
class RestartPolicy:
    initial_backoff_s: float = 1.0
    max_backoff_s: float = 30.0
    reset_after_s: float = 60.0
    max_crashes: int = 5
    window_s: float = 300.0

    def __post_init__(self) -> None:
        # The definition parser reports bad values to the operator; here they would be a bug.
        invariant(0 < self.initial_backoff_s <= self.max_backoff_s,
                  f"backoff bounds out of order: {self.initial_backoff_s} > {self.max_backoff_s}")
        invariant(self.reset_after_s > 0 and self.window_s > 0, "reset_after_s and window_s must be positive")
        invariant(1 <= self.max_crashes <= HISTORY_LIMIT, f"max_crashes {self.max_crashes} out of range")


@dataclass(frozen=True, slots=True)
class Restart:
    after_s: float


@dataclass(frozen=True, slots=True)
class GiveUp:
    reason: str


Run = tuple[float, float]   # (started_at, exited_at)


def decide(history: Sequence[Run], now: float, policy: RestartPolicy = RestartPolicy()) -> Restart | GiveUp:
    """What to do about the crash that ended `history[-1]`, at time `now`."""
    invariant(len(history) > 0, "decide() needs the crash it is asked about")
    invariant(all(started <= exited <= now for started, exited in history),
              f"a run ends before it starts or after now: {list(history)} now={now}")
    recent = sum(1 for _, exited in history if exited >= now - policy.window_s)
    if recent >= policy.max_crashes:
        return GiveUp(f"{recent} crashes within {policy.window_s:g} s (max_crashes {policy.max_crashes})")
    return Restart(backoff_s(short_streak(history, policy.reset_after_s), policy))


def short_streak(history: Sequence[Run], reset_after_s: float) -> int:
    """How many of the latest runs in a row lasted less than `reset_after_s`."""
    streak = 0
    for started, exited in reversed(history):
        if exited - started >= reset_after_s:
            break
        streak += 1
    return streak


def backoff_s(streak: int, policy: RestartPolicy) -> float:
    doublings = min(max(streak - 1, 0), MAX_DOUBLINGS)
    return min(policy.initial_backoff_s * 2 ** doublings, policy.max_backoff_s)
