"""Topic administration over ZooKeeper, in Apache Kafka's layout.

Used by the broker (auto-creation) and by `kafkactl topics`. Creation writes
`/config/topics/<t>` and `/brokers/topics/<t>` in one multi, so a failed or
interrupted create leaves nothing behind. Reads are pipelined asynchronous
gets, never one znode at a time.
"""

from __future__ import annotations

from dataclasses import dataclass

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from kafkactl.cluster.zk import codecs, layout, multi_read
from kafkactl.cluster.zk.client import wait

ZK_TIMEOUT_S = 10.0


class TopicExistsError(RuntimeError):
    pass


class TopicNotFoundError(LookupError):
    pass


class ConcurrentChangeError(RuntimeError):
    """A znode changed between our read and our conditional write."""


DEFAULT_MIN_INSYNC_REPLICAS = 1
DEFAULT_BROKER_CONFIG = "<default>"    # /config/brokers/<default>: cluster-wide dynamic defaults


def create_topic(client, topic: str, assignment: dict[int, list[int]], config: dict[str, str],
                 timeout_s: float = ZK_TIMEOUT_S) -> str:
    """Write the topic's config and assignment atomically; returns the topic id."""
    topic_id = codecs.new_topic_id()
    # Brokers create these at start-up; a ZooKeeper no broker has used yet lacks them.
    for parent in ("/config/topics", layout.BROKER_TOPICS):
        wait(client.ensure_path_async(parent), timeout_s)
    transaction = client.transaction()
    config_exists = wait(client.exists_async(layout.topic_config(topic)), timeout_s) is not None
    if config_exists:
        transaction.set_data(layout.topic_config(topic), codecs.encode_entity_config(config))
    else:
        transaction.create(layout.topic_config(topic), codecs.encode_entity_config(config))
    transaction.create(layout.topic(topic), codecs.encode_topic(codecs.TopicAssignment(assignment, topic_id)))
    results = wait(transaction.commit_async(), timeout_s)
    failures = [r for r in results if isinstance(r, Exception)]
    if any(isinstance(f, NodeExistsError) for f in failures):
        raise TopicExistsError(f"topic {topic!r} already exists")
    if failures:
        raise failures[0]
    return topic_id


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    topic: str
    partition: int
    replicas: list[int]
    leader: int
    leader_epoch: int
    isr: list[int]
    isr_changed_ms: int = 0      # the state znode's mtime: when leader or ISR last changed
    state_zk_version: int = -1   # the state znode's version (the partition epoch)

    def to_dict(self) -> dict:
        return {"topic": self.topic, "partition": self.partition, "leader": self.leader,
                "leader_epoch": self.leader_epoch, "replicas": self.replicas, "isr": self.isr}


def list_topics(client, timeout_s: float = ZK_TIMEOUT_S) -> list[str]:
    try:
        return sorted(wait(client.get_children_async(layout.BROKER_TOPICS), timeout_s))
    except NoNodeError:
        return []


def read_nodes(client, paths: list[str], timeout_s: float) -> list:
    """(data, stat) per path, None for a missing znode: few multiRead requests
    instead of one request per znode (see cluster/zk/multi_read.py)."""
    nodes = []
    for result in multi_read.get_many(client, paths, timeout_s):
        if isinstance(result, NoNodeError):
            nodes.append(None)
        elif isinstance(result, Exception):
            raise result
        else:
            nodes.append(result)
    return nodes


def describe_topics(client, topics: list[str], timeout_s: float = ZK_TIMEOUT_S) -> dict[str, list[PartitionInfo] | None]:
    """Per topic its partitions (None for a topic that does not exist)."""
    topic_nodes = dict(zip(topics, read_nodes(client, [layout.topic(t) for t in topics], timeout_s)))
    assignments = {topic: None if node is None else codecs.decode_topic(topic, node[0])
                   for topic, node in topic_nodes.items()}
    keys = [(t, p) for t, a in assignments.items() if a is not None for p in a.partitions]
    state_nodes = dict(zip(keys, read_nodes(client, [layout.partition_state(t, p) for t, p in keys], timeout_s)))
    described: dict[str, list[PartitionInfo] | None] = {}
    for topic, assignment in assignments.items():
        if assignment is None:
            described[topic] = None
            continue
        described[topic] = [_partition_info(topic, p, replicas, state_nodes[(topic, p)])
                            for p, replicas in sorted(assignment.partitions.items())]
    return described


def _partition_info(topic, partition, replicas, node) -> PartitionInfo:
    if node is None:
        return PartitionInfo(topic, partition, replicas, -1, -1, [])
    data, stat = node
    state = codecs.decode_partition_state(layout.partition_state(topic, partition), data, stat.version)
    return PartitionInfo(topic, partition, replicas, state.leader, state.leader_epoch, state.isr,
                         stat.mtime, stat.version)


def live_brokers(client, timeout_s: float = ZK_TIMEOUT_S) -> list[codecs.BrokerRegistration]:
    ids = [int(i) for i in wait(client.get_children_async(layout.BROKER_IDS), timeout_s) if i.isdigit()]
    results = {i: client.get_async(layout.broker(i)) for i in ids}
    brokers = []
    for broker_id, result in sorted(results.items()):
        try:
            data, stat = wait(result, timeout_s)
        except NoNodeError:
            continue  # went away meanwhile
        brokers.append(codecs.decode_broker(broker_id, data, stat.czxid))
    return brokers


def read_assignment(client, topic: str, timeout_s: float = ZK_TIMEOUT_S) -> tuple[codecs.TopicAssignment, int]:
    """The topic's assignment znode and its zk_version (for a conditional write)."""
    try:
        data, stat = wait(client.get_async(layout.topic(topic)), timeout_s)
    except NoNodeError:
        raise TopicNotFoundError(f"topic {topic!r} does not exist") from None
    return codecs.decode_topic(topic, data), stat.version


def write_assignment(client, topic: str, assignment: codecs.TopicAssignment, zk_version: int,
                     timeout_s: float = ZK_TIMEOUT_S) -> None:
    """Replace the topic's assignment iff the znode is still at `zk_version`.

    The controller notices the new partitions through its watch on the
    topic znode and creates their state, as for Kafka's AdminZkClient."""
    try:
        wait(client.set_async(layout.topic(topic), codecs.encode_topic(assignment), zk_version), timeout_s)
    except BadVersionError:
        raise ConcurrentChangeError(
            f"topic {topic!r} changed while this command ran (e.g. a reassignment); run it again") from None
    except NoNodeError:
        raise TopicNotFoundError(f"topic {topic!r} was deleted while this command ran") from None


def marked_for_deletion(client, timeout_s: float = ZK_TIMEOUT_S) -> list[str]:
    try:
        return sorted(wait(client.get_children_async(layout.DELETE_TOPICS), timeout_s))
    except NoNodeError:
        return []


def mark_for_deletion(client, topics: list[str], timeout_s: float = ZK_TIMEOUT_S) -> None:
    """Create /admin/delete_topics/<t> for every topic, in one multi: the
    controller then deletes them (Kafka's AdminZkClient.deleteTopic)."""
    if not topics:
        return
    wait(client.ensure_path_async(layout.DELETE_TOPICS), timeout_s)
    transaction = client.transaction()
    for topic in topics:
        transaction.create(layout.delete_topic(topic), b"")
    results = wait(transaction.commit_async(), timeout_s)
    failures = [r for r in results if isinstance(r, Exception)]
    if failures:
        raise failures[0]


def min_insync_replicas(client, topics: list[str], timeout_s: float = ZK_TIMEOUT_S) -> dict[str, int]:
    """Each topic's effective min.insync.replicas: its /config/topics override,
    else the cluster-wide dynamic default, else Kafka's default (1)."""
    default = _config_value(client.get_async(layout.entity_config("brokers", DEFAULT_BROKER_CONFIG)),
                            layout.entity_config("brokers", DEFAULT_BROKER_CONFIG), timeout_s)
    fallback = default if default is not None else DEFAULT_MIN_INSYNC_REPLICAS
    results = {t: client.get_async(layout.topic_config(t)) for t in topics}
    effective = {}
    for topic, result in results.items():
        value = _config_value(result, layout.topic_config(topic), timeout_s)
        effective[topic] = value if value is not None else fallback
    return effective


def _config_value(result, path: str, timeout_s: float, key: str = "min.insync.replicas") -> int | None:
    try:
        data, _ = wait(result, timeout_s)
    except NoNodeError:
        return None
    raw = codecs.decode_entity_config(path, data).get(key)
    try:
        return int(raw) if raw is not None else None
    except ValueError:
        return None  # Kafka would have refused it; ignore as the broker does
