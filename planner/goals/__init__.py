"""The optimizer's goals, one module each (see base.py for what a goal is).

`repair` restores the hard constraints; the soft goals run after it in the
priority order of PlannerOptions.goals, each guarded by those before it.
"""

from kafkactl.planner.goals.counts import Counts
from kafkactl.planner.goals.disk import Disk
from kafkactl.planner.goals.hot_on_ssd import HotOnSsd
from kafkactl.planner.goals.network import Network
from kafkactl.planner.goals.repair import Repair
from kafkactl.planner.goals.topic_spread import TopicSpread

SOFT_GOALS = {goal.name: goal for goal in (HotOnSsd, Disk, Network, Counts, TopicSpread)}

__all__ = ["SOFT_GOALS", "Repair"]
