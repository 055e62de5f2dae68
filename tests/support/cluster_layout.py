"""A cluster written into a (fake) ZooKeeper the way Kafka writes it: broker
registrations, topic assignments and partition states, through the
project's own codecs. For tests of commands that read ZooKeeper."""

from __future__ import annotations

from kafkactl.cluster.zk import codecs, layout


def register_brokers(zookeeper, ids=(1, 2, 3), host: str = "h", base_port: int = 9000) -> None:
    """/brokers/ids/<id> for each id, listening on host:base_port+id."""
    for broker_id in ids:
        registration = codecs.BrokerRegistration(broker_id, host, base_port + broker_id,
                                                 (f"PLAINTEXT://{host}:{base_port + broker_id}",))
        zookeeper.create(layout.broker(broker_id), codecs.encode_broker(registration), makepath=True)


def write_topic(zookeeper, name: str, leaders: dict[int, int]) -> None:
    """Topic `name` with one replica per partition, on its leader ({partition: leader})."""
    assignment = codecs.TopicAssignment({p: [leader] for p, leader in leaders.items()}, codecs.new_topic_id())
    zookeeper.create(layout.topic(name), codecs.encode_topic(assignment), makepath=True)
    for partition, leader in leaders.items():
        state = codecs.PartitionState(leader, 1, [leader], 1)
        zookeeper.create(layout.partition_state(name, partition), codecs.encode_partition_state(state), makepath=True)
