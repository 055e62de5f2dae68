"""Topic auto-creation: wishes recorded on request threads, created by the
zk-agent's thread (cluster/broker/topic_auto_creation.py's rules)."""

from kio.schema.errors import ErrorCode

from kafkactl.cluster.admin.replica_assignment import AssignmentError
from kafkactl.cluster.broker import topic_auto_creation
from kafkactl.cluster.broker.topic_auto_creation import TopicAutoCreator, Wish


class Recorder:
    def __init__(self, refuse: frozenset[str] = frozenset(), existing: frozenset[str] = frozenset()) -> None:
        self.created: list[tuple[str, int, int]] = []
        self.wakes = 0
        self.refuse = refuse
        self.existing = existing

    def create(self, topic: str, partitions: int, replication_factor: int, config: dict[str, str]) -> bool:
        if topic in self.refuse:
            raise AssignmentError(f"replication factor {replication_factor} larger than the 1 brokers")
        self.created.append((topic, partitions, replication_factor) + ((config,) if config else ()))
        return topic not in self.existing

    def wake(self) -> None:
        self.wakes += 1


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_wish_answers_leader_not_available_and_is_created_later_on_the_agent_thread():
    recorder = Recorder()
    creator = TopicAutoCreator(recorder.create, recorder.wake)
    assert creator.request(Wish("a", 3, 2)) == ErrorCode.leader_not_available
    assert recorder.created == [] and recorder.wakes == 1
    creator.create_pending()
    assert recorder.created == [("a", 3, 2)]
    assert creator.pending() == 0


def test_the_same_topic_is_wished_once_while_it_waits():
    recorder = Recorder()
    creator = TopicAutoCreator(recorder.create, recorder.wake)
    for _ in range(3):
        creator.request(Wish("a", 1, 1))
    assert recorder.wakes == 1 and creator.pending() == 1
    creator.create_pending()
    assert recorder.created == [("a", 1, 1)]


def test_wishes_beyond_the_bound_are_dropped_but_still_answered(monkeypatch):
    monkeypatch.setattr(topic_auto_creation, "MAX_PENDING", 2)
    recorder = Recorder()
    creator = TopicAutoCreator(recorder.create, recorder.wake)
    answers = [creator.request(Wish(name, 1, 1)) for name in ("a", "b", "c")]
    assert answers == [ErrorCode.leader_not_available] * 3
    creator.create_pending()
    assert [c[0] for c in recorder.created] == ["a", "b"]
    creator.request(Wish("c", 1, 1))      # asked again: room now
    creator.create_pending()
    assert [c[0] for c in recorder.created] == ["a", "b", "c"]


def test_an_impossible_creation_answers_invalid_replication_factor_for_a_while():
    clock = Clock()
    recorder = Recorder(refuse=frozenset({"big"}))
    creator = TopicAutoCreator(recorder.create, recorder.wake, monotonic=clock)
    assert creator.request(Wish("big", 1, 3)) == ErrorCode.leader_not_available
    creator.create_pending()
    assert creator.request(Wish("big", 1, 3)) == ErrorCode.invalid_replication_factor
    assert creator.pending() == 0
    clock.now += topic_auto_creation.FAILURE_MEMORY_S + 0.1
    assert creator.request(Wish("big", 1, 3)) == ErrorCode.leader_not_available
    assert creator.pending() == 1


def test_a_topic_made_meanwhile_by_someone_else_is_no_error():
    recorder = Recorder(existing=frozenset({"a"}))
    creator = TopicAutoCreator(recorder.create, recorder.wake)
    creator.request(Wish("a", 1, 1))
    creator.create_pending()
    assert creator.request(Wish("a", 1, 1)) == ErrorCode.leader_not_available


def test_the_offsets_topic_is_wished_with_its_own_partitions_replicas_and_compaction():
    from kafkactl.cluster.broker.config import BrokerConfig
    from kafkactl.cluster.coordinator.offsets_topic import offsets_topic_wish
    recorder = Recorder()
    creator = TopicAutoCreator(recorder.create, recorder.wake)
    config = BrokerConfig(broker_id=1, zookeeper_connect="zk", listeners=(), advertised_listeners=(), log_dirs=("/d",))
    creator.request(offsets_topic_wish(config))
    creator.create_pending()
    [(topic, partitions, replicas, topic_config)] = recorder.created
    assert (topic, partitions, replicas) == ("__consumer_offsets", 50, 3)
    assert topic_config["cleanup.policy"] == "compact"
    assert topic_config["segment.bytes"] == str(100 * 1024 * 1024)
