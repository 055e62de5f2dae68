"""The simulation's admin tool: creates, grows, deletes and reassigns topics,
asks for preferred replica elections and changes topic configs.

Like Kafka's tools it only writes ZooKeeper and exits: the controller
learns of each write only through the watches its reads left (never from
the simulation calling it), so a read that fails to re-arm a watch leaves
the admin's request undone, which the final checks catch.
"""

from __future__ import annotations

from kafkactl.cluster.admin.replica_assignment import AssignmentError, BrokerInfo, assign_replicas
from kafkactl.cluster.controller.model import TopicPartition
from kafkactl.cluster.zk import codecs, layout
from kafkactl.cluster.zk.codecs import TopicAssignment

TOPIC_NAMES = ("t0", "t1", "t2", "t3")


class AdminActions:
    """The admin's part of `Simulation` (a mixin: it shares its state)."""

    def admin_create(self, path: str) -> bool:
        """The admin writes `path` now if it would (another client racing the controller's reads)."""
        before = self.zk.get(path)
        if path == layout.REASSIGN_PARTITIONS:
            self.reassign()
        elif path == layout.PREFERRED_REPLICA_ELECTION:
            self.preferred_election()
        return before is None and self.zk.get(path) is not None

    def _registered_brokers(self) -> list[BrokerInfo]:
        return [BrokerInfo(int(c)) for c in self.zk.children(layout.BROKER_IDS)]

    def _live_topics(self) -> list[str]:
        return [t for t in self.zk.children(layout.BROKER_TOPICS) if self.zk.get(layout.topic(t))]

    def create_topic(self) -> None:
        free = [t for t in TOPIC_NAMES
                if not self.zk.get(layout.topic(t)) and not self.zk.get(layout.delete_topic(t))]
        brokers = self._registered_brokers()
        if not free or not brokers:
            return
        topic = self.rng.choice(free)
        try:
            partitions = assign_replicas(brokers, self.rng.randint(1, 3),
                                         self.rng.randint(1, min(3, len(brokers))), rng=self.rng)
        except AssignmentError:
            return
        self.zk.create(layout.topic(topic), codecs.encode_topic(
            TopicAssignment(partitions, topic_id=f"id-{topic}-{self.zk.zxid}")))

    def add_partition(self) -> None:
        topics = [t for t in self._live_topics() if not self.zk.get(layout.delete_topic(t))]
        brokers = self._registered_brokers()
        if not topics or not brokers:
            return
        topic = self.rng.choice(topics)
        current = self.topic(topic)
        if self.zk.get(layout.REASSIGN_PARTITIONS):
            return                       # Kafka's tool refuses while partitions move
        if current.adding_replicas or current.removing_replicas or len(current.partitions) >= 4:
            return
        factor = len(next(iter(current.partitions.values())))
        if factor > len(brokers):
            return
        added = assign_replicas(brokers, 1, factor, start_partition=len(current.partitions), rng=self.rng)
        partitions = {**current.partitions, **added}
        self.zk.set(layout.topic(topic), codecs.encode_topic(
            TopicAssignment(partitions, current.topic_id, current.adding_replicas, current.removing_replicas)))

    def delete_topic(self) -> None:
        topics = [t for t in self._live_topics() if not self.zk.get(layout.delete_topic(t))]
        if not topics:
            return
        self.zk.create(layout.delete_topic(self.rng.choice(topics)))

    def reassign(self) -> None:
        if self.zk.get(layout.REASSIGN_PARTITIONS):
            return
        brokers = [b.broker_id for b in self._registered_brokers()]
        partitions = [TopicPartition(t, p) for t in self._live_topics() for p in self.topic(t).partitions]
        if not partitions or not brokers:
            return
        targets = {}
        for tp in self.rng.sample(partitions, min(len(partitions), self.rng.randint(1, 3))):
            size = self.rng.randint(1, min(3, len(brokers)))
            targets[(tp.topic, tp.partition)] = self.rng.sample(brokers, size)
        self.zk.create(layout.REASSIGN_PARTITIONS, codecs.encode_reassignment(targets))
        self.forget_requested(TopicPartition(*key) for key in targets)

    def preferred_election(self) -> None:
        if self.zk.get(layout.PREFERRED_REPLICA_ELECTION):
            return
        partitions = [(t, p) for t in self._live_topics() for p in self.topic(t).partitions]
        if not partitions:
            return
        chosen = self.rng.sample(partitions, min(len(partitions), self.rng.randint(1, 4)))
        self.zk.create(layout.PREFERRED_REPLICA_ELECTION, codecs.encode_partition_list(chosen))

    def toggle_unclean(self) -> None:
        """As Kafka's tool changes a topic config: the config znode, then a
        change notification (the controller watches the notifications)."""
        topics = self._live_topics()
        if not topics:
            return
        topic = self.rng.choice(topics)
        data = codecs.encode_entity_config({"unclean.leader.election.enable": self.rng.choice(("true", "false"))})
        path = layout.topic_config(topic)
        if self.zk.get(path):
            self.zk.set(path, data)
        else:
            self.zk.create(path, data)
        self.zk.create_sequential(layout.CONFIG_CHANGE_PREFIX, codecs.encode_config_change(f"topics/{topic}"))
