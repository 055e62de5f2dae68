"""The driver's view of the cluster while the optimizer works, and what every
goal shares.

The driver holds aggregates only: one `Dir` per log dir and one `Broker` per
broker (sizes and rates as exact integers, so that the same input always sums
to the same totals), plus the small batch of candidate replicas of the current
round. Every accepted move updates these aggregates at once, so later
decisions in the same round see it.

A goal is three things (see the goal modules):
- which replicas should leave where (a `Selection`, run as a Spark job);
- where a candidate should go (a destination chosen on the aggregates);
- a guard: whether a move wanted by a lower-priority goal keeps this goal
  within its tolerance. A lower-priority goal never undoes a higher one.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Callable, Iterable, Mapping

from kafkactl.planner.goals.status import Figure

# Soft tolerances where PlannerOptions has none (Cruise Control keeps its
# network and count goals within about 10 % of the average as well).
NETWORK_TOLERANCE = 0.10
COUNT_TOLERANCE = 0.10
# The hot set: the hottest partitions whose replicas fill at most this share
# of the bytes the SSD dirs may hold; the rest of the SSD room is balanced
# like any other space (a policy: the hottest quarter is what pays for SSD).
HOT_BUDGET_SHARE = 0.25
NO_LIMIT = 1 << 60          # an excess with no limit (doubled in Spark: no overflow)
SAME_DIR = "same dir"       # Cluster.hard_reason: the replica is there already (not a refusal)


@dataclass
class Dir:
    dir_id: int
    broker_id: int
    path: str
    media: str
    capacity_bytes: int
    size_bytes: int = 0        # sum of the sizes of the replicas it holds
    hot_bytes: int = 0         # ... of the replicas of hot partitions
    replicas: int = 0


@dataclass
class Broker:
    broker_id: int
    rack: str | None
    in_capacity: int           # bytes per second
    out_capacity: int
    eligible: bool             # False: excluded, to be emptied
    dir_ids: list[int] = field(default_factory=list)
    bytes_in: int = 0          # every replica carries its partition's inbound
    bytes_out: int = 0         # only leaders serve outbound
    potential_out: int = 0     # the outbound if every replica here led
    replicas: int = 0
    leaders: int = 0


@dataclass(frozen=True)
class Replica:
    """A candidate replica, with what the checks need of its partition."""
    topic: str
    partition: int
    replica_index: int
    size_bytes: int
    bytes_in: int
    bytes_out: int
    hot: bool
    brokers: tuple[int, ...]
    dirs: tuple[int, ...]
    full_brokers: tuple[int, ...] = ()   # topic spread: brokers holding their share of the topic

    @property
    def key(self) -> tuple[str, int]:
        return (self.topic, self.partition)

    @property
    def broker_id(self) -> int:
        return self.brokers[self.replica_index]

    @property
    def dir_id(self) -> int:
        return self.dirs[self.replica_index]

    @property
    def leader(self) -> bool:
        return self.replica_index == 0

    def weight(self, unit: str) -> int:
        return 1 if unit == "one" else getattr(self, unit)


@dataclass(frozen=True)
class Move:
    topic: str
    partition: int
    replica_index: int
    to_broker: int
    to_dir: int
    size_bytes: int


@dataclass(frozen=True)
class LeaderChange:
    topic: str
    partition: int
    new_index: int             # the replica that becomes first (preferred leader)


@dataclass(frozen=True)
class Selection:
    """Which replicas a goal wants to leave, as a Spark job computes them.

    key: "dir_id" or "broker_id", the source whose excess is reduced;
    excess: per source, in `weight` units ("size_bytes", "bytes_in",
    "bytes_out" or "one"); where / order: SQL over the replica view (see
    optimizer.py); fit: only replicas no bigger than their source's excess
    (moving more than the excess would overshoot and waste bytes).
    """
    name: str
    key: str
    excess: dict[int, int]
    weight: str
    order: tuple[str, ...]
    where: str = "true"
    fit: bool = True
    leaders_only: bool = False
    pool: bool = False               # not moved: offered to the goal as swap partners
    enrich: Callable | None = None   # SQL of the replica view -> SQL adding the columns `where` needs
    largest: dict[int, int] | None = None   # per source, the largest weight any destination takes


class Cluster:
    """Aggregates, targets and the hard constraints, for one optimization."""

    def __init__(self, dirs: Iterable[Dir], brokers: Iterable[Broker], options):
        self.dirs = {d.dir_id: d for d in sorted(dirs, key=lambda d: d.dir_id)}
        self.brokers = {b.broker_id: b for b in sorted(brokers, key=lambda b: b.broker_id)}
        for d in self.dirs.values():
            self.brokers[d.broker_id].dir_ids.append(d.dir_id)
        self.options = options
        self.moves = 0
        self.bytes_moved = 0
        self.leader_changes = 0
        self.rack_violations = 0       # replicas sharing a rack they could avoid (counted once, kept by apply_move)
        self.topic_surplus = 0         # topic_spread's movable surplus replicas (counted when it is measured)
        eligible = [b for b in self.brokers.values() if b.eligible]
        racks = {b.rack for b in eligible}
        # rack rule only when every broker that can hold replicas has a rack
        self.rack_count = len(racks) if eligible and None not in racks else 0
        # When RF >= racks for every partition, each rack holds one replica of
        # every partition: a rack's bytes are fixed and targets are per rack.
        self.racks_pinned = False
        self.util_target = self._media_targets()

    # ---- targets ---------------------------------------------------------

    def pin_racks(self, min_rf: int) -> None:
        self.racks_pinned = bool(self.rack_count) and min_rf >= self.rack_count
        self.util_target = self._media_targets()

    def group(self, d: Dir) -> tuple[str | None, str]:
        """Dirs balanced together: a media class, within a rack when pinned."""
        return (self.brokers[d.broker_id].rack if self.racks_pinned else None, d.media)

    def _media_targets(self) -> dict[tuple[str | None, str], float]:
        """Per group: its bytes over its eligible capacity (the bytes of an
        excluded broker count in its rack: they stay in it)."""
        size, capacity = {}, {}
        for d in self.dirs.values():
            g = self.group(d)
            size[g] = size.get(g, 0) + d.size_bytes
            if self.brokers[d.broker_id].eligible:
                capacity[g] = capacity.get(g, 0) + d.capacity_bytes
        return {g: size.get(g, 0) / capacity[g] if capacity.get(g) else 0.0 for g in size}

    def media_capacity(self, media: str) -> int:
        return sum(d.capacity_bytes for d in self.eligible_dirs() if d.media == media)

    def media_size(self, media: str) -> int:
        return sum(d.size_bytes for d in self.dirs.values() if d.media == media)

    def eligible_dirs(self) -> list[Dir]:
        return [d for d in self.dirs.values() if self.brokers[d.broker_id].eligible]

    def eligible_brokers(self) -> list[Broker]:
        return [b for b in self.brokers.values() if b.eligible]

    def dir_target(self, d: Dir) -> float:
        if not self.brokers[d.broker_id].eligible:
            return 0.0
        return self.util_target.get(self.group(d), 0.0) * d.capacity_bytes

    def utilization(self, d: Dir, extra: int = 0) -> float:
        return (d.size_bytes + extra) / d.capacity_bytes if d.capacity_bytes else math.inf

    def share_target(self, total: int, capacity_of: Callable[[Broker], int], b: Broker) -> float:
        """A broker's share of `total`, proportional to its capacity."""
        if not b.eligible:
            return 0.0
        capacity = sum(capacity_of(x) for x in self.eligible_brokers())
        return total * capacity_of(b) / capacity if capacity else 0.0

    # ---- hard constraints --------------------------------------------------

    def racks_with(self, rep: Replica, broker_id: int) -> int:
        """Distinct racks of the partition with this replica on `broker_id`."""
        racks = {self.brokers[b].rack for i, b in enumerate(rep.brokers) if i != rep.replica_index}
        return len(racks | {self.brokers[broker_id].rack})

    def racks_wanted(self, rep: Replica) -> int:
        return min(len(rep.brokers), self.rack_count)

    def rack_ok(self, rep: Replica, to_broker: int) -> bool:
        """Keep as many racks as possible: never fewer distinct racks than
        min(RF, racks), nor fewer than the partition has now."""
        if not self.rack_count or to_broker == rep.broker_id:
            return True
        before = self.racks_with(rep, rep.broker_id)
        return self.racks_with(rep, to_broker) >= min(self.racks_wanted(rep), before)

    def partition_rack_violations(self, brokers: Iterable[int]) -> int:
        """Replicas of a partition on `brokers` that share a rack with an
        earlier one while the partition spans fewer racks than it could (the
        replica view's rack_violation flags, counted; optimizer.py). The
        count is the replicas with a rack less the distinct racks among
        them, whatever their order, so a leader change leaves it as it is."""
        if not self.rack_count:
            return 0
        racks = [self.brokers[b].rack if b in self.brokers else None for b in brokers]
        if len(set(racks)) >= min(len(racks), self.rack_count):
            return 0
        known = [r for r in racks if r is not None]
        return len(known) - len(set(known))

    def hard_ok(self, rep: Replica, to_dir: int) -> bool:
        return self.hard_reason(rep, to_dir) is None

    def hard_reason(self, rep: Replica, to_dir: int) -> str | None:
        """The hard constraint a move of `rep` to `to_dir` breaks (None: none;
        SAME_DIR: not a move), for the goal reports."""
        d = self.dirs[to_dir]
        to = self.brokers[d.broker_id]
        opts = self.options
        if to_dir == rep.dir_id:
            return SAME_DIR
        if not to.eligible:
            return "excluded broker"
        if d.size_bytes + rep.size_bytes > opts.capacity_threshold * d.capacity_bytes:
            return "capacity threshold"
        if to.broker_id == rep.broker_id:
            return None                       # a move between dirs of one broker
        if to.broker_id in rep.brokers:
            return "distinct brokers"
        if not self.rack_ok(rep, to.broker_id):
            return "rack spread"
        if to.bytes_in + rep.bytes_in > opts.network_in_threshold * to.in_capacity:
            return "network in threshold"
        if rep.leader and to.bytes_out + rep.bytes_out > opts.network_out_threshold * to.out_capacity:
            return "network out threshold"
        return None

    def leader_ok(self, rep: Replica, new_index: int) -> bool:
        return self.leader_reason(rep, new_index) is None

    def leader_reason(self, rep: Replica, new_index: int) -> str | None:
        to = self.brokers[rep.brokers[new_index]]
        if not to.eligible:
            return "excluded broker"
        if to.bytes_out + rep.bytes_out > self.options.network_out_threshold * to.out_capacity:
            return "network out threshold"
        return None

    def within_budget(self, rep: Replica, moves: int = 1, extra_bytes: int = 0) -> bool:
        opts = self.options
        if opts.max_moves is not None and self.moves + moves > opts.max_moves:
            return False
        return (opts.max_bytes_moved is None
                or self.bytes_moved + rep.size_bytes + extra_bytes <= opts.max_bytes_moved)

    def swap_ok(self, a: Replica, b: Replica, guard: Callable[[Replica, int], bool]) -> bool:
        """a to b's dir and b to a's, on two brokers: every hard constraint
        and `guard` hold once both are done. Each move is checked with the
        other one applied, so that a check of a move's destination and
        source sees both dirs and brokers as the swap leaves them."""
        if a.broker_id == b.broker_id or a.key == b.key:
            return False
        for first, second in ((b, a), (a, b)):
            self._transfer(first, first.dir_id, second.dir_id)
            try:
                if not (self.hard_ok(second, first.dir_id) and guard(second, first.dir_id)):
                    return False
            finally:
                self._transfer(first, second.dir_id, first.dir_id)
        return True

    # ---- applying ----------------------------------------------------------

    def apply_move(self, rep: Replica, to_dir: int) -> Move:
        dst = self.dirs[to_dir]
        if dst.broker_id != rep.broker_id:
            after = list(rep.brokers)
            after[rep.replica_index] = dst.broker_id
            self.rack_violations += (self.partition_rack_violations(after)
                                     - self.partition_rack_violations(rep.brokers))
        self._transfer(rep, rep.dir_id, to_dir)
        self.moves += 1
        self.bytes_moved += rep.size_bytes
        return Move(rep.topic, rep.partition, rep.replica_index, dst.broker_id, to_dir,
                    rep.size_bytes)

    def _transfer(self, rep: Replica, from_dir: int, to_dir: int) -> None:
        """The loads of `rep` leave from_dir and its broker for to_dir's."""
        src, dst = self.dirs[from_dir], self.dirs[to_dir]
        for d, sign in ((src, -1), (dst, 1)):
            d.size_bytes += sign * rep.size_bytes
            d.hot_bytes += sign * rep.size_bytes * rep.hot
            d.replicas += sign
        if src.broker_id != dst.broker_id:
            for b, sign in ((self.brokers[src.broker_id], -1), (self.brokers[dst.broker_id], 1)):
                b.bytes_in += sign * rep.bytes_in
                b.potential_out += sign * rep.bytes_out
                b.replicas += sign
                if rep.leader:
                    b.bytes_out += sign * rep.bytes_out
                    b.leaders += sign

    def apply_leader(self, rep: Replica, new_index: int) -> LeaderChange:
        old, new = self.brokers[rep.brokers[0]], self.brokers[rep.brokers[new_index]]
        old.bytes_out -= rep.bytes_out
        old.leaders -= 1
        new.bytes_out += rep.bytes_out
        new.leaders += 1
        self.leader_changes += 1
        return LeaderChange(rep.topic, rep.partition, new_index)


class DestinationQueue:
    """Dirs ordered by a goal's preference (lowest key first), kept fresh as
    moves land: the best destination is found in a few heap pops instead of
    a scan of every dir per candidate."""

    def __init__(self, cluster: Cluster, dir_ids: Iterable[int], key: Callable[[Dir], float]):
        self.cluster = cluster
        self.key = key
        self.members = set(dir_ids)
        self.heap = [(key(cluster.dirs[i]), i) for i in sorted(self.members)]
        heapq.heapify(self.heap)

    def pick(self, accept: Callable[[int], bool]) -> int | None:
        rejected, chosen = [], None
        while self.heap:
            entry = heapq.heappop(self.heap)
            stored, dir_id = entry
            if stored != self.key(self.cluster.dirs[dir_id]):
                continue                      # stale: a fresher entry was pushed
            if accept(dir_id):
                chosen = dir_id
                rejected.append(entry)
                break
            rejected.append(entry)
        for entry in rejected:
            heapq.heappush(self.heap, entry)
        return chosen

    def touch(self, broker_ids: Iterable[int]) -> None:
        """Loads of these brokers changed: push their dirs with fresh keys."""
        for b in broker_ids:
            for i in self.cluster.brokers[b].dir_ids:
                if i in self.members:
                    heapq.heappush(self.heap, (self.key(self.cluster.dirs[i]), i))


def ratio(load: float, target: float) -> float:
    """Load over target; an empty target is full as soon as it holds anything."""
    if target > 0:
        return load / target
    return 0.0 if load <= 0 else math.inf


def same_broker_first(cluster: Cluster, rep: Replica, media: str,
                      accept: Callable[[int], bool]) -> int | None:
    """The least utilized dir of `media` on the replica's own broker that
    `accept`s it: a move between dirs of one broker crosses no network and
    changes nothing at the broker level."""
    local = [cluster.dirs[i] for i in cluster.brokers[rep.broker_id].dir_ids
             if cluster.dirs[i].media == media and i != rep.dir_id]
    for d in sorted(local, key=lambda d: (cluster.utilization(d), d.dir_id)):
        if accept(d.dir_id):
            return d.dir_id
    return None


def least_follower(cluster: Cluster, rep: Replica, accept: Callable[[int], bool],
                   rank: Callable[[Broker], tuple | None]) -> int | None:
    """The index of the follower that should lead instead (a goal's choose_leader):
    of the followers `rank` does not rule out (None) and `accept` takes, the
    one with the lowest rank. A rank ends with the broker id, so ties break
    the same way on every run."""
    best = None
    for index in range(1, len(rep.brokers)):
        key = rank(cluster.brokers[rep.brokers[index]])
        if key is None or not accept(index):
            continue
        if best is None or key < best[0]:
            best = (key, index)
    return None if best is None else best[1]


class Goal:
    """A soft goal (or the repair of the hard constraints); see the module doc."""
    name = ""
    # Its destination queues (queues_by_media), built in start_round.
    queues: Mapping[str, DestinationQueue] = MappingProxyType({})

    def prepare(self, cluster: Cluster) -> None:
        """Once, before the goal's first round (e.g. to set targets)."""

    def selections(self, cluster: Cluster) -> list[Selection]:
        """What should leave where this round; empty when the goal is met."""
        return []

    def start_round(self, cluster: Cluster) -> None:
        """Before the candidates of a round are placed (e.g. build queues)."""

    def arrange(self, cluster: Cluster, selection: Selection,
                candidates: list[tuple[int, Replica]]) -> list[tuple[int, Replica]]:
        """The order in which a selection's (source, replica) candidates are
        placed (as selected: by rank, sources interleaved)."""
        return candidates

    def choose(self, cluster: Cluster, rep: Replica, selection: Selection,
               accept: Callable[[int], bool]) -> int | None:
        """The destination dir of a candidate, or None to leave it."""
        return None

    def choose_leader(self, cluster: Cluster, rep: Replica, selection: Selection,
                      accept: Callable[[int], bool]) -> int | None:
        """The index of the replica that should lead instead, or None."""
        return None

    def landed(self, cluster: Cluster, broker_ids: Iterable[int]) -> None:
        """Loads of these brokers changed: their dirs' places in the queues are refreshed."""
        for queue in self.queues.values():
            queue.touch(broker_ids)

    def stuck(self, cluster: Cluster) -> bool:
        """A round placed nothing: True if the goal changed its aim and wants
        more rounds (e.g. new targets)."""
        return False

    def offer(self, cluster: Cluster, candidates: Callable[[], list[Replica]]) -> None:
        """The candidates of a `pool` selection, partners for swaps this
        round: a Spark job run on the first call (a round that places every
        candidate without a swap does not pay for it). They are the state at
        the start of the round: those of a partition changed since are
        skipped."""

    def choose_swap(self, cluster: Cluster, rep: Replica, selection: Selection,
                    accept: Callable[[Replica], bool]) -> Replica | None:
        """When no destination takes a candidate: a replica of another
        broker to trade places with (each goes to the other's dir), or None."""
        return None

    def guard(self, cluster: Cluster, rep: Replica, to_dir: int) -> bool:
        """A lower goal's move keeps this goal within its tolerance."""
        return True

    def guard_leader(self, cluster: Cluster, rep: Replica, new_index: int) -> bool:
        return True

    def measure(self, cluster: Cluster) -> list[Figure]:
        """The goal's figures against their targets (goals/status.py), from
        the aggregates; empty when the goal does not apply."""
        return []


def queues_by_media(cluster: Cluster, key: Callable[[Dir], float]) -> dict[str, DestinationQueue]:
    """One destination queue per media class over the eligible dirs."""
    media = sorted({d.media for d in cluster.dirs.values()})
    return {m: DestinationQueue(cluster, [d.dir_id for d in cluster.eligible_dirs() if d.media == m], key)
            for m in media}
