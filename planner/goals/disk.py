"""Even disk utilization, as a fraction of capacity, per media class.

Target of a dir: its media class's bytes over the class's eligible capacity,
times its capacity (per rack when every partition has a replica in every
rack: a rack's bytes are then fixed). Dirs above target x (1 + tolerance/2) shed their largest
replicas that fit in the excess (fewest moves, no overshoot) to the least
utilized dirs of the same class, which are filled up to the same level: a
move between dirs of one broker is tried first (no network). When every dir
is under that level but some are far below target (e.g. added brokers), the
dirs above target give up to what the low ones lack ("pull"). When no dir of
the same class can take a replica (the rack rule can pin a rack's share of a
class), a dir of another class under its level may.
"""

from __future__ import annotations

from .base import Cluster, Dir, Goal, Replica, Selection, queues_by_media, same_broker_first


def fill_level(cluster: Cluster, d: Dir) -> float:
    """Bytes a dir may hold once balanced: target x (1 + tolerance/2)."""
    return cluster.dir_target(d) * (1 + cluster.options.disk_tolerance / 2)


def band(cluster: Cluster, d: Dir) -> tuple[float, float]:
    """The range lower goals keep a dir in: target x (1 -/+ 3/4 of the
    tolerance), so that max/mean stays within the tolerance with a margin."""
    target, tolerance = cluster.dir_target(d), 0.75 * cluster.options.disk_tolerance
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


class Disk(Goal):
    name = "disk"

    def selections(self, cluster: Cluster) -> list[Selection]:
        """Per media class: drain the dirs above their fill level, or, when
        none is, pull from above target into the dirs far below it."""
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

    def landed(self, cluster, broker_ids):
        for queue in self.queues.values():
            queue.touch(broker_ids)

    def guard(self, cluster: Cluster, rep: Replica, to_dir: int) -> bool:
        """Same media class, the destination stays under its band's top and
        the source over its band's bottom."""
        src, dst = cluster.dirs[rep.dir_id], cluster.dirs[to_dir]
        if src.media != dst.media:
            return False
        return (dst.size_bytes + rep.size_bytes <= band(cluster, dst)[1]
                and src.size_bytes - rep.size_bytes >= band(cluster, src)[0])
