"""New topics and partitions (seed B and H; Kafka's onNewPartitionCreation),
and topic config changes that matter to elections."""

from __future__ import annotations

from typing import Mapping

from kafkactl.cluster.controller import partition_state_machine as psm
from kafkactl.cluster.controller import replica_state_machine as rsm
from kafkactl.cluster.controller.builder import DecisionBuilder
from kafkactl.cluster.controller.changes import online_or_elect, redo_online_or_elect
from kafkactl.cluster.controller.context import ControllerContext, parse_unclean_override
from kafkactl.cluster.controller.model import Decision, ReplicaAssignment, TopicPartition
from kafkactl.cluster.controller.partition_state_machine import PartitionStateName
from kafkactl.cluster.controller.replica_state_machine import ReplicaStateName
from kafkactl.cluster.zk.codecs import TopicAssignment


def on_topic_change(ctx: ControllerContext, topics: Mapping[str, TopicAssignment]) -> Decision:
    """/brokers/topics or a topic znode changed; `topics` holds the topics
    read (all, or only the new and changed ones). Unknown topics and unknown
    partitions of known topics are created: the first live replica leads and
    the live replicas are the ISR. Changed replicas of existing partitions are
    ignored (that is what a reassignment is for), as are topics being deleted."""
    b = DecisionBuilder(ctx)
    created: list[TopicPartition] = []
    for topic, assignment in sorted(topics.items()):
        if ctx.is_queued_for_deletion(topic):
            continue
        known_id = b.ctx.topic_ids.get(topic, assignment.topic_id)
        if topic in b.ctx.topic_ids and known_id != assignment.topic_id:
            continue                         # a different topic under the same name: not ours to adopt
        b.ctx.topic_ids[topic] = known_id
        for partition, replicas in sorted(assignment.partitions.items()):
            tp = TopicPartition(topic, partition)
            if tp not in b.ctx.assignments and replicas:
                _add_partition(b.ctx, tp, tuple(replicas))
                created.append(tp)
    online_or_elect(b, created)
    return b.decision(retry=redo_online_or_elect)


def _add_partition(ctx: ControllerContext, tp: TopicPartition, replicas: tuple[int, ...]) -> None:
    ctx.assignments[tp] = ReplicaAssignment(replicas)
    psm.transition(ctx.partition_states, tp, PartitionStateName.NEW)
    for replica in ctx.partition_replicas(tp):
        rsm.transition(ctx.replica_states, replica, ReplicaStateName.NEW)


def on_topic_config_change(ctx: ControllerContext, topic: str, config: Mapping[str, str]) -> Decision:
    """/config/topics/<t> changed. Enabling unclean leader election elects the
    topic's offline partitions right away, as Kafka does."""
    b = DecisionBuilder(ctx)
    if topic not in ctx.topic_ids:
        return b.decision()
    override = parse_unclean_override(dict(config))
    if override is None:
        b.ctx.unclean_overrides.pop(topic, None)
    else:
        b.ctx.unclean_overrides[topic] = override
    if b.ctx.unclean_enabled(topic):
        online_or_elect(b, [tp for tp in b.ctx.partitions_without_leader() if tp.topic == topic])
    return b.decision(retry=redo_online_or_elect)
