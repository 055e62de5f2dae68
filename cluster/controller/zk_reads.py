"""What the controller reads from ZooKeeper, and the watches each read leaves.

Moved out of controller.py so that the seeded simulation runs these exact
reads against its fake ZooKeeper (which has ZooKeeper's watch semantics)
instead of re-implementing them: a read that forgets to re-arm its watch, or
re-arms it in a way that can miss a change, is then caught by the
simulation too (issue 12.2: an admin znode created between a getData that
found it missing and the exists that re-armed the watch was never seen).

ZooKeeper watches are one-shot: a getData on an existing znode or an exists
on any path leaves a data watch, a getChildren a child watch; each fires
once, on the next change, and is gone. So every read that should notice
the next change passes a watch, and the event the watch triggers reads
again, which re-arms it. A getData on a missing znode leaves no watch.

`store` is anything with ZkControllerStore's reads (get_many, children,
exists; `watch=` a callback). `watch(event)` returns a new callback that,
when ZooKeeper calls it, queues `event` for the controller's event thread
(it must do nothing else: one thread owns the controller's state); it is
asked once per event (see ControllerReads.watch).
Partition states are read through the caller's `read_partition_states`
(the controller's ZkPort), as they were before the move.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

from kafkactl.cluster.controller.failover import ClusterSnapshot
from kafkactl.cluster.controller.model import TopicPartition
from kafkactl.cluster.zk import codecs, layout
from kafkactl.cluster.zk.codecs import PartitionState

# The events a watch queues: one per kind of change the controller reacts to.
BROKER_CHANGE = "broker-change"
TOPIC_CHANGE = "topic-change"
DELETE_TOPICS = "delete-topics"
REASSIGN = "reassign"
PREFERRED_ELECTION = "preferred-election"
ISR_CHANGE = "isr-change"
CONFIG_CHANGE = "config-change"
LOG_DIR_EVENT = "log-dir-event"

ReadPartitionStates = Callable[[Collection[TopicPartition]], Mapping[TopicPartition, PartitionState | None]]


class AdminZnodeChurn(RuntimeError):
    """An admin znode was created and deleted under every read: the event
    fails loudly (logged by the event thread) rather than losing the write."""


class ControllerReads:
    def __init__(self, store, watch: Callable[[str], Callable]) -> None:
        self.store = store
        self._new_watch = watch
        self._watches: dict[str, Callable] = {}

    def watch(self, event: str) -> Callable:
        """The one callback of `event`, passed to every read that arms it.
        kazoo keeps a set of callbacks per znode and calls each once when
        the znode changes: a new callback per read would pile up on every
        znode that did not change (every topic-change read adds one to every
        topic znode and, when only a topic's data changed, to the children
        watch of /brokers/topics), and the next change would queue the event
        once per read since, each of those events adding as many again: an
        event storm that grows with every topic change (found by the
        simulation once its ZooKeeper kept kazoo's sets of callbacks)."""
        callback = self._watches.get(event)
        if callback is None:
            callback = self._watches[event] = self._new_watch(event)
        return callback

    def cluster(self, epoch: int, epoch_zk_version: int,
                read_partition_states: ReadPartitionStates) -> tuple[ClusterSnapshot, tuple[str, ...]]:
        """Everything a new controller loads, every watch armed; and the ISR
        change and log dir event notifications present now (the states read
        after them, and the full LeaderAndIsr the failover sends, make them
        obsolete)."""
        # Notifications are listed before the states are read: only those are
        # made obsolete by the read (and deleted by the failover). One written
        # after the read fires the watch this listing leaves, and is handled.
        notifications = self.notification_paths() + self.log_dir_event_paths()
        brokers = self.brokers()
        topics = self.topics()
        states = read_partition_states([TopicPartition(t, p) for t, a in topics.items() for p in a.partitions])
        snapshot = ClusterSnapshot(
            controller_epoch=epoch,
            controller_epoch_zk_version=epoch_zk_version,
            brokers=brokers,
            topics=topics,
            partition_states={tp: s for tp, s in states.items() if s is not None},
            topics_to_delete=frozenset(self.topics_to_delete()),
            reassignments=self.reassignments(),
            preferred_election=self.preferred(),
            topic_configs=self.topic_configs(list(topics)),
            isr_change_notifications=notifications,
        )
        self.store.children(layout.CONFIG_CHANGES, watch=self.watch(CONFIG_CHANGE))
        return snapshot, notifications

    def brokers(self) -> dict[int, codecs.BrokerRegistration]:
        ids = [int(i) for i in self.store.children(layout.BROKER_IDS, watch=self.watch(BROKER_CHANGE))
               if i.isdigit()]
        nodes = self.store.get_many([layout.broker(i) for i in ids])
        return {i: codecs.decode_broker(i, nodes[layout.broker(i)][0], nodes[layout.broker(i)][1].czxid)
                for i in ids if nodes[layout.broker(i)] is not None}

    def topics(self) -> dict[str, codecs.TopicAssignment]:
        names = self.store.children(layout.BROKER_TOPICS, watch=self.watch(TOPIC_CHANGE))
        nodes = self.store.get_many([layout.topic(t) for t in names], watch=self.watch(TOPIC_CHANGE))
        return {t: codecs.decode_topic(t, nodes[layout.topic(t)][0]) for t in names if nodes[layout.topic(t)]}

    def topics_to_delete(self) -> list[str]:
        return self.store.children(layout.DELETE_TOPICS, watch=self.watch(DELETE_TOPICS))

    def reassignments(self) -> dict[TopicPartition, tuple[int, ...]]:
        node = self.watched(layout.REASSIGN_PARTITIONS, self.watch(REASSIGN))
        if node is None:
            return {}
        return {TopicPartition(t, p): tuple(r) for (t, p), r in codecs.decode_reassignment(node[0]).items()}

    def preferred(self) -> frozenset[TopicPartition] | None:
        node = self.watched(layout.PREFERRED_REPLICA_ELECTION, self.watch(PREFERRED_ELECTION))
        if node is None:
            return None
        return frozenset(TopicPartition(t, p) for t, p in
                         codecs.decode_partition_list(layout.PREFERRED_REPLICA_ELECTION, node[0]))

    def watched(self, path: str, watch, attempts: int = 5):
        """(data, stat) of an admin znode, or None, with a watch left on it
        either way. A getData on a missing node sets no watch, so the watch
        then goes on an exists; if the node was created between the two (a
        tool writes it and exits), exists finds it and it is read again:
        otherwise that creation would never be seen."""
        for _ in range(attempts):
            node = self.store.get_many([path], watch=watch)[path]
            if node is not None or self.store.exists(path, watch=watch) is None:
                return node
        raise AdminZnodeChurn(f"{path} kept appearing and vanishing over {attempts} reads")

    def topic_configs(self, topics: list[str]) -> dict[str, dict[str, str]]:
        nodes = self.store.get_many([layout.topic_config(t) for t in topics])
        return {t: codecs.decode_entity_config(layout.topic_config(t), nodes[layout.topic_config(t)][0])
                for t in topics if nodes[layout.topic_config(t)] is not None}

    def notification_paths(self) -> tuple[str, ...]:
        children = self.store.children(layout.ISR_CHANGE_NOTIFICATION, watch=self.watch(ISR_CHANGE))
        return tuple(f"{layout.ISR_CHANGE_NOTIFICATION}/{c}" for c in sorted(children))

    def log_dir_event_paths(self) -> tuple[str, ...]:
        children = self.store.children(layout.LOG_DIR_EVENT_NOTIFICATION, watch=self.watch(LOG_DIR_EVENT))
        return tuple(f"{layout.LOG_DIR_EVENT_NOTIFICATION}/{c}" for c in sorted(children))

    def log_dir_events(self) -> tuple[tuple[int, ...], tuple[str, ...]]:
        """The brokers the log dir event notifications name, and every
        notification's path (to delete, a malformed one too)."""
        paths = self.log_dir_event_paths()
        nodes = self.store.get_many(list(paths))
        brokers = []
        for path in paths:
            if nodes[path] is None:
                continue
            try:
                brokers.append(codecs.decode_log_dir_event(path, nodes[path][0]))
            except codecs.ZnodeFormatError:
                continue           # names no broker; deleted with the others
        return tuple(brokers), paths

    def isr_changes(self, read_partition_states: ReadPartitionStates
                    ) -> tuple[Mapping[TopicPartition, PartitionState | None], tuple[str, ...]]:
        """The states of the partitions the notifications name, read after
        the notifications, and the notifications' paths (to delete)."""
        paths = self.notification_paths()
        nodes = self.store.get_many(list(paths))
        changed = set()
        for path in paths:
            if nodes[path] is not None:
                changed.update(TopicPartition(t, p) for t, p in codecs.decode_partition_list(path, nodes[path][0]))
        return read_partition_states(changed), paths

    def config_changes(self, topics: list[str]) -> dict[str, dict[str, str]]:
        """A config change was announced: re-arm, then the topics' configs."""
        self.store.children(layout.CONFIG_CHANGES, watch=self.watch(CONFIG_CHANGE))
        return self.topic_configs(topics)
