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
        controller._read_topics()
    client.change(layout.topic("a"))
    assert controller.events._queue.qsize() == 1


def test_each_kind_of_watch_still_queues_its_own_event():
    client = WatchingClient(topics("a"))
    controller = Controller(1, client, ControllerConfig())
    controller._read_topics()
    controller.store.get_many([layout.topic("a")], watch=controller._watch("reassign", lambda: None))
    client.change(layout.topic("a"))
    names = sorted(controller.events._queue.get_nowait().name for _ in range(2))
    assert names == ["reassign", "topic-change"]
