import pytest

from kafkactl.cluster.controller import partition_state_machine as psm
from kafkactl.cluster.controller import replica_state_machine as rsm
from kafkactl.cluster.controller.model import PartitionReplica, TopicPartition
from kafkactl.cluster.controller.partition_state_machine import PartitionStateName as P
from kafkactl.cluster.controller.replica_state_machine import ReplicaStateName as R
from kafkactl.cluster.invariant import InvariantViolation

TP = TopicPartition("t", 0)
REPLICA = PartitionReplica(TP, 1)


def test_partition_life_cycle():
    states = {}
    for target in (P.NEW, P.ONLINE, P.OFFLINE, P.ONLINE, P.OFFLINE, P.NON_EXISTENT):
        psm.transition(states, TP, target)
    assert states == {}                       # NonExistent leaves no entry


@pytest.mark.parametrize("path", [
    (P.ONLINE,),                              # never created
    (P.NEW, P.NEW),
    (P.NEW, P.NON_EXISTENT),                  # must go offline first
    (P.NEW, P.ONLINE, P.NON_EXISTENT),
])
def test_invalid_partition_transitions_raise(path):
    states = {}
    with pytest.raises(InvariantViolation):
        for target in path:
            psm.transition(states, TP, target)


def test_replica_deletion_path():
    states = {}
    for target in (R.NEW, R.ONLINE, R.OFFLINE, R.DELETION_STARTED, R.DELETION_INELIGIBLE,
                   R.OFFLINE, R.DELETION_STARTED, R.DELETION_SUCCESSFUL, R.NON_EXISTENT):
        rsm.transition(states, REPLICA, target)
    assert states == {}


@pytest.mark.parametrize("path", [
    (R.ONLINE,),
    (R.NEW, R.DELETION_STARTED),              # only from Offline
    (R.NEW, R.ONLINE, R.DELETION_SUCCESSFUL),
    (R.NEW, R.ONLINE, R.NON_EXISTENT),
    (R.NEW, R.OFFLINE, R.DELETION_STARTED, R.DELETION_SUCCESSFUL, R.ONLINE),
])
def test_invalid_replica_transitions_raise(path):
    states = {}
    with pytest.raises(InvariantViolation):
        for target in path:
            rsm.transition(states, REPLICA, target)


def test_helpers_take_the_valid_way_through_offline():
    states = {REPLICA: R.ONLINE}
    rsm.start_deletion(states, REPLICA)
    assert states[REPLICA] is R.DELETION_STARTED
    rsm.take_offline(states, REPLICA)         # a replica being deleted keeps its deletion state
    assert states[REPLICA] is R.DELETION_STARTED
    rsm.mark_ineligible(states, REPLICA)
    assert states[REPLICA] is R.DELETION_INELIGIBLE
    states = {REPLICA: R.NEW}
    rsm.delete_now(states, REPLICA)
    assert states == {}
