"""One znode change is one controller event, however often the controller
re-read the znode before it changed (issue 12.2).

kazoo keeps each path's watchers in a set and fires all of them on a change.
The controller re-reads every topic znode (with its watch) on every topic
change; a new watcher object per read piled up on the znodes that did not
change, and their next change fired them all: a storm of topic-change events
(each reading every topic again and piling up more) that left admin events
waiting behind it for seconds, then minutes, and dropped them once the queue
was full.
"""

from collections import defaultdict

from kafkactl.cluster.controller import zk_reads
from kafkactl.cluster.controller.context import ControllerConfig
from kafkactl.cluster.controller.controller import Controller
from kafkactl.cluster.zk import codecs, layout


class Done:
    """An async result that is already there."""

    def __init__(self, value=None, error=None):
        self.value, self.error = value, error

    def get(self, timeout=None):
        if self.error is not None:
            raise self.error
        return self.value


class Stat:
    czxid = 1
    version = 0


class WatchingClient:
    """The part of kazoo's client the controller reads with: watchers kept per
    path in sets, popped and all called when the znode changes."""

    def __init__(self, znodes):
        self.znodes = dict(znodes)
        self.data_watchers = defaultdict(set)
        self.child_watchers = defaultdict(set)

    def get_async(self, path, watch=None):
        if watch is not None:
            self.data_watchers[path].add(watch)
        return Done((self.znodes[path], Stat()))

    def get_children_async(self, path, watch=None):
        if watch is not None:
            self.child_watchers[path].add(watch)
        prefix = path.rstrip("/") + "/"
        return Done(sorted({p[len(prefix):].split("/")[0] for p in self.znodes if p.startswith(prefix)}))

    def change(self, path):
        for watcher in self.data_watchers.pop(path, set()):
            watcher(None)


def topics(*names):
    return {layout.topic(t): codecs.encode_topic(codecs.TopicAssignment({0: [1]}, topic_id=f"id-{t}"))
            for t in names}


def test_a_topic_znode_read_many_times_fires_one_event_when_it_changes():
    client = WatchingClient(topics("a", "b"))
    controller = Controller(1, client, ControllerConfig())
    for _ in range(5):          # five topic changes elsewhere, each reading every topic again
        controller.reads.topics()
    client.change(layout.topic("a"))
    assert len(controller.events.queued()) == 1


def test_each_kind_of_watch_still_queues_its_own_event():
    client = WatchingClient(topics("a"))
    controller = Controller(1, client, ControllerConfig())
    controller.reads.topics()
    controller.store.get_many([layout.topic("a")], watch=controller._watch_event(zk_reads.REASSIGN))
    client.change(layout.topic("a"))
    names = sorted(event.name for event in controller.events.queued())
    assert names == ["PartitionReassignment", "TopicChange"]


# --- a new controller's snapshot and the ISR change notifications it deletes

class WrittenBetweenReads(WatchingClient):
    """A leader expands the ISR (state znode, then a notification) right after
    the controller read the partition's state: what a failover may meet."""

    def __init__(self, znodes, state_path, expanded):
        super().__init__(znodes)
        self.state_path, self.expanded = state_path, expanded

    def get_async(self, path, watch=None):
        if path not in self.znodes:
            from kazoo.exceptions import NoNodeError
            return Done(error=NoNodeError())
        result = super().get_async(path, watch)
        if path == self.state_path and self.expanded is not None:
            self.znodes[path], self.expanded = self.expanded, None
            self.znodes[layout.ISR_CHANGE_PREFIX + "0000000001"] = b"{}"
        return result

    def exists_async(self, path, watch=None):
        return Done(Stat() if path in self.znodes else None)


def test_failover_never_deletes_a_notification_of_an_isr_change_its_snapshot_missed():
    from kafkactl.cluster.controller.model import TopicPartition
    from kafkactl.cluster.controller.zk_port import ZkPort

    state_path = layout.partition_state("t", 0)
    state = lambda isr: codecs.encode_partition_state(codecs.PartitionState(1, 5, isr, 1))  # noqa: E731
    broker = codecs.encode_broker(codecs.BrokerRegistration(1, "h", 9092, ("PLAINTEXT://h:9092",)))
    client = WrittenBetweenReads({**topics("t"), state_path: state([1]), layout.broker(1): broker,
                                  layout.broker(2): broker.replace(b"9092", b"9093")},
                                 state_path, expanded=state([1, 2]))
    controller = Controller(1, client, ControllerConfig())
    controller._port = ZkPort(controller.store, 1)
    snapshot, to_delete = controller.reads.cluster(1, 1, controller._port.read_partition_states)
    missed = snapshot.partition_states[TopicPartition("t", 0)].isr == [1]
    assert not (missed and to_delete), (
        f"the snapshot has ISR [1] but the notification of [1, 2] is deleted as obsolete: {to_delete}")
