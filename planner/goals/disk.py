"""Even disk utilization, as a fraction of capacity, per media class.

Target of a dir: its media class's bytes over the class's eligible capacity,
times its capacity (per rack when every partition has a replica in every
rack: a rack's bytes are then fixed; hot_on_ssd sets how much of a rack's
bytes its SSD dirs hold). Dirs above target x (1 + tolerance/2) shed their
largest replicas that fit in the excess (fewest moves, no overshoot) to the
least utilized dirs of the same class, which are filled up to the same
level: a move between dirs of one broker is tried first (no network). When
every dir is under that level but some are far below target (e.g. added
brokers), the dirs above target give up to what the low ones lack ("pull"). When no dir of the same class can
take a replica (the rack rule can pin a rack's share of a class), a dir of
another class under its level may. When nothing is left to do or nothing
can be placed against these targets, the goal balances once more around
what each class holds now (a class may end a little off its target).

Which replicas a dir sheds: the largest that fit (fewest moves), except on
a broker holding more replicas than its share (the mean, per rack when
racks are pinned): there, about as many replicas as it holds too many,
each the size nearest to the bytes left to shed over the count left
(shed_order), each to the dir with room of the broker holding fewest
replicas. The bytes are the same; the counts even out on the way, which
the counts goal, kept within the disk band, could not do afterwards (on
`unbalanced_two_racks`, largest first left one broker of each rack with
every small replica: 6 replicas where the mean is 4).

Lower goals keep every dir within target x (1 -/+ tolerance/2), or, where
whole replicas keep a dir out of that band, move only so that the pair
narrows (the destination ends no fuller over its target than the source
was, the source no emptier than the destination was).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from kafkactl.planner.goals.base import (Cluster, DestinationQueue, Dir, Goal, Replica, Selection, queues_by_media,
                                          same_broker_first)
from kafkactl.planner.goals.status import Figure


def fill_level(cluster: Cluster, d: Dir) -> float:
    """Bytes a dir may hold once balanced: target x (1 + tolerance/2), and
    never above the capacity threshold (a target near it would otherwise
    count room that the hard constraint refuses)."""
    return min(cluster.dir_target(d) * (1 + cluster.options.disk_tolerance / 2),
               cluster.options.capacity_threshold * d.capacity_bytes)


def band(cluster: Cluster, d: Dir) -> tuple[float, float]:
    """The range lower goals keep a dir in: target x (1 -/+ half the
    tolerance), so that max/mean stays within the tolerance with a margin
    (the class's mean can sit a little under its target across racks)."""
    target, tolerance = cluster.dir_target(d), 0.5 * cluster.options.disk_tolerance
    return target * (1 - tolerance), target * (1 + tolerance)


def in_group(cluster: Cluster, group) -> list[Dir]:
    """The eligible dirs of a group (a media class, or "ssd" for short, or a
    (rack, media) pair when racks are pinned)."""
    if isinstance(group, str):
        return [d for d in cluster.eligible_dirs() if d.media == group]
    return [d for d in cluster.eligible_dirs() if cluster.group(d) == group]


def excess_above_fill(cluster: Cluster, group) -> dict[int, int]:
    return {d.dir_id: int(d.size_bytes - fill_level(cluster, d)) for d in in_group(cluster, group)
            if d.size_bytes > fill_level(cluster, d) + 1}


def pull_excess(cluster: Cluster, group) -> dict[int, int]:
    """What dirs above target give so that dirs below target x (1 - tolerance/2)
    reach their target, in proportion to what they hold above it."""
    half = cluster.options.disk_tolerance / 2
    dirs = in_group(cluster, group)
    lacking = sum(cluster.dir_target(d) - d.size_bytes for d in dirs
                  if d.size_bytes < cluster.dir_target(d) * (1 - half))
    above = {d.dir_id: d.size_bytes - cluster.dir_target(d) for d in dirs
             if d.size_bytes > cluster.dir_target(d)}
    total = sum(above.values())
    if lacking <= 0 or total <= 0:
        return {}
    share = min(1.0, lacking / total)
    return {i: int(v * share) for i, v in above.items() if int(v * share) > 0}


def narrowing_room(cluster: Cluster, group, dir_id: int) -> int:
    """The largest replica dir_id can give and still narrow against the
    least filled dir of its group (relative to targets)."""
    d = cluster.dirs[dir_id]
    target = cluster.dir_target(d)
    least = min((x.size_bytes / t for x in in_group(cluster, group) if (t := cluster.dir_target(x)) > 0), default=0.0)
    return int(d.size_bytes - least * target) if target > 0 else 0


def largest_room(cluster: Cluster, group, pull: bool) -> int:
    """The most bytes one dir of the group can take before its limit."""
    limit = cluster.dir_target if pull else (lambda d: fill_level(cluster, d))
    return max((int(limit(d) - d.size_bytes) for d in in_group(cluster, group)), default=0)


@dataclass(frozen=True)
class RackVolume:
    """A group of racks balanced on its own (all racks, or one rack when
    racks are pinned): the bytes it holds (fixed), of which hot and on SSD,
    and its eligible capacity per media class."""
    rack: str | None
    total: int
    hot: int
    ssd: int
    ssd_capacity: int
    hdd_capacity: int


def rack_volumes(cluster: Cluster) -> list[RackVolume]:
    """The groups with both SSD and HDD room (the bytes of an excluded
    broker count in its rack: they stay in it)."""
    groups = []
    for rack in sorted({cluster.group(d)[0] for d in cluster.dirs.values()}, key=str):
        dirs = [d for d in cluster.dirs.values() if cluster.group(d)[0] == rack]
        eligible = [d for d in dirs if cluster.brokers[d.broker_id].eligible]
        ssd_capacity = sum(d.capacity_bytes for d in eligible if d.media == "ssd")
        hdd_capacity = sum(d.capacity_bytes for d in eligible if d.media == "hdd")
        if ssd_capacity and hdd_capacity:
            groups.append(RackVolume(
                rack, sum(d.size_bytes for d in dirs), sum(d.hot_bytes for d in dirs),
                sum(d.size_bytes for d in dirs if d.media == "ssd"), ssd_capacity, hdd_capacity))
    return groups


def ssd_volumes(groups: list[RackVolume], kept: list[int], capacity_threshold: float) -> list[int]:
    """The bytes each group's SSD dirs should hold.

    The SSD class as a whole holds sum(kept) (each group's own wish); it is
    shared between groups so that every group's SSD utilization is the same
    relative to the group's overall fill: equal when racks are alike, so
    that SSD dirs balance over the cluster and not only within a rack. A
    group stays within what it allows: at least its hot bytes and what its
    HDD dirs cannot hold, at most its SSD room and its bytes; a group whose
    limits cross keeps its own wish."""
    capacity = sum(g.ssd_capacity + g.hdd_capacity for g in groups)
    if len(groups) < 2 or not capacity or not sum(g.total for g in groups):
        return list(kept)
    fill = sum(g.total for g in groups) / capacity
    ssd_fill = sum(kept) / sum(g.ssd_capacity for g in groups)
    volumes = []
    for g, own in zip(groups, kept):
        low = max(g.hot, g.total - int(g.hdd_capacity * capacity_threshold))
        high = min(int(g.ssd_capacity * capacity_threshold), g.total)
        if low > high:
            volumes.append(own)
            continue
        relative = g.total / (g.ssd_capacity + g.hdd_capacity) / fill
        volumes.append(min(high, max(low, int(ssd_fill * relative * g.ssd_capacity))))
    return volumes


def set_media_targets(cluster: Cluster, groups: list[RackVolume], kept: list[int]) -> None:
    """Per group, the SSD target from ssd_volumes and the HDD target from
    what is left of the group's bytes."""
    for g, ssd in zip(groups, ssd_volumes(groups, kept, cluster.options.capacity_threshold)):
        cluster.util_target[(g.rack, "ssd")] = ssd / g.ssd_capacity
        cluster.util_target[(g.rack, "hdd")] = (g.total - ssd) / g.hdd_capacity


def max_over_mean(cluster: Cluster, media: str) -> float | None:
    """The most utilized eligible dir of a media class over the class's
    utilization (its bytes over its capacity); None without bytes."""
    dirs = [d for d in cluster.eligible_dirs() if d.media == media]
    capacity = sum(d.capacity_bytes for d in dirs)
    mean = sum(d.size_bytes for d in dirs) / capacity if capacity else 0.0
    return max(cluster.utilization(d) for d in dirs) / mean if mean > 0 else None


def _narrows(cluster: Cluster, rep: Replica, src: Dir, dst: Dir, strict: bool = False) -> bool:
    """After the move, the destination is no fuller (over its target) than
    the source was, and the source no emptier than the destination was
    (strict: neither level with it, so that the goal's own moves progress
    and never swing back)."""
    def level(d: Dir, size: int) -> float:
        target = cluster.dir_target(d)
        return size / target if target > 0 else float("inf")
    fuller, emptier = level(dst, dst.size_bytes + rep.size_bytes), level(src, src.size_bytes - rep.size_bytes)
    if strict:
        return fuller < level(src, src.size_bytes) and emptier > level(dst, dst.size_bytes)
    return fuller <= level(src, src.size_bytes) and emptier >= level(dst, dst.size_bytes)


def count_surplus(cluster: Cluster) -> dict[int, float]:
    """Per eligible broker, the replicas it holds above its share: the mean
    over the eligible brokers (of its rack when racks are pinned, as a rack
    then holds a replica of every partition)."""
    totals: dict[str | None, list[int]] = {}
    for b in cluster.brokers.values():
        key = b.rack if cluster.racks_pinned else None
        held = totals.setdefault(key, [0, 0])
        held[0] += b.replicas
        held[1] += b.eligible
    return {b.broker_id: b.replicas - held[0] / held[1] for b in cluster.eligible_brokers()
            if (held := totals[b.rack if cluster.racks_pinned else None])[1]}


def shed_order(reps: list[Replica], excess: int, count: int) -> list[Replica]:
    """reps reordered so that about `count` of them make up `excess` bytes:
    each next the one nearest in size to the bytes left over the replicas
    left (ties: the larger); past `count`, the largest."""
    import bisect

    pool = sorted(range(len(reps)), key=lambda i: (reps[i].size_bytes, i))
    sizes = [reps[i].size_bytes for i in pool]
    order, left_bytes, left_count = [], excess, count
    while pool:
        want = left_bytes / left_count if left_count > 0 and left_bytes > 0 else sizes[-1]
        at = bisect.bisect_left(sizes, want)
        near = [j for j in (at - 1, at) if 0 <= j < len(pool)]
        j = min(near, key=lambda j: (abs(sizes[j] - want), -sizes[j]))
        order.append(reps[pool[j]])
        left_bytes -= sizes[j]
        left_count -= 1
        del pool[j], sizes[j]
    return order


class Disk(Goal):
    name = "disk"
    # destinations for sources on brokers holding too many replicas (start_round)
    by_count: Mapping[str, DestinationQueue] = MappingProxyType({})

    def measure(self, cluster: Cluster) -> list[Figure]:
        target = 1 + cluster.options.disk_tolerance
        found = {m: max_over_mean(cluster, m) for m in sorted({d.media for d in cluster.eligible_dirs()})}
        return [Figure(f"{m} log dir utilization max/mean", v, target, f"log_dir_utilization_{m}")
                for m, v in found.items() if v is not None]

    def prepare(self, cluster: Cluster) -> None:
        self.settled = False
        self.loose = False

    def selections(self, cluster: Cluster) -> list[Selection]:
        """Per media class: drain the dirs above their fill level, or, when
        none is, pull from above target into the dirs far below it. When
        nothing is left to do or nothing placed against the targets (hot_on_ssd's: the SSD
        class evenly over the racks), once more against what each class
        holds: a class can end a little under its target (hot_on_ssd moved
        a little more or less than it aimed, and a move between classes is
        only a fallback), and its dirs must still balance around their mean."""
        found = self._selections(cluster)
        if not found and self.stuck(cluster):
            found = self._selections(cluster)
        return found

    def stuck(self, cluster: Cluster) -> bool:
        """Nothing to do or nothing placed against hot_on_ssd's targets:
        balance around what each class holds instead (once). Nothing placed
        after that: once, replicas larger than their dir's excess too, each
        moved only where the pair narrows (whole replicas larger than what
        is left to even)."""
        if not self.settled:
            self.settled = True
            cluster.util_target = cluster._media_targets()
            return True
        if not self.loose:
            self.loose = True
            return True
        return False

    def _selections(self, cluster: Cluster) -> list[Selection]:
        excess, largest, self.pulling = {}, {}, set()
        for group in sorted({cluster.group(d) for d in cluster.eligible_dirs()}, key=str):
            found = excess_above_fill(cluster, group)
            if not found:
                found = pull_excess(cluster, group)
                self.pulling.add(group)
            room = largest_room(cluster, group, group in self.pulling)
            excess.update(found)
            largest.update({i: max(room, narrowing_room(cluster, group, i)) if self.loose else room for i in found})
        if not excess:
            return []
        return [Selection("disk", "dir_id", excess, "size_bytes", ("size_bytes DESC",),
                          largest=largest, fit=not self.loose)]

    def start_round(self, cluster: Cluster) -> None:
        self.queues = queues_by_media(cluster, lambda d: (cluster.utilization(d), d.dir_id))
        # for sources on brokers holding too many replicas: the dirs of brokers holding fewest first
        self.by_count = queues_by_media(
            cluster, lambda d: (cluster.brokers[d.broker_id].replicas, cluster.utilization(d), d.dir_id))
        self.surplus = count_surplus(cluster)

    def landed(self, cluster, broker_ids):
        super().landed(cluster, broker_ids)
        for queue in self.by_count.values():
            queue.touch(broker_ids)

    def arrange(self, cluster, selection, candidates):
        """Per source dir on a broker holding more replicas than its share,
        the replicas to shed in an order whose count tracks that surplus
        (shed_order): the same bytes balance disk and even the counts, which
        the counts goal, kept within the disk band, could not do after. Other
        sources keep the largest first (fewest moves)."""
        by_source: dict[int, list[Replica]] = {}
        for source, rep in candidates:
            by_source.setdefault(source, []).append(rep)
        surplus = count_surplus(cluster)
        excess_of_broker: dict[int, int] = {}
        for source in by_source:
            b = cluster.dirs[source].broker_id
            excess_of_broker[b] = excess_of_broker.get(b, 0) + selection.excess.get(source, 0)
        ordered = []
        for source, reps in by_source.items():
            b = cluster.dirs[source].broker_id
            share = surplus.get(b, 0.0) * selection.excess.get(source, 0) / max(excess_of_broker[b], 1)
            if share >= 1:
                reps = shed_order(reps, selection.excess.get(source, 0), round(share))
            ordered += [(rank, source, rep) for rank, rep in enumerate(reps)]
        return [(source, rep) for _, source, rep in sorted(ordered, key=lambda e: (e[0], e[1]))]

    def choose(self, cluster, rep, selection, accept):
        media = cluster.dirs[rep.dir_id].media
        pull = cluster.group(cluster.dirs[rep.dir_id]) in self.pulling

        def room(to_dir):
            d = cluster.dirs[to_dir]
            limit = cluster.dir_target(d) if pull else fill_level(cluster, d)
            fits = d.size_bytes + rep.size_bytes <= limit
            narrows = (self.loose and d.media == media
                       and _narrows(cluster, rep, cluster.dirs[rep.dir_id], d, strict=True))
            return (fits or narrows) and accept(to_dir)

        # the same media class first; another one when racks leave a rack's
        # class over target with no same-class room in reach
        queues = self.by_count if self.surplus.get(rep.broker_id, 0.0) >= 1 else self.queues
        for m in [media] + sorted(m for m in self.queues if m != media):
            local = same_broker_first(cluster, rep, m, room)
            chosen = local if local is not None else queues[m].pick(room)
            if chosen is not None:
                return chosen
        return None

    def guard(self, cluster: Cluster, rep: Replica, to_dir: int) -> bool:
        """Same media class; the destination stays under its band's top and
        the source over its band's bottom, or (whole replicas can keep a dir
        out of the band) the move narrows the pair: neither ends further
        from its target than the other started."""
        src, dst = cluster.dirs[rep.dir_id], cluster.dirs[to_dir]
        if src.media != dst.media:
            return False
        if (dst.size_bytes + rep.size_bytes <= band(cluster, dst)[1]
                and src.size_bytes - rep.size_bytes >= band(cluster, src)[0]):
            return True
        return _narrows(cluster, rep, src, dst)
