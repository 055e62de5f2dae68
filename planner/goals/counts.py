"""Even replica and leader counts per broker.

Limit: mean x (1 + COUNT_TOLERANCE) over the eligible brokers, rounded
down, at least the mean rounded up (count_limit). Leader
counts are evened by choosing which replica leads (no bytes move), taking the
partitions with the least outbound first; replica counts by moving the
smallest replicas (fewest bytes for one count) to the brokers with the fewest,
within the disk and network goals' tolerance. Brokers far under the mean
(e.g. added ones) pull from those above it. A move always narrows the spread
(the destination ends with fewer than the source had), past the limit too:
with racks of unequal size, the brokers of a small rack hold more than the
limit whatever moves, and the others must still even out. As a guard, a
lower goal's move stays within the limit or lands on a broker that ends
with fewer than the source had: it never adds to the most loaded, in
replicas nor, for a leader (which takes its leadership along), in leaders.
"""

from __future__ import annotations

import math

from kafkactl.planner.goals.base import (COUNT_TOLERANCE, Cluster, Goal, Replica, Selection, least_follower,
                                          queues_by_media)
from kafkactl.planner.goals.status import Figure


def count_limit(mean: float) -> int:
    """The whole count nearest under mean x (1 + tolerance), at least the
    mean rounded up (a limit of ceil(2 x 1.1) = 3 would let a broker hold
    1.5 times the mean of 2)."""
    return max(math.ceil(mean - 1e-9), math.floor(mean * (1 + COUNT_TOLERANCE) + 1e-9))


def count_excess(counts: dict[int, int]) -> dict[int, int]:
    """Per broker, the count above the limit; if none is above but some are
    far under the mean, what those above the mean give up to fill them."""
    if not counts:
        return {}
    mean = sum(counts.values()) / len(counts)
    limit = count_limit(mean)
    over = {b: c - limit for b, c in counts.items() if c > limit}
    if over:
        return over
    low = math.floor(mean * (1 - COUNT_TOLERANCE))
    lacking = sum(math.floor(mean) - c for c in counts.values() if c < low)
    above = {b: c - math.ceil(mean) for b, c in counts.items() if c > math.ceil(mean)}
    total = sum(above.values())
    if lacking <= 0 or total <= 0:
        return {}
    share = min(1.0, lacking / total)
    return {b: math.ceil(v * share) for b, v in above.items()}


class Counts(Goal):
    name = "counts"

    def _means(self, cluster: Cluster) -> tuple[float, float]:
        brokers = cluster.eligible_brokers()
        replicas = sum(b.replicas for b in cluster.brokers.values())
        leaders = sum(b.leaders for b in cluster.brokers.values())
        return replicas / len(brokers), leaders / len(brokers)

    def measure(self, cluster: Cluster) -> list[Figure]:
        brokers = cluster.eligible_brokers()
        replicas, leaders = self._means(cluster)
        return [Figure("most replicas on a broker", max(b.replicas for b in brokers), count_limit(replicas),
                       "replica_count"),
                Figure("most leaders on a broker", max(b.leaders for b in brokers), count_limit(leaders),
                       "leader_count")]

    def prepare(self, cluster: Cluster) -> None:
        replicas, leaders = self._means(cluster)
        self.replica_limit, self.leader_limit = count_limit(replicas), count_limit(leaders)
        self.replica_mean, self.leader_mean = replicas, leaders

    def selections(self, cluster: Cluster) -> list[Selection]:
        brokers = cluster.eligible_brokers()
        leaders = count_excess({b.broker_id: b.leaders for b in brokers})
        replicas = count_excess({b.broker_id: b.replicas for b in brokers})
        selections = []
        if leaders:
            selections.append(Selection("counts:leaders", "broker_id", leaders, "one",
                                        ("bytes_out ASC",), where="replica_index = 0",
                                        leaders_only=True))
        if replicas:
            selections.append(Selection("counts:replicas", "broker_id", replicas, "one",
                                        ("size_bytes ASC",)))
        return selections

    def start_round(self, cluster: Cluster) -> None:
        def key(d):
            return (cluster.brokers[d.broker_id].replicas, cluster.utilization(d), d.dir_id)
        self.queues = queues_by_media(cluster, key)

    def choose(self, cluster, rep, selection, accept):
        media = cluster.dirs[rep.dir_id].media
        source = cluster.brokers[rep.broker_id].replicas

        def room(to_dir):
            b = cluster.brokers[cluster.dirs[to_dir].broker_id]
            # strictly fewer after the move than the source had: the spread narrows (beyond the
            # limit too: a rack of few brokers may hold more than the limit whatever moves)
            return b.broker_id != rep.broker_id and b.replicas + 1 < source and accept(to_dir)

        return self.queues[media].pick(room)

    def choose_leader(self, cluster, rep, selection, accept):
        source = cluster.brokers[rep.brokers[0]].leaders

        def rank(b):
            if not b.eligible or b.leaders + 1 >= source:
                return None
            return (b.leaders, b.broker_id)
        return least_follower(cluster, rep, accept, rank)

    def guard(self, cluster: Cluster, rep: Replica, to_dir: int) -> bool:
        """Within the limit, or fewer than the source held: a lower goal's
        move never adds to the broker with the most replicas, nor, when the
        replica leads (its leadership moves with it), with the most leaders."""
        b, source = cluster.brokers[cluster.dirs[to_dir].broker_id], cluster.brokers[rep.broker_id]
        if b.broker_id == rep.broker_id:
            return True
        if not (b.replicas + 1 <= self.replica_limit or b.replicas + 1 <= source.replicas - 1):
            return False
        return not rep.leader or b.leaders + 1 <= self.leader_limit or b.leaders + 1 <= source.leaders - 1

    def guard_leader(self, cluster: Cluster, rep: Replica, new_index: int) -> bool:
        leaders = cluster.brokers[rep.brokers[new_index]].leaders + 1
        return leaders <= self.leader_limit or leaders <= cluster.brokers[rep.brokers[0]].leaders - 1
