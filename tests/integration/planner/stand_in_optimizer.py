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


def worsening(spark, snapshot, options):
    """The real optimizer with the disk goal replaced by Concentrate, a goal
    that makes disk balance worse: what the optimizer must detect and
    report as a bug."""
    from kafkactl.planner import optimizer

    real = optimizer.SOFT_GOALS["disk"]
    optimizer.SOFT_GOALS["disk"] = Concentrate
    try:
        return optimizer.optimize(spark, snapshot, options)
    finally:
        optimizer.SOFT_GOALS["disk"] = real


def _concentrate():
    from kafkactl.planner.goals.base import Selection, queues_by_media
    from kafkactl.planner.goals.disk import Disk

    class Concentrate(Disk):
        """TEST ONLY: measured as the disk goal, but moves replicas off the
        less utilized dirs onto the most utilized one that takes them."""

        def selections(self, cluster):
            excess = {}
            for media in sorted({d.media for d in cluster.eligible_dirs()}):
                dirs = sorted((d for d in cluster.eligible_dirs() if d.media == media),
                              key=lambda d: (cluster.utilization(d), d.dir_id))
                excess.update({d.dir_id: d.size_bytes for d in dirs[:-1] if d.size_bytes})
            if not excess:
                return []
            return [Selection("disk", "dir_id", excess, "size_bytes", ("size_bytes DESC",), fit=False)]

        def stuck(self, cluster):
            return False

        def start_round(self, cluster):
            self.queues = queues_by_media(cluster, lambda d: (-cluster.utilization(d), d.dir_id))

        def choose(self, cluster, rep, selection, accept):
            media = cluster.dirs[rep.dir_id].media
            source = cluster.utilization(cluster.dirs[rep.dir_id])
            return self.queues[media].pick(lambda to: cluster.utilization(cluster.dirs[to]) > source and accept(to))

    return Concentrate


Concentrate = _concentrate()
