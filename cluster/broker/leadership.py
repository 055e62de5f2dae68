"""Interim leadership rule, before the controller exists (pure).

A broker that is the first (preferred) replica of a partition leads it when
no state znode exists yet, or the recorded leader is not alive, or the
recorded leader is itself from an earlier incarnation. Each claim bumps the
leader epoch and is written conditionally on the znode's version, so two
brokers can never both believe a claim succeeded. The ISR is the leader
alone: nothing replicates yet, so no one else is in sync.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafkactl.cluster.broker.metadata import MetadataSnapshot
from kafkactl.cluster.zk.codecs import PartitionState


@dataclass(frozen=True, slots=True)
class LeadershipClaim:
    topic: str
    partition: int
    state: PartitionState
    expected_zk_version: int | None   # None: create the state znode


def interim_leadership_claims(
    snapshot: MetadataSnapshot,
    broker_id: int,
    led_this_incarnation: set[tuple[str, int]],
) -> list[LeadershipClaim]:
    if broker_id not in snapshot.brokers:
        return []  # not registered: we must not lead anything
    claims = []
    for name, topic in snapshot.topics.items():
        if name in snapshot.deleting_topics:
            continue
        for partition, replicas in topic.assignment.partitions.items():
            if not replicas or replicas[0] != broker_id:
                continue
            state = topic.states.get(partition)
            if state is None:
                claims.append(LeadershipClaim(name, partition, _state(0, broker_id, snapshot), None))
                continue
            already_ours = state.leader == broker_id and (name, partition) in led_this_incarnation
            leader_alive = state.leader in snapshot.brokers and state.leader != broker_id
            if already_ours or leader_alive:
                continue
            claims.append(LeadershipClaim(
                name, partition, _state(state.leader_epoch + 1, broker_id, snapshot), state.zk_version
            ))
    return claims


def _state(leader_epoch: int, broker_id: int, snapshot: MetadataSnapshot) -> PartitionState:
    return PartitionState(
        leader=broker_id,
        leader_epoch=leader_epoch,
        isr=[broker_id],
        controller_epoch=snapshot.controller_epoch,
    )
