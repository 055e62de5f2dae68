"""Kafka's replica state machine: the states of one partition's replica on
one broker, and the transitions it allows.

NewReplica when assigned (new partition, or added by a reassignment);
OnlineReplica once it is part of a partition with a leader; OfflineReplica
when its broker dies or shuts down. Deletion (of a topic, or of a replica a
reassignment removed) goes Offline -> ReplicaDeletionStarted (StopReplica
with delete sent) -> ReplicaDeletionSuccessful (the broker said so) ->
NonExistentReplica; a replica that cannot be deleted now (its broker is down,
or it answered with an error) is ReplicaDeletionIneligible until retried.
"""

from __future__ import annotations

from enum import Enum

from kafkactl.cluster.controller.model import PartitionReplica
from kafkactl.cluster.state_table import TransitionTable


class ReplicaStateName(Enum):
    NON_EXISTENT = "NonExistentReplica"
    NEW = "NewReplica"
    ONLINE = "OnlineReplica"
    OFFLINE = "OfflineReplica"
    DELETION_STARTED = "ReplicaDeletionStarted"
    DELETION_SUCCESSFUL = "ReplicaDeletionSuccessful"
    DELETION_INELIGIBLE = "ReplicaDeletionIneligible"

    # Enum hashes by name in Python code; every dict and set of states and
    # every transition check hashes members, 10,000s of times in a failover.
    # Members are singletons compared by identity, so the identity hash is
    # consistent with equality and costs nothing.
    __hash__ = object.__hash__


_S = ReplicaStateName
TRANSITIONS: TransitionTable[ReplicaStateName] = TransitionTable("replica", {
    _S.NEW: {_S.NON_EXISTENT},
    _S.ONLINE: {_S.NEW, _S.ONLINE, _S.OFFLINE, _S.DELETION_INELIGIBLE},
    _S.OFFLINE: {_S.NEW, _S.ONLINE, _S.OFFLINE, _S.DELETION_INELIGIBLE},
    _S.DELETION_STARTED: {_S.OFFLINE},
    _S.DELETION_SUCCESSFUL: {_S.DELETION_STARTED},
    _S.DELETION_INELIGIBLE: {_S.OFFLINE, _S.DELETION_STARTED},
    _S.NON_EXISTENT: {_S.DELETION_SUCCESSFUL},
})

DELETION_STATES = frozenset({_S.DELETION_STARTED, _S.DELETION_SUCCESSFUL, _S.DELETION_INELIGIBLE})


def is_valid_transition(current: ReplicaStateName, target: ReplicaStateName) -> bool:
    return TRANSITIONS.allows(current, target)


def current_state(states: dict[PartitionReplica, ReplicaStateName],
                  replica: PartitionReplica) -> ReplicaStateName:
    return states.get(replica, _S.NON_EXISTENT)


def transition(states: dict[PartitionReplica, ReplicaStateName], replica: PartitionReplica,
               target: ReplicaStateName) -> None:
    current = states.get(replica, _S.NON_EXISTENT)
    TRANSITIONS.check(replica, current, target)
    if target is _S.NON_EXISTENT:
        states.pop(replica, None)
    else:
        states[replica] = target


def take_offline(states: dict[PartitionReplica, ReplicaStateName], replica: PartitionReplica) -> None:
    """Online/New/Offline/Ineligible -> Offline; a replica already being deleted
    keeps its deletion state (the deletion decides what happens to it)."""
    if current_state(states, replica) not in DELETION_STATES:
        transition(states, replica, _S.OFFLINE)


def start_deletion(states: dict[PartitionReplica, ReplicaStateName], replica: PartitionReplica) -> None:
    """Any state short of Started/Successful -> (Offline ->) ReplicaDeletionStarted."""
    if current_state(states, replica) is not _S.OFFLINE:
        transition(states, replica, _S.OFFLINE)
    transition(states, replica, _S.DELETION_STARTED)


def mark_ineligible(states: dict[PartitionReplica, ReplicaStateName], replica: PartitionReplica) -> None:
    current = current_state(states, replica)
    if current is _S.DELETION_INELIGIBLE or current is _S.DELETION_SUCCESSFUL:
        return
    if current is not _S.DELETION_STARTED and current is not _S.OFFLINE:
        transition(states, replica, _S.OFFLINE)
    transition(states, replica, _S.DELETION_INELIGIBLE)


def delete_now(states: dict[PartitionReplica, ReplicaStateName], replica: PartitionReplica) -> None:
    """A replica a reassignment removed: Kafka walks it through every deletion
    state at once, without waiting for the StopReplica response."""
    start_deletion(states, replica)
    transition(states, replica, _S.DELETION_SUCCESSFUL)
    transition(states, replica, _S.NON_EXISTENT)
