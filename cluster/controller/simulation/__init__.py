"""A deterministic simulation of the controller (for tests).

Everything runs from one `random.Random(seed)`: a fake ZooKeeper with
ZooKeeper's watch semantics (zookeeper.py), fake brokers (brokers.py), an
admin tool (admin.py), an Admin API client asking the controller for
reassignments, their new targets and cancels (api_admin.py), and the
controller, which may be killed between any two of its writes (most often
while it carries out such a request) and replaced by a new one. The
controller is the real read layer (zk_reads.ControllerReads) and the real
watches on the state znodes of partitions being reassigned
(state_watches.py) over the fake ZooKeeper (client.py), the typed events
(events.py) queued by those watches, the core's decisions carried out by
`execution.execute`, as the real controller does (runner.py). The controller learns of every change in ZooKeeper only
through the watches its reads left, delivered at random later steps.

After every step the simulation checks the core's invariants, ZooKeeper's
content and that no two brokers lead a partition in the same leader epoch;
at the end it heals the cluster and checks that every admin request was
read and all work finished (checks.py), and that every partition the API
client was answered about (or whose request a dead controller had already
written to its topic znode) ended where the request said (api_admin.py).

Replay a seed:  Simulation(seed).run(steps)  (tests/unit/cluster/controller/test_simulation.py)
"""

from kafkactl.cluster.controller.simulation.checks import SimulationFailure
from kafkactl.cluster.controller.simulation.runner import Simulation

__all__ = ["Simulation", "SimulationFailure"]
