"""TEST ONLY: a stand-in for kafkactl.planner.optimizer.optimize while the real
optimizer is built elsewhere. It proposes Kafka's default assignment (the
report's baseline), which is deterministic and meets the hard constraints on
the named fixtures that are feasible. Tests use it through monkeypatching or
the job's KAFKACTL_PLANNER_OPTIMIZER hook, never as the real thing."""

from kafkactl.planner.baseline import kafka_assignment
from kafkactl.planner.proposal import Proposal


def optimize(spark, snapshot, options):
    return Proposal(kafka_assignment(snapshot, options), [], 1)


def identity(spark, snapshot, options):
    """Proposes the current assignment unchanged."""
    return Proposal(snapshot.partitions, [], 0)
