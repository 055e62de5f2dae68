"""Elections asked of the controller (ElectLeaders, /admin/preferred_replica_election)
decide on the partition states ZooKeeper holds, as Kafka's controller reads
them before electing: a leader's ISR expansion reaches the controller's
context only with its batched notification, and a replica back in the ISR
must be electable at once. The real Controller shell, with a fake port."""

from types import SimpleNamespace

from kio.schema.errors import ErrorCode

from kafkactl.cluster.controller import events as ev
from kafkactl.cluster.controller.context import ControllerConfig
from kafkactl.cluster.controller.controller import Controller
from kafkactl.cluster.controller.model import TopicPartition, UpdatePartitionState
from kafkactl.cluster.controller.testing import FakeZk, make_context, state

T0 = TopicPartition("t", 0)


def controller_with_stale_isr():
    """Broker 2 leads t-0 with ISR [2, 3] in the context; ZooKeeper already
    has broker 1, the preferred replica, back in the ISR."""
    controller = Controller(1, SimpleNamespace(), ControllerConfig())
    controller.context = make_context(topics={"t": {0: [1, 2, 3]}}, states={("t", 0): state(2, [2, 3])})
    controller._port = FakeZk(controller.context)
    controller._port.states[T0] = state(2, [2, 3, 1], zk_version=8)
    controller.channel = SimpleNamespace(brokers=lambda: [], add_broker=lambda endpoint: None,
                                         remove_broker=lambda broker_id: None,
                                         send=lambda *args, **kwargs: None)
    return controller


def elected_leaders(controller) -> list[int]:
    return [w.state.leader for w in controller._port.applied if isinstance(w, UpdatePartitionState)]


def test_elect_leaders_preferred_takes_the_isr_zookeeper_has():
    controller = controller_with_stale_isr()
    answers = []
    controller.process(ev.ApiElectLeaders(answers.append, (T0,), False))
    assert answers == [{T0: (ErrorCode.none, None, 1)}]
    assert elected_leaders(controller) == [1]
    assert controller.context.leadership[T0].leader == 1


def test_the_preferred_election_znode_takes_the_isr_zookeeper_has():
    controller = controller_with_stale_isr()
    controller.reads = SimpleNamespace(preferred=lambda: frozenset({T0}))
    controller._on_preferred(ev.PreferredReplicaElection())
    assert elected_leaders(controller)[0] == 1
