"""What the optimizer returns (see planner/optimizer.py)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Proposal:
    """The proposed assignment, or why there is none.

    assignment: a DataFrame with the columns of the snapshot's `partitions`
      (topic, partition, replicas, leader = replicas[0], log_dirs, size_bytes,
      bytes_in_per_s, bytes_out_per_s), one row per partition.
    unsatisfied: hard constraints that cannot be met, each with why; when
      not empty, no plan is written.
    rounds: how many rounds of moves the optimizer ran (for the report).
    goals: per goal, in priority order, what it reached (the optimizer's
      goal reports, as dicts; see planner/goals/status.py).
    """

    assignment: object          # pyspark DataFrame
    unsatisfied: list[str] = field(default_factory=list)
    rounds: int = 0
    goals: list[dict] = field(default_factory=list)
