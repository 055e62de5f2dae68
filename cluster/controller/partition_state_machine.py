"""Kafka's partition state machine: the states and the transitions it allows.

NonExistent -> New when a topic or partition is created; New -> Online once a
leader and ISR are written; Online <-> Offline as leaders die and are elected;
Offline -> NonExistent when the topic is deleted. A transition outside this
table is a controller bug, so it raises instead of being logged and skipped.
"""

from __future__ import annotations

from enum import Enum

from kafkactl.cluster.controller.model import TopicPartition
from kafkactl.cluster.state_table import TransitionTable


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


_S = PartitionStateName
TRANSITIONS: TransitionTable[PartitionStateName] = TransitionTable("partition", {
    _S.NEW: {_S.NON_EXISTENT},
    _S.ONLINE: {_S.NEW, _S.ONLINE, _S.OFFLINE},
    _S.OFFLINE: {_S.NEW, _S.ONLINE, _S.OFFLINE},
    _S.NON_EXISTENT: {_S.OFFLINE},
})


def is_valid_transition(current: PartitionStateName, target: PartitionStateName) -> bool:
    return TRANSITIONS.allows(current, target)


def current_state(states: dict[TopicPartition, PartitionStateName],
                  tp: TopicPartition) -> PartitionStateName:
    return states.get(tp, PartitionStateName.NON_EXISTENT)


def transition(states: dict[TopicPartition, PartitionStateName], tp: TopicPartition,
               target: PartitionStateName) -> None:
    current = states.get(tp, PartitionStateName.NON_EXISTENT)
    TRANSITIONS.check(tp, current, target)
    if target is PartitionStateName.NON_EXISTENT:
        states.pop(tp, None)   # absent means NonExistent: no tombstones to clean up
    else:
        states[tp] = target
