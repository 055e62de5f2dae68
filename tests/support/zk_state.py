"""ZooKeeper state of a cluster under test, read (and admin requests written)
as Kafka's layout has them: assignments, partition states, the controller,
registered brokers.

`ZkStateReads` is a mixin: the class using it provides `self.zk`, a started
kazoo client. Every call is bounded by ZK_TIMEOUT_S, so a test never hangs
on a ZooKeeper that stopped answering.
"""

from __future__ import annotations

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from kafkactl.cluster.zk import codecs, layout
from kafkactl.cluster.zk.client import wait

ZK_TIMEOUT_S = 5.0


class ZkStateReads:
    zk: KazooClient   # started, and set by the class mixing this in

    def assignment(self, topic: str) -> codecs.TopicAssignment:
        data, _ = wait(self.zk.get_async(layout.topic(topic)), ZK_TIMEOUT_S)
        return codecs.decode_topic(topic, data)

    def state(self, topic: str, partition: int) -> codecs.PartitionState | None:
        path = layout.partition_state(topic, partition)
        try:
            data, stat = wait(self.zk.get_async(path), ZK_TIMEOUT_S)
        except NoNodeError:
            return None
        return codecs.decode_partition_state(path, data, stat.version)

    def states(self, topic: str) -> dict[int, codecs.PartitionState | None]:
        return {p: self.state(topic, p) for p in sorted(self.assignment(topic).partitions)}

    def leader(self, topic: str, partition: int) -> int:
        state = self.state(topic, partition)
        return state.leader if state is not None else -1

    def controller(self) -> int | None:
        try:
            data, _ = wait(self.zk.get_async(layout.CONTROLLER), ZK_TIMEOUT_S)
        except NoNodeError:
            return None
        return codecs.decode_controller(data)

    def controller_epoch(self) -> int:
        data, _ = wait(self.zk.get_async(layout.CONTROLLER_EPOCH), ZK_TIMEOUT_S)
        return codecs.decode_controller_epoch(data)

    def registered(self) -> set[int]:
        children = wait(self.zk.get_children_async(layout.BROKER_IDS), ZK_TIMEOUT_S)
        return {int(c) for c in children if c.isdigit()}

    def exists(self, path: str) -> bool:
        return wait(self.zk.exists_async(path), ZK_TIMEOUT_S) is not None

    def describe(self, topic: str) -> str:
        """Assignment and leader/ISR of every partition, for failure messages."""
        try:
            assignment = self.assignment(topic)
            lines = [f"controller {self.controller()}, registered {sorted(self.registered())}, "
                     f"adding {assignment.adding_replicas}, removing {assignment.removing_replicas}"]
            for p, replicas in sorted(assignment.partitions.items()):
                s = self.state(topic, p)
                lines.append(f"  {topic}-{p} replicas {replicas} " + (
                    f"leader {s.leader} epoch {s.leader_epoch} isr {s.isr} zkVersion {s.zk_version}"
                    if s else "no state"))
            return "\n".join(lines)
        except Exception as error:
            return f"(cannot describe {topic}: {error})"

    # -- ZooKeeper admin triggers, as Kafka's tools write them

    def request_reassignment(self, targets: dict[tuple[str, int], list[int]]) -> None:
        wait(self.zk.create_async(layout.REASSIGN_PARTITIONS, codecs.encode_reassignment(targets)),
             ZK_TIMEOUT_S)

    def request_preferred_election(self, partitions: list[tuple[str, int]]) -> None:
        wait(self.zk.create_async(layout.PREFERRED_REPLICA_ELECTION,
                                  codecs.encode_partition_list(partitions)), ZK_TIMEOUT_S)


def leaders(cluster: ZkStateReads, topic: str) -> dict[int, int]:
    """Partition -> leader written in ZooKeeper (-1: none or no state)."""
    return {p: (s.leader if s is not None else -1) for p, s in cluster.states(topic).items()}


def preferred_leaders(cluster: ZkStateReads, topic: str) -> dict[int, int]:
    """Partition -> its preferred replica (the first of its assignment)."""
    return {p: replicas[0] for p, replicas in cluster.assignment(topic).partitions.items()}
