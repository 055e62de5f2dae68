"""The table of a state machine: for each state, the states it may be entered from.

Kafka's partition and replica state machines (controller/
partition_state_machine.py, replica_state_machine.py) and its group states
(coordinator/group_state.py) are each such a table plus what their states
mean. A transition outside the table is a bug, so `check` raises (an
InvariantViolation, through `invariant`) instead of logging and skipping it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import Enum
from typing import Generic, TypeVar

from kafkactl.cluster.invariant import invariant

State = TypeVar("State", bound=Enum)


class TransitionTable(Generic[State]):
    """`kind` names what the states belong to ("partition", "replica") in the
    error message; `previous` maps every state to the states it may follow."""

    __slots__ = ("kind", "_previous")

    def __init__(self, kind: str, previous: Mapping[State, Iterable[State]]) -> None:
        self.kind = kind
        self._previous: dict[State, frozenset[State]] = {
            target: frozenset(sources) for target, sources in previous.items()}
        # A state missing as a target would turn a check into a KeyError.
        states = {state for sources in self._previous.values() for state in sources} | set(self._previous)
        missing = sorted(state.name for state in states - set(self._previous))
        invariant(not missing, f"{kind} transition table: no entry for {missing}")

    def allows(self, current: State, target: State) -> bool:
        return current in self._previous[target]

    def check(self, subject: object, current: State, target: State) -> None:
        """Raise unless `subject` (a partition, a replica) may go from `current` to `target`."""
        if current not in self._previous[target]:
            invariant(False, f"{self.kind} {subject}: {current.value} -> {target.value} "
                             f"is not a valid transition")
