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
"""

from __future__ import annotations

from dataclasses import dataclass

from kafkactl.planner.goals.base import Cluster, Dir, Goal, Replica, Selection, queues_by_media, same_broker_first
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


class Disk(Goal):
    name = "disk"

    def measure(self, cluster: Cluster) -> list[Figure]:
        target = 1 + cluster.options.disk_tolerance
        found = {m: max_over_mean(cluster, m) for m in sorted({d.media for d in cluster.eligible_dirs()})}
        return [Figure(f"{m} log dir utilization max/mean", v, target, f"log_dir_utilization_{m}") for m, v in found.items() if v is not None]

    def prepare(self, cluster: Cluster) -> None:
        self.settled = False

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
        balance around what each class holds instead (once)."""
        if self.settled:
            return False
        self.settled = True
        cluster.util_target = cluster._media_targets()
        return True

    def _selections(self, cluster: Cluster) -> list[Selection]:
        excess, largest, self.pulling = {}, {}, set()
        for group in sorted({cluster.group(d) for d in cluster.eligible_dirs()}, key=str):
            found = excess_above_fill(cluster, group)
            if not found:
                found = pull_excess(cluster, group)
                self.pulling.add(group)
            room = largest_room(cluster, group, group in self.pulling)
            excess.update(found)
            largest.update({i: room for i in found})
        if not excess:
            return []
        return [Selection("disk", "dir_id", excess, "size_bytes", ("size_bytes DESC",),
                          largest=largest)]

    def start_round(self, cluster: Cluster) -> None:
        self.queues = queues_by_media(cluster, lambda d: (cluster.utilization(d), d.dir_id))

    def choose(self, cluster, rep, selection, accept):
        media = cluster.dirs[rep.dir_id].media
        pull = cluster.group(cluster.dirs[rep.dir_id]) in self.pulling

        def room(to_dir):
            d = cluster.dirs[to_dir]
            limit = cluster.dir_target(d) if pull else fill_level(cluster, d)
            return d.size_bytes + rep.size_bytes <= limit and accept(to_dir)

        # the same media class first; another one when racks leave a rack's
        # class over target with no same-class room in reach
        for m in [media] + sorted(m for m in self.queues if m != media):
            local = same_broker_first(cluster, rep, m, room)
            chosen = local if local is not None else self.queues[m].pick(room)
            if chosen is not None:
                return chosen
        return None

    def guard(self, cluster: Cluster, rep: Replica, to_dir: int) -> bool:
        """Same media class, the destination stays under its band's top and
        the source over its band's bottom."""
        src, dst = cluster.dirs[rep.dir_id], cluster.dirs[to_dir]
        if src.media != dst.media:
            return False
        return (dst.size_bytes + rep.size_bytes <= band(cluster, dst)[1]
                and src.size_bytes - rep.size_bytes >= band(cluster, src)[0])
