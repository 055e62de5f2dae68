"""What the planner is asked to do: thresholds, brokers to empty or fill,
goals in priority order, and bounds on movement.

Shared by the snapshot reader, the optimizer and the report; `kafkactl plan`
and the spark-submit entry point build it from their options.
"""

from __future__ import annotations

from dataclasses import dataclass

# Soft goals, highest priority first (issue 5): hot data on SSD, even disk
# utilization per media class, even network in/out, even replica and leader
# counts, each topic spread over brokers.
GOALS = ("hot_on_ssd", "disk", "network", "counts", "topic_spread")


@dataclass(frozen=True)
class PlannerOptions:
    capacity_threshold: float = 0.8            # no log dir above this fraction of its capacity
    network_in_threshold: float = 0.8          # no broker above this fraction of its inbound capacity
    network_out_threshold: float = 0.8         # ... and of its outbound capacity
    exclude_brokers: tuple[int, ...] = ()      # decommission: they end with no replicas
    add_brokers: tuple[int, ...] = ()          # new, empty brokers to fill
    goals: tuple[str, ...] = GOALS             # soft goals in priority order
    disk_tolerance: float = 0.05               # aim: max/mean utilization per media class <= 1 + this
    max_bytes_moved: int | None = None
    max_moves: int | None = None
    throttle_bytes_per_s: int | None = None    # to estimate how long the plan takes
    seed: int = 0                              # the Kafka baseline's random start; same input, same plan
