"""The leadership seam: "became leader" / "stopped leading" per partition,
for whoever loads state with a leadership (the group coordinator, later)."""

from kio.schema.errors import ErrorCode

from support.replication_nodes import (  # noqa: F401  (clock, zk, nodes: fixtures)
    KEY, LAG_MS, TOPIC, clock, control, nodes, shrink, state, zk,
)


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, int, int]] = []

    def on_election(self, topic: str, partition: int, leader_epoch: int) -> None:
        self.events.append(("elected", topic, partition, leader_epoch))

    def on_resignation(self, topic: str, partition: int, leader_epoch: int) -> None:
        self.events.append(("resigned", topic, partition, leader_epoch))


def test_listeners_hear_each_change_of_leadership_once_in_order(nodes):
    node = nodes(1)
    heard = Recorder()
    node.manager.add_leadership_listener(heard)
    control(node, state(1, 0, (1, 2)))
    control(node, state(1, 1, (1, 2)))          # a new epoch, still leader: nothing to load
    control(node, state(2, 2, (2, 1)))          # follows broker 2 now
    control(node, state(2, 3, (2, 1)))          # still following: nothing
    control(node, state(1, 4, (1, 2)))
    assert node.manager.stop_replicas({KEY: 5}, delete=False) == {KEY: ErrorCode.none}
    assert heard.events == [("elected", TOPIC, 0, 0), ("resigned", TOPIC, 0, 2),
                            ("elected", TOPIC, 0, 4), ("resigned", TOPIC, 0, 4)]


def test_a_listener_for_some_topics_hears_only_those_and_a_failing_one_harms_nothing(nodes):
    node = nodes(1)

    class Broken(Recorder):
        def on_election(self, topic, partition, leader_epoch):
            raise RuntimeError("a bug in a listener")

    offsets, broken = Recorder(), Broken()
    node.manager.add_leadership_listener(offsets, topics=["__consumer_offsets"])
    node.manager.add_leadership_listener(broken)
    groups = ("__consumer_offsets", 3)
    assert control(node, state(1, 0, (1, 2)), state(1, 0, (1, 2), key=groups)) == {
        KEY: ErrorCode.none, groups: ErrorCode.none}
    assert offsets.events == [("elected", "__consumer_offsets", 3, 0)]
    assert node.partition().is_leader
    node.manager.stop_replicas({groups: -2}, delete=True)
    assert offsets.events[-1] == ("resigned", "__consumer_offsets", 3, 0)


def test_a_leader_that_finds_a_newer_leader_when_writing_its_isr_resigns(nodes, zk, clock):
    node = nodes(1)
    heard = Recorder()
    node.manager.add_leadership_listener(heard)
    zk.seed(1, 0, (1, 2))
    control(node, state(1, 0, (1, 2)))
    zk.seed(2, 1, (2,), zk_version=1)           # the controller moved on while we were paused
    clock.advance(LAG_MS + 1)
    shrink(node)                                # the ISR writer's thread finds out
    assert not node.partition().is_leader
    assert heard.events == [("elected", TOPIC, 0, 0), ("resigned", TOPIC, 0, 0)]
    control(node, state(2, 1, (2, 1), zk_version=1))   # already not leading: nothing more
    assert heard.events[-1] == ("resigned", TOPIC, 0, 0) and len(heard.events) == 2
