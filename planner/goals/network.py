"""Even network in and out, as a share of each broker's capacity.

Inbound: every replica carries its partition's bytes in (the leader from
producers, followers from the leader). Outbound: only the leader serves
consumers. Targets: the cluster's total, shared in proportion to capacity.

Outbound is balanced first by choosing which replica leads (reordering a
partition's replicas moves no bytes); inbound by moving the replicas with
the most inbound per byte stored (cheapest to move for what they relieve)
to brokers under their target, within the disk goal's band.
"""

from __future__ import annotations

from .base import NETWORK_TOLERANCE, Broker, Cluster, Goal, Replica, Selection, queues_by_media, ratio


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


class Network(Goal):
    name = "network"

    def prepare(self, cluster: Cluster) -> None:
        # moves and leader changes keep the totals, so the targets hold throughout
        self.in_targets = {b: in_target(cluster, x) for b, x in cluster.brokers.items()}
        self.out_targets = {b: out_target(cluster, x) for b, x in cluster.brokers.items()}

    def selections(self, cluster: Cluster) -> list[Selection]:
        half = NETWORK_TOLERANCE / 2
        brokers = cluster.eligible_brokers()
        out = excess({b.broker_id: b.bytes_out for b in brokers}, self.out_targets, half)
        inbound = excess({b.broker_id: b.bytes_in for b in brokers}, self.in_targets, half)
        selections = []
        if out:
            selections.append(Selection("network:leaders", "broker_id", out, "bytes_out",
                                        ("bytes_out DESC",), where="replica_index = 0",
                                        leaders_only=True))
        if inbound:
            selections.append(Selection("network:in", "broker_id", inbound, "bytes_in",
                                        ("bytes_in / greatest(size_bytes, 1) DESC",)))
        return selections

    def start_round(self, cluster: Cluster) -> None:
        def key(d):
            b = cluster.brokers[d.broker_id]
            return (ratio(b.bytes_in, self.in_targets[b.broker_id]), cluster.utilization(d), d.dir_id)
        self.queues = queues_by_media(cluster, key)

    def choose(self, cluster, rep, selection, accept):
        media = cluster.dirs[rep.dir_id].media
        limit = 1 + NETWORK_TOLERANCE / 2

        def room(to_dir):
            b = cluster.brokers[cluster.dirs[to_dir].broker_id]
            if b.broker_id == rep.broker_id:
                return False                  # inbound is per broker: leave it
            if b.bytes_in + rep.bytes_in > self.in_targets[b.broker_id] * limit:
                return False
            if rep.leader and b.bytes_out + rep.bytes_out > self.out_targets[b.broker_id] * limit:
                return False
            return accept(to_dir)

        return self.queues[media].pick(room)

    def choose_leader(self, cluster, rep, selection, accept):
        limit = 1 + NETWORK_TOLERANCE / 2
        best = None
        for index in range(1, len(rep.brokers)):
            b = cluster.brokers[rep.brokers[index]]
            after = b.bytes_out + rep.bytes_out
            if not b.eligible or after > self.out_targets[b.broker_id] * limit or not accept(index):
                continue
            rank = (ratio(after, self.out_targets[b.broker_id]), b.broker_id)
            if best is None or rank < best[0]:
                best = (rank, index)
        return None if best is None else best[1]

    def landed(self, cluster, broker_ids):
        for queue in self.queues.values():
            queue.touch(broker_ids)

    def guard(self, cluster: Cluster, rep: Replica, to_dir: int) -> bool:
        b = cluster.brokers[cluster.dirs[to_dir].broker_id]
        if b.broker_id == rep.broker_id:
            return True
        limit = 1 + NETWORK_TOLERANCE
        if b.bytes_in + rep.bytes_in > max(self.in_targets[b.broker_id] * limit, b.bytes_in):
            return False
        return not (rep.leader and
                    b.bytes_out + rep.bytes_out > max(self.out_targets[b.broker_id] * limit, b.bytes_out))

    def guard_leader(self, cluster: Cluster, rep: Replica, new_index: int) -> bool:
        b = cluster.brokers[rep.brokers[new_index]]
        return b.bytes_out + rep.bytes_out <= self.out_targets[b.broker_id] * (1 + NETWORK_TOLERANCE)
