"""Hot data on SSD.

Heat of a partition: (bytes in + bytes out per second) / bytes stored. The
hot set is the hottest partitions, hottest first, while their replicas fill
at most HOT_BUDGET_SHARE of what the SSD dirs may hold (capacity x
capacity_threshold); the optimizer marks it once, as a Spark job.

Every replica of a hot partition should sit on an SSD dir. The SSD class
keeps its current volume (unless the hot set alone is larger), spread over
the racks so that every rack's SSD dirs fill alike (disk.ssd_volumes); so
each hot byte moved onto an SSD pushes the coldest non-hot bytes off one.
Per group, the SSD dirs fullest over their target give those cold bytes
(down to one common level: what an over-full SSD must shed anyway makes the
room), to HDD dirs; the hot replicas fill the SSD dirs under their target.
Both prefer their own broker (a move between dirs crosses no network) while
the dir there stays under its target. A hot replica of a broker above its
inbound target goes to the SSD of a broker under it instead: hot replicas
carry the most inbound per byte, so the bytes this goal moves anyway even
network in.
"""

from __future__ import annotations

from kafkactl.planner.goals.base import (HOT_BUDGET_SHARE, NETWORK_TOLERANCE, Cluster, DestinationQueue, Goal, Replica,
                   Selection, queues_by_media, ratio, same_broker_first)
from kafkactl.planner.goals.disk import fill_level, rack_volumes, set_media_targets
from kafkactl.planner.goals.network import in_target
from kafkactl.planner.goals.status import Figure


def heat(size_bytes: int, bytes_in_per_s: float, bytes_out_per_s: float) -> float:
    """Bytes per second per byte stored (an empty partition counts as one byte)."""
    return (bytes_in_per_s + bytes_out_per_s) / max(size_bytes, 1)


def hot_budget_bytes(ssd_capacity_bytes: int, capacity_threshold: float) -> int:
    return int(ssd_capacity_bytes * capacity_threshold * HOT_BUDGET_SHARE)


def hot_set(partitions, budget_bytes: int) -> set:
    """The hot set of (key, size_bytes, replication_factor, heat) tuples,
    hottest first while the replicas fit the budget; ties by key. (The
    optimizer computes the same with a Spark window.)"""
    chosen, used = set(), 0
    for key, size, rf, h in sorted(partitions, key=lambda p: (-p[3], p[0])):
        used += size * rf
        if used > budget_bytes:
            break
        chosen.add(key)
    return chosen


def ssd_volume_bytes(hot_bytes: int, ssd_bytes: int, ssd_allowed_bytes: int) -> int:
    """What the SSD class should hold: what it holds now (no needless moves
    between classes), at least the hot set, at most what it may hold."""
    return max(hot_bytes, min(ssd_bytes, ssd_allowed_bytes))


def shed_to_level(movable: list[int], sizes: list[int], targets: list[float],
                  excess: float) -> list[int]:
    """Bytes each dir gives so that together they give `excess`: the dirs
    fullest over their target first, all down to one level x target (water
    filling), none more than its movable bytes."""
    if excess <= 0 or not sizes:
        return [0] * len(sizes)

    def given(level):
        return [min(m, max(0, int(s - level * t))) for m, s, t in zip(movable, sizes, targets)]

    low, high = 0.0, max((s / t for s, t in zip(sizes, targets) if t > 0), default=0.0)
    for _ in range(50):
        middle = (low + high) / 2
        if sum(given(middle)) >= excess:
            low = middle
        else:
            high = middle
    return given(low)


class HotOnSsd(Goal):
    name = "hot_on_ssd"

    def prepare(self, cluster: Cluster) -> None:
        """Fix the bytes each media class should hold, per group of racks
        (the disk goal's targets)."""
        self.active = bool(cluster.media_capacity("ssd") and cluster.media_capacity("hdd"))
        if not self.active:
            return
        threshold = cluster.options.capacity_threshold
        groups = rack_volumes(cluster)
        set_media_targets(cluster, groups, [
            ssd_volume_bytes(g.hot, g.ssd, int(g.ssd_capacity * threshold)) for g in groups])

    def measure(self, cluster: Cluster) -> list[Figure]:
        """Bytes of hot replicas on HDD dirs (none when the cluster lacks SSD or HDD dirs)."""
        if not (cluster.media_capacity("ssd") and cluster.media_capacity("hdd")):
            return []
        return [Figure("hot bytes on HDD dirs", sum(d.hot_bytes for d in cluster.dirs.values() if d.media == "hdd"),
                       0)]

    def selections(self, cluster: Cluster) -> list[Selection]:
        if not self.active:
            return []
        hot_in = {d.dir_id: d.hot_bytes for d in cluster.eligible_dirs()
                  if d.media == "hdd" and d.hot_bytes > 0}
        if not hot_in:
            return []
        evict = self._evictions(cluster)
        selections = [Selection("hot_on_ssd:evict", "dir_id", evict, "size_bytes",
                                ("heat ASC", "size_bytes DESC"), where="media = 'ssd' AND NOT hot",
                                fit=False)] if evict else []
        return selections + [Selection("hot_on_ssd", "dir_id", hot_in, "size_bytes",
                                       ("heat DESC",), where="media = 'hdd' AND hot", fit=False)]

    def _evictions(self, cluster: Cluster) -> dict[int, int]:
        """Per SSD dir, the cold bytes to push off: per group, what the SSD
        dirs hold plus the hot bytes still on HDD, less the SSD targets,
        taken from the SSD dirs fullest over their target first (down to a
        common level): the hot replicas then fill the dirs under target, and
        the bytes an over-full SSD must shed anyway make the room."""
        evict = {}
        for group in sorted({cluster.group(d)[0] for d in cluster.eligible_dirs()}, key=str):
            dirs = [d for d in cluster.eligible_dirs() if cluster.group(d)[0] == group]
            ssd = [d for d in dirs if d.media == "ssd"]
            inflow = sum(d.hot_bytes for d in dirs if d.media == "hdd")
            targets = [cluster.dir_target(d) for d in ssd]
            excess = sum(d.size_bytes for d in ssd) + inflow - sum(targets)
            shed = shed_to_level([d.size_bytes - d.hot_bytes for d in ssd],
                                 [d.size_bytes for d in ssd], targets, excess)
            evict.update({d.dir_id: v for d, v in zip(ssd, shed) if v > 0})
        return evict

    def start_round(self, cluster: Cluster) -> None:
        self.queues = queues_by_media(cluster, lambda d: (cluster.utilization(d), d.dir_id))
        self.in_targets = {b.broker_id: in_target(cluster, b) for b in cluster.eligible_brokers()}

        def inbound(d):
            b = cluster.brokers[d.broker_id]
            return (ratio(b.bytes_in, self.in_targets[b.broker_id]), cluster.utilization(d), d.dir_id)
        ssd = [d.dir_id for d in cluster.eligible_dirs() if d.media == "ssd"]
        self.cool = DestinationQueue(cluster, ssd, inbound)

    def choose(self, cluster, rep, selection, accept):
        evicting = selection.name == "hot_on_ssd:evict"
        media = "hdd" if evicting else "ssd"

        def room(to_dir):
            # an HDD dir taking cold bytes is about to give its hot ones away
            d = cluster.dirs[to_dir]
            limit = fill_level(cluster, d) + (d.hot_bytes if evicting else 0)
            return d.size_bytes + rep.size_bytes <= limit and accept(to_dir)

        if not evicting and self._over(cluster, rep.broker_id):
            # a hot replica carries much inbound for its bytes: from a broker
            # above its inbound target, to the SSD of one under it, for the
            # same bytes moved as to its own SSD
            def cooler(to_dir):
                b = cluster.brokers[cluster.dirs[to_dir].broker_id]
                return (b.broker_id != rep.broker_id and not self._over(cluster, b.broker_id, rep.bytes_in)
                        and room(to_dir))
            chosen = self.cool.pick(cooler)
            if chosen is not None:
                return chosen

        def own(to_dir):
            # the own broker's dir first (no network) while it stays under
            # its target (counting the hot bytes an HDD dir gives away);
            # above it, the bytes would only move again
            d = cluster.dirs[to_dir]
            after = d.size_bytes + rep.size_bytes - (d.hot_bytes if evicting else 0)
            return after <= cluster.dir_target(d) and room(to_dir)

        local = same_broker_first(cluster, rep, media, own)
        if local is not None:
            return local
        for fits in (room, accept):           # balanced if possible, placed anyway
            local = same_broker_first(cluster, rep, media, fits)
            chosen = self.queues[media].pick(fits) if media in self.queues else None
            if chosen is not None:
                return chosen
            if local is not None:
                return local
        return None

    def _over(self, cluster: Cluster, broker_id: int, adding: int = 0) -> bool:
        b = cluster.brokers[broker_id]
        return b.bytes_in + adding > self.in_targets.get(broker_id, 0.0) * (1 + NETWORK_TOLERANCE / 2)

    def landed(self, cluster, broker_ids):
        super().landed(cluster, broker_ids)
        self.cool.touch(broker_ids)

    def guard(self, cluster: Cluster, rep: Replica, to_dir: int) -> bool:
        """A hot replica never leaves SSD (cold ones may use SSD room the
        hot set does not need)."""
        src, dst = cluster.dirs[rep.dir_id].media, cluster.dirs[to_dir].media
        return not (rep.hot and src == "ssd" and dst != "ssd")
