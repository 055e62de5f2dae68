"""Even network in and out, as a share of each broker's capacity.

Inbound: every replica carries its partition's bytes in (the leader from
producers, followers from the leader). Outbound: only the leader serves
consumers. Targets: the cluster's total, shared in proportion to capacity.

Outbound is balanced first by choosing which replica leads (reordering a
partition's replicas moves no bytes); inbound by moving the replicas with
the most inbound per byte stored (cheapest to move for what they relieve)
to brokers under their target, within the disk goal's band. Where the band
holds a replica back (its dir would fall below the band), it trades places
with a cold replica (least inbound per byte) of about its size on a broker
under its target: disk stays as it was, inbound moves (a swap; the cold
replicas are collected as a pool by one more Spark job, run only in a round
that needs a partner).

Whole partitions can keep a broker from its target (a few large leaders; a
small rack): a broker over target x (1 + tolerance/2) may still take load
that leaves it under what the source carried (relative to their targets),
as the pair then narrows. The guard for lower goals is the same with the
full tolerance: within it, or no more than the source carried; the most
loaded broker never gets more. The guard holds the figure measure() reports
as well (each broker's inbound over capacity against the eligible brokers'
mean, within the full tolerance or no more than the source's): with racks
pinned the targets are per rack, and a broker of a smaller rack could stay
within its rack's target and still pass the reported limit (seen at 1,000,000
replicas: counts and topic_spread took network from met to 1.119).
"""

from __future__ import annotations

import bisect
import heapq
from typing import Callable

from kafkactl.planner.goals.base import (NETWORK_TOLERANCE, NO_LIMIT, Broker, Cluster, Goal, Replica, Selection,
                                          least_follower, queues_by_media, ratio)
from kafkactl.planner.goals.status import Figure

SWAP_BROKERS = 3        # brokers under target tried per candidate, least loaded first
SWAP_PARTNERS = 4       # pool replicas tried per broker, nearest in size on each side


def in_target(cluster: Cluster, b: Broker) -> float:
    """A share of the inbound in proportion to capacity; within the rack when
    racks are pinned (each rack then carries every partition's inbound once)."""
    if not b.eligible:
        return 0.0
    peers = [x for x in cluster.brokers.values()
             if not cluster.racks_pinned or x.rack == b.rack]
    capacity = sum(x.in_capacity for x in peers if x.eligible)
    return sum(x.bytes_in for x in peers) * b.in_capacity / capacity if capacity else 0.0


def out_target(cluster: Cluster, b: Broker) -> float:
    total = sum(x.bytes_out for x in cluster.brokers.values())
    return cluster.share_target(total, lambda x: x.out_capacity, b)


def excess(loads: dict[int, int], targets: dict[int, float], tolerance: float) -> dict[int, int]:
    """Per broker, the load above target x (1 + tolerance)."""
    return {b: int(load - targets[b] * (1 + tolerance)) for b, load in loads.items()
            if load > targets[b] * (1 + tolerance) + 1}


def max_over_mean(loads: list[tuple[int, int]]) -> float | None:
    """Of (load, capacity) pairs: the largest load over capacity over the
    whole's (None without load)."""
    capacity = sum(c for _, c in loads)
    mean = sum(x for x, _ in loads) / capacity if capacity else 0.0
    return max(x / c for x, c in loads) / mean if mean > 0 else None


class Network(Goal):
    name = "network"

    def measure(self, cluster: Cluster) -> list[Figure]:
        brokers = cluster.eligible_brokers()
        found = {"in": max_over_mean([(b.bytes_in, b.in_capacity) for b in brokers]),
                 "out": max_over_mean([(b.bytes_out, b.out_capacity) for b in brokers])}
        return [Figure(f"network {way} utilization max/mean", v, 1 + NETWORK_TOLERANCE, f"network_{way}_utilization")
                for way, v in found.items() if v is not None]

    def prepare(self, cluster: Cluster) -> None:
        # moves and leader changes keep the totals, so the targets hold throughout
        self.in_targets = {b: in_target(cluster, x) for b, x in cluster.brokers.items()}
        self.out_targets = {b: out_target(cluster, x) for b, x in cluster.brokers.items()}
        eligible = cluster.eligible_brokers()
        capacity = sum(b.in_capacity for b in eligible)
        # the mean inbound utilization measure() divides by (soft goals keep the eligible total)
        self.in_mean = sum(b.bytes_in for b in eligible) / capacity if capacity else 0.0
        self.loose = False

    def stuck(self, cluster: Cluster) -> bool:
        """Nothing placed: once, candidates larger than their source's excess
        too (whole partitions larger than what is left to even; a move still
        only narrows a pair)."""
        if self.loose:
            return False
        self.loose = True
        return True

    def selections(self, cluster: Cluster) -> list[Selection]:
        half = NETWORK_TOLERANCE / 2
        brokers = cluster.eligible_brokers()
        out = excess({b.broker_id: b.bytes_out for b in brokers}, self.out_targets, half)
        inbound = excess({b.broker_id: b.bytes_in for b in brokers}, self.in_targets, half)
        selections = []
        if out:
            selections.append(Selection("network:leaders", "broker_id", out, "bytes_out",
                                        ("bytes_out DESC",), where="replica_index = 0",
                                        leaders_only=True, fit=not self.loose,
                                        largest=self._narrowing(brokers, "bytes_out", self.out_targets, out)))
        if inbound:
            under = {b.broker_id: NO_LIMIT for b in brokers
                     if b.bytes_in < self.in_targets[b.broker_id]}
            if under:
                selections.append(Selection("network:cold", "broker_id", under, "one",
                                            ("bytes_in / greatest(size_bytes, 1) ASC",),
                                            fit=False, pool=True))
            selections.append(Selection("network:in", "broker_id", inbound, "bytes_in",
                                        ("bytes_in / greatest(size_bytes, 1) DESC",), fit=not self.loose,
                                        largest=self._narrowing(brokers, "bytes_in", self.in_targets, inbound)))
        return selections

    def _narrowing(self, brokers, load: str, targets: dict, sources: dict) -> dict[int, int] | None:
        """When loose: per source, the most a move can carry and still narrow
        (down to the least loaded broker, relative to targets)."""
        if not self.loose:
            return None
        least = min(ratio(getattr(b, load), targets[b.broker_id]) for b in brokers)
        by_id = {b.broker_id: b for b in brokers}
        return {s: max(e, int(getattr(by_id[s], load) - least * targets[s])) for s, e in sources.items()}

    def start_round(self, cluster: Cluster) -> None:
        self.offered, self.pool = None, None
        self._queues(cluster)

    def offer(self, cluster: Cluster, candidates) -> None:
        self.offered = candidates

    def choose_swap(self, cluster, rep, selection, accept):
        if selection.name != "network:in" or self.offered is None:
            return None
        if self.pool is None:
            self.pool = SwapPool(cluster, self.offered())
        limit = 1 + NETWORK_TOLERANCE / 2

        def gains(partner: Replica) -> bool:
            return swap_gains(cluster, rep, partner, self.in_targets, self.out_targets, limit)

        return self.pool.take(cluster, rep, lambda p: gains(p) and accept(p),
                              lambda b: ratio(cluster.brokers[b].bytes_in, self.in_targets[b]))

    def _queues(self, cluster: Cluster) -> None:
        def key(d):
            b = cluster.brokers[d.broker_id]
            return (ratio(b.bytes_in, self.in_targets[b.broker_id]), cluster.utilization(d), d.dir_id)
        self.queues = queues_by_media(cluster, key)

    def choose(self, cluster, rep, selection, accept):
        media = cluster.dirs[rep.dir_id].media
        limit = 1 + NETWORK_TOLERANCE / 2
        source = cluster.brokers[rep.broker_id]

        def room(to_dir):
            b = cluster.brokers[cluster.dirs[to_dir].broker_id]
            if b.broker_id == rep.broker_id:
                return False                  # inbound is per broker: leave it
            if not self._fits(b.bytes_in + rep.bytes_in, b, source.bytes_in, source, self.in_targets, limit,
                              strict=True):
                return False
            if rep.leader and not self._fits(b.bytes_out + rep.bytes_out, b, source.bytes_out, source,
                                             self.out_targets, limit, strict=True):
                return False
            return accept(to_dir)

        return self.queues[media].pick(room)

    def choose_leader(self, cluster, rep, selection, accept):
        limit = 1 + NETWORK_TOLERANCE / 2
        leader = cluster.brokers[rep.brokers[0]]

        def rank(b):
            after = b.bytes_out + rep.bytes_out
            if not b.eligible or not self._fits(after, b, leader.bytes_out, leader, self.out_targets, limit,
                                                strict=True):
                return None
            return (ratio(after, self.out_targets[b.broker_id]), b.broker_id)
        return least_follower(cluster, rep, accept, rank)

    @staticmethod
    def _fits(after: float, b: Broker, source_load: float, source: Broker, targets: dict, limit: float,
              strict: bool = False) -> bool:
        """A broker may take load up to its target x limit, or, beyond it,
        while it stays under what the source carried (relative to their
        targets): the pair narrows, the most loaded never gets more (whole
        partitions can keep every broker from its target; strict: under,
        not level with, so that a goal's own moves always progress)."""
        if after <= targets[b.broker_id] * limit:
            return True
        mine, theirs = ratio(after, targets[b.broker_id]), ratio(source_load, targets[source.broker_id])
        return mine < theirs if strict else mine <= theirs

    def guard(self, cluster: Cluster, rep: Replica, to_dir: int) -> bool:
        """Within target x (1 + tolerance), or no more than the source
        carried: a lower goal's move never makes the most loaded broker worse."""
        b = cluster.brokers[cluster.dirs[to_dir].broker_id]
        source = cluster.brokers[rep.broker_id]
        if b.broker_id == rep.broker_id:
            return True
        limit = 1 + NETWORK_TOLERANCE
        after = b.bytes_in + rep.bytes_in
        if not (self._fits(after, b, source.bytes_in, source, self.in_targets, limit)
                and self._within_figure(after, b, source, limit)):
            return False
        return not (rep.leader and not self._fits(b.bytes_out + rep.bytes_out, b, source.bytes_out, source,
                                                  self.out_targets, limit))

    def _within_figure(self, after: int, b: Broker, source: Broker, limit: float) -> bool:
        """The reported figure (module doc): the broker's inbound over capacity
        within limit x the mean, or no more than the source's."""
        utilization = ratio(after, b.in_capacity)
        return utilization <= limit * self.in_mean or utilization <= ratio(source.bytes_in, source.in_capacity)

    def guard_leader(self, cluster: Cluster, rep: Replica, new_index: int) -> bool:
        b, leader = cluster.brokers[rep.brokers[new_index]], cluster.brokers[rep.brokers[0]]
        return self._fits(b.bytes_out + rep.bytes_out, b, leader.bytes_out, leader, self.out_targets,
                          1 + NETWORK_TOLERANCE)


def swap_gains(cluster: Cluster, hot: Replica, cold: Replica, in_targets: dict[int, float],
               out_targets: dict[int, float], limit: float) -> bool:
    """Trading hot (on a broker over its inbound target) for cold relieves
    hot's broker by at least half of hot's inbound, leaves cold's broker
    within target x limit, and takes neither broker's outbound over target x
    limit unless it was already there (a leader moves its outbound)."""
    here, there = cluster.brokers[hot.broker_id], cluster.brokers[cold.broker_id]
    if 2 * cold.bytes_in > hot.bytes_in:
        return False
    if there.bytes_in - cold.bytes_in + hot.bytes_in > in_targets[there.broker_id] * limit:
        return False
    out_here = here.bytes_out - hot.bytes_out * hot.leader + cold.bytes_out * cold.leader
    out_there = there.bytes_out - cold.bytes_out * cold.leader + hot.bytes_out * hot.leader
    return (out_here <= max(out_targets[here.broker_id] * limit, here.bytes_out)
            and out_there <= max(out_targets[there.broker_id] * limit, there.bytes_out))


class SwapPool:
    """Cold replicas offered for swaps, per (broker, media) sorted by size;
    each is taken at most once per round."""

    def __init__(self, cluster: Cluster, candidates: list[Replica]):
        self.by_place: dict[tuple[int, str], list[tuple[int, tuple, Replica]]] = {}
        for rep in candidates:
            media = cluster.dirs[rep.dir_id].media
            key = (rep.size_bytes, (rep.topic, rep.partition, rep.replica_index))
            self.by_place.setdefault((rep.broker_id, media), []).append((*key, rep))
        for entries in self.by_place.values():
            entries.sort(key=lambda e: (e[0], e[1]))
        self.sizes = {place: [e[0] for e in entries] for place, entries in self.by_place.items()}
        self.brokers = sorted({b for b, _ in self.by_place})
        self.taken: set[tuple] = set()

    def take(self, cluster: Cluster, rep: Replica, accept: Callable[[Replica], bool],
             load: Callable[[int], float]) -> Replica | None:
        """The first acceptable partner for rep: on the SWAP_BROKERS least
        loaded brokers that may take rep (not one of its partition's, racks
        kept), the SWAP_PARTNERS replicas nearest rep's size on either side."""
        media = cluster.dirs[rep.dir_id].media
        brokers = [b for b in self.brokers if (b, media) in self.by_place and b not in rep.brokers
                   and cluster.rack_ok(rep, b)]
        for b in heapq.nsmallest(SWAP_BROKERS, brokers, key=lambda b: (load(b), b)):
            entries, sizes = self.by_place[(b, media)], self.sizes[(b, media)]
            at = bisect.bisect_left(sizes, rep.size_bytes)
            nearest = sorted(range(max(0, at - SWAP_PARTNERS), min(len(entries), at + SWAP_PARTNERS)),
                             key=lambda i: (abs(sizes[i] - rep.size_bytes), i))
            for i in nearest:
                partner = entries[i][2]
                if entries[i][1] in self.taken:
                    continue
                if accept(partner):
                    self.taken.add(entries[i][1])
                    return partner
        return None
