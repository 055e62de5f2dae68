"""What each goal reached, for the report: its figures against their targets
at its start, at its end and in the final plan; and, when not met, what
held it back.

A figure is met when its value is at most its target (every figure is
"lower is better"). A goal is met when all its figures are met in the final
plan. A goal whose figures end worse than they started is a bug (a goal
must never make its own aim worse; Cruise Control checks the same after
each goal): `worsened` names them, the optimizer logs them as errors and
the report shows them first. A goal met at its end and no longer met in the
final plan was undone by a lower goal, which the guards should prevent:
`undone` says so, as loudly.

What holds a goal back, from what the optimizer saw while placing its
candidates (`Refusals`): a candidate left where it was because every
destination that the goal would take was refused by a higher goal's guard
(`veto:<goal>`), or broke a hard constraint (`hard:<constraint>`), or there
was no such destination at all (`no_destination`), or the move budget was
spent (`budget`); and the goal's round bound. Each candidate counts once per
reason (a candidate refused by two higher goals counts for both).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

WORSE = 1e-9                 # relative: a figure this much above its start is worse (sums are exact integers)


@dataclass(frozen=True)
class Figure:
    """A measure of a goal (lower is better) and its target; `resource`: the
    report's resource it matches (its lower bound tells whether any plan
    can meet the target), if any."""
    name: str
    value: float
    target: float
    resource: str = ""

    @property
    def met(self) -> bool:
        return self.value <= self.target * (1 + WORSE) + WORSE

    def to_dict(self) -> dict:
        return {"name": self.name, "value": self.value, "target": self.target, "met": self.met,
                "resource": self.resource}


def worse(start: Figure, end: Figure) -> bool:
    return end.value > start.value * (1 + WORSE) + WORSE


class Refusals:
    """Why candidates of one goal were left where they were."""

    def __init__(self):
        self.counts: Counter[str] = Counter()

    def candidate(self) -> "Candidate":
        return Candidate(self)


class Candidate:
    """The reasons seen while looking for one candidate's destination."""

    def __init__(self, refusals: Refusals):
        self.refusals = refusals
        self.reasons: set[str] = set()

    def hard(self, constraint: str) -> None:
        self.reasons.add(f"hard:{constraint}")

    def veto(self, goal: str) -> None:
        self.reasons.add(f"veto:{goal}")

    def left(self) -> None:
        """The candidate stays: count why (vetoes before hard constraints:
        a destination a higher goal refused met every hard constraint)."""
        vetoes = {r for r in self.reasons if r.startswith("veto:")}
        found = vetoes or self.reasons or {"no_destination"}
        self.refusals.counts.update(found)


@dataclass
class GoalStatus:
    """One goal's report (see the module doc)."""
    name: str
    priority: int                         # 0: the repair of the hard constraints, then the soft goals in order
    start: list[Figure]
    end: list[Figure] = field(default_factory=list)
    final: list[Figure] = field(default_factory=list)
    rounds: int = 0
    round_bound: int = 0
    stopped_by_round_bound: bool = False
    moves: int = 0
    bytes_moved: int = 0
    leader_changes: int = 0
    refusals: Refusals = field(default_factory=Refusals)
    budget_hit: bool = False

    @property
    def met(self) -> bool:
        return all(f.met for f in self.final)

    def worsened(self) -> list[str]:
        return [f"{s.name}: {s.value:.6g} at its start, {e.value:.6g} at its end"
                for s, e in zip(self.start, self.end) if worse(s, e)]

    def undone(self) -> list[str]:
        return [f"{e.name}: {e.value:.6g} (met) at its end, {f.value:.6g} in the plan (target {f.target:.6g})"
                for e, f in zip(self.end, self.final) if e.met and not f.met]

    def held_back(self) -> list[str]:
        """When not met: what stopped it, most frequent first."""
        if self.met:
            return []
        found = []
        if self.stopped_by_round_bound:
            found.append(f"round bound: stopped after {self.round_bound} rounds with work left")
        if self.budget_hit or self.refusals.counts.get("budget"):
            found.append("move budget: --max-moves / --max-bytes-moved reached")
        for reason, count in sorted(self.refusals.counts.items(), key=lambda kv: (-kv[1], kv[0])):
            kind, _, what = reason.partition(":")
            label = {"veto": f"a higher goal's veto ({what})", "hard": f"a hard constraint ({what})",
                     "no_destination": "no destination under the goal's own limits"}.get(kind)
            if label:
                found.append(f"{label}: {count} candidate{'s' if count != 1 else ''} left in place")
        if not found:
            found.append("no candidate: no replica the goal may move would bring it closer "
                         "(each must fit the excess of its source)")
        return found

    def to_dict(self) -> dict:
        return {"goal": self.name, "priority": self.priority, "met": self.met,
                "figures": [f.to_dict() for f in self.final],
                "at_start": [f.to_dict() for f in self.start], "at_end": [f.to_dict() for f in self.end],
                "rounds": self.rounds, "round_bound": self.round_bound,
                "stopped_by_round_bound": self.stopped_by_round_bound,
                "moves": self.moves, "bytes_moved": self.bytes_moved, "leader_changes": self.leader_changes,
                "held_back": self.held_back(), "refusals": dict(sorted(self.refusals.counts.items())),
                "worsened": self.worsened(), "undone": self.undone()}
