"""The states of a consumer group and the transitions between them (Kafka's
GroupState; seed 003's "group being rebalanced" made explicit).

- Empty: no members. A group starts here (a group that only commits offsets,
  as an `assign()` consumer's does, stays here); its offsets are kept until
  they expire.
- PreparingRebalance: members are (re)joining; the rebalance waits for every
  known member to send JoinGroup, at most the rebalance timeout (and, for a
  group coming out of Empty, group.initial.rebalance.delay.ms first).
- CompletingRebalance: every member joined; the leader's assignment is
  awaited (SyncGroup).
- Stable: the assignment is handed out; members heartbeat.
- Dead: no members and no metadata left (deleted, expired, or moved to
  another coordinator); nothing more happens to it.

The table below lists, for each state, the states it may be entered from;
anything else is a coordinator bug and stops the process (state_table.py).
"""

from __future__ import annotations

from enum import Enum

from kafkactl.cluster.state_table import TransitionTable


class GroupState(Enum):
    # The values are the names Kafka's DescribeGroups and ListGroups answer with.
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


TRANSITIONS: TransitionTable[GroupState] = TransitionTable("group", {
    GroupState.PREPARING_REBALANCE: (GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY),
    GroupState.COMPLETING_REBALANCE: (GroupState.PREPARING_REBALANCE,),
    GroupState.STABLE: (GroupState.COMPLETING_REBALANCE,),
    GroupState.EMPTY: (GroupState.PREPARING_REBALANCE,),
    GroupState.DEAD: (GroupState.STABLE, GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE,
                      GroupState.EMPTY, GroupState.DEAD),
})


def can_transition(current: GroupState, target: GroupState) -> bool:
    return TRANSITIONS.allows(current, target)


def transition(group_id: str, current: GroupState, target: GroupState) -> GroupState:
    """`target`, once checked against the table (an InvariantViolation otherwise)."""
    TRANSITIONS.check(group_id, current, target)
    return target
