"""The hard constraints: what cannot be met at all, and the repair of the
current assignment where it breaks them (before any soft goal).

Repaired, in this order within a round: replicas that must leave (on an
excluded broker, or sharing a rack the partition could avoid), dirs above
capacity_threshold, brokers above their network in threshold (by moving the
replicas with the most inbound), and brokers above their network out
threshold (by handing leadership to a follower).
"""

from __future__ import annotations

from dataclasses import dataclass

from kafkactl.planner.goals.base import (NO_LIMIT, Cluster, Goal, Selection, least_follower, queues_by_media,
                                          same_broker_first)
from kafkactl.planner.goals.disk import fill_level
from kafkactl.planner.goals.status import Figure

# the replica view's flags (see optimizer.py)
MUST_LEAVE = "NOT eligible OR rack_violation"


@dataclass(frozen=True)
class PartitionTotals:
    """Aggregates over the partitions, computed as one Spark job."""
    partitions: int
    replica_bytes: int             # sum of size x RF
    max_rf: int
    max_size_bytes: int
    replica_bytes_in: int          # sum of bytes in x RF
    bytes_out: int
    per_rack_bytes: int            # sum of sizes of partitions with RF >= racks
    min_rf: int = 0
    replicas: int = 0              # sum of RF


def infeasible(cluster: Cluster, totals: PartitionTotals) -> list[str]:
    """The hard constraints no assignment can meet, each with why."""
    opts, problems = cluster.options, []
    eligible = cluster.eligible_brokers()
    unknown = sorted((set(opts.exclude_brokers) | set(opts.add_brokers)) - set(cluster.brokers))
    if unknown:
        problems.append(f"brokers: {unknown} are not in the snapshot")
    if totals.max_rf > len(eligible):
        problems.append(f"replication factor: a partition has {totals.max_rf} replicas but only "
                        f"{len(eligible)} brokers may hold replicas")
    allowed = sum(int(d.capacity_bytes * opts.capacity_threshold) for d in cluster.eligible_dirs())
    if totals.replica_bytes > allowed:
        problems.append(f"capacity: the replicas take {totals.replica_bytes} bytes, the eligible "
                        f"log dirs may hold {allowed} at capacity_threshold {opts.capacity_threshold}")
    largest = max((int(d.capacity_bytes * opts.capacity_threshold) for d in cluster.eligible_dirs()),
                  default=0)
    if totals.max_size_bytes > largest:
        problems.append(f"capacity: a partition of {totals.max_size_bytes} bytes fits in no log dir "
                        f"(the largest may hold {largest})")
    problems += _network(cluster, totals)
    problems += _racks(cluster, totals)
    return problems


def _network(cluster: Cluster, totals: PartitionTotals) -> list[str]:
    opts, eligible, problems = cluster.options, cluster.eligible_brokers(), []
    inbound = sum(int(b.in_capacity * opts.network_in_threshold) for b in eligible)
    if totals.replica_bytes_in > inbound:
        problems.append(f"network in: the replicas carry {totals.replica_bytes_in} B/s in, the "
                        f"eligible brokers may take {inbound} at network_in_threshold "
                        f"{opts.network_in_threshold}")
    outbound = sum(int(b.out_capacity * opts.network_out_threshold) for b in eligible)
    if totals.bytes_out > outbound:
        problems.append(f"network out: the leaders serve {totals.bytes_out} B/s, the eligible "
                        f"brokers may serve {outbound} at network_out_threshold "
                        f"{opts.network_out_threshold}")
    return problems


def _racks(cluster: Cluster, totals: PartitionTotals) -> list[str]:
    """Where every rack needs a replica of a partition (RF >= racks), each
    rack must hold at least the sum of their sizes."""
    if not cluster.rack_count or not totals.per_rack_bytes:
        return []
    allowed: dict[str, int] = {}
    for d in cluster.eligible_dirs():
        rack = cluster.brokers[d.broker_id].rack
        allowed[rack] = allowed.get(rack, 0) + int(d.capacity_bytes * cluster.options.capacity_threshold)
    return [f"rack spread: every one of the {cluster.rack_count} racks needs a replica of each "
            f"partition with RF >= {cluster.rack_count} ({totals.per_rack_bytes} bytes), rack "
            f"{rack} may hold {room} bytes at capacity_threshold {cluster.options.capacity_threshold}"
            for rack, room in sorted(allowed.items()) if room < totals.per_rack_bytes]


def violations(cluster: Cluster, rack_violations: int) -> list[str]:
    """The hard constraints the assignment still breaks."""
    opts, found = cluster.options, []
    for b in cluster.brokers.values():
        if not b.eligible and b.replicas:
            found.append(f"excluded broker {b.broker_id} still holds {b.replicas} replicas")
        if b.eligible and b.bytes_in > opts.network_in_threshold * b.in_capacity:
            found.append(f"broker {b.broker_id} network in {b.bytes_in} B/s is above "
                         f"{opts.network_in_threshold} of {b.in_capacity}")
        if b.eligible and b.bytes_out > opts.network_out_threshold * b.out_capacity:
            found.append(f"broker {b.broker_id} network out {b.bytes_out} B/s is above "
                         f"{opts.network_out_threshold} of {b.out_capacity}")
    for d in cluster.dirs.values():
        if d.size_bytes > opts.capacity_threshold * d.capacity_bytes:
            found.append(f"log dir {d.path} of broker {d.broker_id} holds {d.size_bytes} bytes, "
                         f"above {opts.capacity_threshold} of {d.capacity_bytes}")
    if rack_violations:
        found.append(f"rack spread: {rack_violations} replicas share a rack their partition "
                     f"could avoid")
    return found


def violation_count(cluster: Cluster) -> int:
    """Replicas on excluded brokers, brokers and dirs above a threshold, and
    replicas sharing a rack they could avoid (cluster.rack_violations)."""
    opts = cluster.options
    count = cluster.rack_violations
    for b in cluster.brokers.values():
        if not b.eligible:
            count += b.replicas
        else:
            count += (b.bytes_in > opts.network_in_threshold * b.in_capacity) + (
                b.bytes_out > opts.network_out_threshold * b.out_capacity)
    return count + sum(d.size_bytes > opts.capacity_threshold * d.capacity_bytes for d in cluster.dirs.values())


class Repair(Goal):
    name = "repair"

    def measure(self, cluster: Cluster) -> list[Figure]:
        return [Figure("hard-constraint violations (replicas, brokers, dirs)", violation_count(cluster), 0)]

    def selections(self, cluster: Cluster) -> list[Selection]:
        opts, selections = cluster.options, []
        leaving = any(not b.eligible and b.replicas for b in cluster.brokers.values())
        if leaving or getattr(cluster, "rack_violations", 0):
            selections.append(Selection("repair:must_leave", "dir_id",
                                        {i: NO_LIMIT for i in cluster.dirs}, "size_bytes",
                                        ("size_bytes DESC",), where=MUST_LEAVE, fit=False))
        full = {d.dir_id: int(d.size_bytes - opts.capacity_threshold * d.capacity_bytes) + 1
                for d in cluster.eligible_dirs()
                if d.size_bytes > opts.capacity_threshold * d.capacity_bytes}
        if full:
            selections.append(Selection("repair:capacity", "dir_id", full, "size_bytes",
                                        ("size_bytes DESC",), fit=False))
        brokers = cluster.eligible_brokers()
        inbound = {b.broker_id: int(b.bytes_in - opts.network_in_threshold * b.in_capacity) + 1
                   for b in brokers if b.bytes_in > opts.network_in_threshold * b.in_capacity}
        if inbound:
            selections.append(Selection("repair:network_in", "broker_id", inbound, "bytes_in",
                                        ("bytes_in DESC",), fit=False))
        out = {b.broker_id: int(b.bytes_out - opts.network_out_threshold * b.out_capacity) + 1
               for b in brokers if b.bytes_out > opts.network_out_threshold * b.out_capacity}
        if out:
            selections.append(Selection("repair:network_out", "broker_id", out, "bytes_out",
                                        ("bytes_out DESC",), where="replica_index = 0",
                                        fit=False, leaders_only=True))
        return selections

    def start_round(self, cluster: Cluster) -> None:
        self.queues = queues_by_media(cluster, lambda d: (cluster.utilization(d), d.dir_id))

    def choose(self, cluster, rep, selection, accept):
        src = cluster.dirs[rep.dir_id]
        leaving_broker = selection.name != "repair:capacity"

        def hard(to_dir):
            to_broker = cluster.dirs[to_dir].broker_id
            if leaving_broker and to_broker == rep.broker_id:
                return False
            if (cluster.rack_count and cluster.racks_with(rep, rep.broker_id) < cluster.racks_wanted(rep)
                    and cluster.racks_with(rep, to_broker) <= cluster.racks_with(rep, rep.broker_id)):
                return False                  # a rack violation must gain a rack
            return accept(to_dir)

        def balanced(to_dir):
            d = cluster.dirs[to_dir]
            return d.size_bytes + rep.size_bytes <= fill_level(cluster, d) and hard(to_dir)

        media = [src.media] + sorted(m for m in self.queues if m != src.media)
        for fits in (balanced, hard):         # same media and balanced first
            for m in media:
                if not leaving_broker:
                    local = same_broker_first(cluster, rep, m, fits)
                    if local is not None:
                        return local
                chosen = self.queues[m].pick(fits)
                if chosen is not None:
                    return chosen
        return None

    def choose_leader(self, cluster, rep, selection, accept):
        return least_follower(cluster, rep, accept,
                              lambda b: (b.bytes_out / max(b.out_capacity, 1), b.broker_id))
