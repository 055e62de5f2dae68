"""The rolling restart's decisions: who goes when, and when it may go on (pure).

A rolling restart restarts every service of the cluster, one at a time, so
that the cluster stays available and loses nothing:

1. It starts only on a healthy cluster: every ZooKeeper server answers and
   there is one leader; every broker of the inventory is registered; no
   partition is under-replicated or without a live leader. Restarting a
   broker while a partition already misses a replica could take that
   partition's last in-sync copy offline.
2. ZooKeeper first, followers before the leader (`zookeeper_order`): each
   follower rejoins the quorum under the same leader; the leader goes last,
   once, so the ensemble holds one election instead of one per server.
   After each server: it answers `srvr` as a follower or leader, and the
   ensemble has exactly one leader.
3. Then the brokers, the active controller last (`broker_order`): every
   other broker's restart moves the controller's work at most once, at the
   end. Each broker stops by controlled shutdown (SIGTERM: it hands its
   leaderships over first) and starts again; the roll goes on only when
   it is registered again and no partition is under-replicated or
   unavailable (`broker_health`) — so it is back in every ISR it belongs to.
4. Every wait is bounded. When a bound is hit, or a restart fails, the
   roll stops there: the hosts after it are left untouched, and the
   message names the host, what was waited for, and what was seen last.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from kafkactl.cluster.admin.topics import PartitionInfo

LEADER, FOLLOWER, STANDALONE = "leader", "follower", "standalone"
NO_LEADER = -1
EXAMPLES_SHOWN = 3


@dataclass(frozen=True, slots=True)
class Healthy:
    summary: str


@dataclass(frozen=True, slots=True)
class Unhealthy:
    reason: str


Health = Healthy | Unhealthy


def zookeeper_order(modes: Mapping[str, str | None]) -> list[str]:
    """Hosts by name in restart order: followers (in the given order), then the leader.

    `modes`: each server's `Mode:` from srvr (None when it did not answer);
    zookeeper_health must have passed, so there is exactly one leader."""
    followers = [name for name, mode in modes.items() if mode != LEADER]
    leaders = [name for name, mode in modes.items() if mode == LEADER]
    return followers + leaders


def zookeeper_health(modes: Mapping[str, str | None]) -> Health:
    silent = [name for name, mode in modes.items() if mode is None]
    if silent:
        return Unhealthy(f"ZooKeeper on {', '.join(silent)} does not answer srvr (down, or not in the quorum)")
    if len(modes) == 1:
        mode = next(iter(modes.values()))
        return Healthy("ZooKeeper is up") if mode == STANDALONE else \
            Unhealthy(f"the single ZooKeeper server is {mode}, not standalone")
    leaders = [name for name, mode in modes.items() if mode == LEADER]
    odd = [f"{name} is {mode}" for name, mode in modes.items() if mode not in (LEADER, FOLLOWER)]
    if odd:
        return Unhealthy("ZooKeeper " + ", ".join(odd))
    if len(leaders) != 1:
        return Unhealthy(f"ZooKeeper has {len(leaders)} leaders ({', '.join(leaders) or 'none'})")
    return Healthy(f"ZooKeeper: {leaders[0]} leads {len(modes) - 1} followers")


def broker_order(broker_ids: Sequence[int], controller_id: int | None) -> list[int]:
    """Broker ids in restart order: the inventory's order, the controller last."""
    return [b for b in broker_ids if b != controller_id] + [b for b in broker_ids if b == controller_id]


def broker_health(expected_ids: Iterable[int], live_ids: Iterable[int],
                  partitions: Sequence[PartitionInfo]) -> Health:
    live = set(live_ids)
    missing = sorted(set(expected_ids) - live)
    if missing:
        return Unhealthy(f"broker{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing))} "
                         "not registered in ZooKeeper")
    unavailable = [p for p in partitions if p.leader == NO_LEADER or p.leader not in live]
    if unavailable:
        return Unhealthy(f"{len(unavailable)} partition(s) without a live leader: {_examples(unavailable)}")
    under = [p for p in partitions if len(p.isr) < len(p.replicas)]
    if under:
        return Unhealthy(f"{len(under)} partition(s) under-replicated: {_examples(under)}")
    return Healthy(f"{len(live)} brokers, {len(partitions)} partitions fully in sync")


def _examples(partitions: Sequence[PartitionInfo]) -> str:
    shown = ", ".join(f"{p.topic}-{p.partition} (leader {p.leader}, ISR {p.isr} of {p.replicas})"
                      for p in partitions[:EXAMPLES_SHOWN])
    return shown + (", …" if len(partitions) > EXAMPLES_SHOWN else "")


def parse_srvr_mode(answer: str) -> str | None:
    """`Mode: follower` from a srvr answer; None when there is none (e.g.
    "This ZooKeeper instance is not currently serving requests")."""
    for line in answer.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "Mode":
            return value.strip() or None
    return None
