"""Kafka's leader election strategies, as pure functions over broker ids.

Each takes the partition's assignment (in order: the first replica is the
preferred leader), its current ISR and which brokers count as live, and
returns `Elected` (the new leader and ISR) or `NotElected` (why not). Writing
the result, bumping the leader epoch and telling the brokers is the caller's
business (see changes.py).

"Live" for the offline, reassignment and preferred elections means the
partition's replica is online (ControllerContext.online_replicas): its
broker registered and not shutting down (a broker on its way out must not
be handed new leaderships), the replica not on a log dir its broker reported
offline. The controlled-shutdown election takes live and shutting-down
brokers apart.
"""

from __future__ import annotations

from typing import Collection, NamedTuple, Sequence

from kafkactl.cluster.controller.model import RECOVERED, RECOVERING


class Elected(NamedTuple):
    # A tuple: a failover elects 10,000s of leaders, and a tuple is built
    # faster than a frozen dataclass.
    leader: int
    isr: tuple[int, ...]
    leader_recovery_state: int = RECOVERED

    @property
    def unclean(self) -> bool:
        return self.leader_recovery_state == RECOVERING


class NotElected(NamedTuple):
    reason: str


ElectionResult = Elected | NotElected


def offline_election(assignment: Sequence[int], isr: Sequence[int], live: Collection[int],
                     unclean_allowed: bool) -> ElectionResult:
    """The first live assigned replica that is in the ISR; the new ISR is the
    live part of the old one. Failing that, and only if unclean election is
    allowed, the first live assigned replica alone, marked RECOVERING: it may
    lack committed records, and the ISR restarts from it."""
    live_replicas = [r for r in assignment if r in live]
    for replica in live_replicas:
        if replica in isr:
            return Elected(replica, tuple([r for r in isr if r in live_replicas]))
    if not live_replicas:
        return NotElected("no assigned replica is live")
    if not unclean_allowed:
        return NotElected("no live replica is in the ISR and unclean election is disabled")
    return Elected(live_replicas[0], (live_replicas[0],), RECOVERING)


def reassignment_election(target: Sequence[int], isr: Sequence[int],
                          live: Collection[int]) -> ElectionResult:
    """The first replica of the reassignment's target that is live and in the ISR."""
    for replica in target:
        if replica in live and replica in isr:
            return Elected(replica, tuple(isr))
    return NotElected("no replica of the target is live and in the ISR")


def preferred_election(assignment: Sequence[int], isr: Sequence[int],
                       live: Collection[int]) -> ElectionResult:
    """The first assigned replica, if it is live and in the ISR."""
    if not assignment:
        return NotElected("no replicas assigned")
    preferred = assignment[0]
    if preferred not in live:
        return NotElected(f"preferred replica {preferred} is not live")
    if preferred not in isr:
        return NotElected(f"preferred replica {preferred} is not in the ISR")
    return Elected(preferred, tuple(isr))


def controlled_shutdown_election(assignment: Sequence[int], isr: Sequence[int],
                                 live: Collection[int],
                                 shutting_down: Collection[int]) -> ElectionResult:
    """The first assigned replica that is live, in the ISR and not shutting
    down; the ISR loses every shutting-down broker. `live` includes brokers
    that are shutting down (they are still registered)."""
    new_isr = tuple(r for r in isr if r not in shutting_down)
    for replica in assignment:
        if replica in live and replica in new_isr:
            return Elected(replica, new_isr)
    return NotElected("no other live replica is in the ISR")
