"""The optimizer's goals, one module each (see base.py for what a goal is).

`repair` restores the hard constraints; the soft goals run after it in the
priority order of PlannerOptions.goals, each guarded by those before it.
"""

from .counts import Counts
from .disk import Disk
from .hot_on_ssd import HotOnSsd
from .network import Network
from .repair import Repair
from .topic_spread import TopicSpread

SOFT_GOALS = {goal.name: goal for goal in (HotOnSsd, Disk, Network, Counts, TopicSpread)}

__all__ = ["SOFT_GOALS", "Repair"]
