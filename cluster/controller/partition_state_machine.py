"""Kafka's partition state machine: the states and the transitions it allows.

NonExistent -> New when a topic or partition is created; New -> Online once a
leader and ISR are written; Online <-> Offline as leaders die and are elected;
Offline -> NonExistent when the topic is deleted. A transition outside this
table is a controller bug, so it raises instead of being logged and skipped.
"""

from __future__ import annotations

from enum import Enum

from kafkactl.cluster.controller.model import TopicPartition
from kafkactl.cluster.invariant import invariant


class PartitionStateName(Enum):
    NON_EXISTENT = "NonExistentPartition"
    NEW = "NewPartition"
    ONLINE = "OnlinePartition"
    OFFLINE = "OfflinePartition"

    # Enum hashes by name in Python code; every dict and set of states and
    # every transition check hashes members, 10,000s of times in a failover.
    # Members are singletons compared by identity, so the identity hash is
    # consistent with equality and costs nothing.
    __hash__ = object.__hash__


_VALID_PREVIOUS: dict[PartitionStateName, frozenset[PartitionStateName]] = {
    PartitionStateName.NEW: frozenset({PartitionStateName.NON_EXISTENT}),
    PartitionStateName.ONLINE: frozenset({
        PartitionStateName.NEW, PartitionStateName.ONLINE, PartitionStateName.OFFLINE,
    }),
    PartitionStateName.OFFLINE: frozenset({
        PartitionStateName.NEW, PartitionStateName.ONLINE, PartitionStateName.OFFLINE,
    }),
    PartitionStateName.NON_EXISTENT: frozenset({PartitionStateName.OFFLINE}),
}


def is_valid_transition(current: PartitionStateName, target: PartitionStateName) -> bool:
    return current in _VALID_PREVIOUS[target]


def current_state(states: dict[TopicPartition, PartitionStateName],
                  tp: TopicPartition) -> PartitionStateName:
    return states.get(tp, PartitionStateName.NON_EXISTENT)


def transition(states: dict[TopicPartition, PartitionStateName], tp: TopicPartition,
               target: PartitionStateName) -> None:
    current = states.get(tp, PartitionStateName.NON_EXISTENT)
    if current not in _VALID_PREVIOUS[target]:
        invariant(False, f"partition {tp}: {current.value} -> {target.value} is not a valid transition")
    if target is PartitionStateName.NON_EXISTENT:
        states.pop(tp, None)   # absent means NonExistent: no tombstones to clean up
    else:
        states[tp] = target
