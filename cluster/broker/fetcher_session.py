"""The follower's side of an incremental fetch session (pure; KIP-227).

After a first full request, a replica fetcher's request lists only the
partitions whose fetch position changed, were added, or are left out this
round (forgotten); the leader's side is fetch_session.py. Owned by one
fetcher thread.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kafkactl.cluster.broker.fetch_session import INITIAL_EPOCH, MAX_EPOCH, NO_SESSION_ID

Position = tuple[int, int, int]   # (fetch offset, log start offset, current leader epoch)


@dataclass(frozen=True, slots=True)
class FetchPlan:
    session_id: int
    epoch: int
    send: dict[tuple[str, int], Position]    # partitions the request lists, at these positions
    forgotten: list[tuple[str, int]]         # partitions the session drops

    @property
    def full(self) -> bool:
        return self.epoch == INITIAL_EPOCH


@dataclass(slots=True)
class FetchSessionState:
    """The fetcher's side of its session: what the leader holds (`sent`) and
    which partitions may differ from it since the last answered request."""

    session_id: int = NO_SESSION_ID
    next_epoch: int = INITIAL_EPOCH
    sent: dict[tuple[str, int], Position] = field(default_factory=dict)
    pending: set[tuple[str, int]] = field(default_factory=set)

    def note_changed(self, keys: Iterable[tuple[str, int]]) -> None:
        self.pending.update(keys)

    def plan(self, wanted: Mapping[tuple[str, int], Position]) -> FetchPlan:
        """The next request for fetching exactly `wanted`; only partitions
        noted as changed are compared (no session: everything is sent)."""
        if self.session_id == NO_SESSION_ID:
            return FetchPlan(NO_SESSION_ID, INITIAL_EPOCH, dict(wanted), [])
        send = {key: wanted[key] for key in self.pending if key in wanted and self.sent.get(key) != wanted[key]}
        forgotten = [key for key in self.pending if key not in wanted and key in self.sent]
        return FetchPlan(self.session_id, self.next_epoch, send, forgotten)

    def answered(self, plan: FetchPlan, response_session_id: int) -> None:
        self.pending.clear()
        if plan.full:
            self.session_id = response_session_id     # NO_SESSION_ID: the leader had no room
            self.next_epoch = 1
            self.sent = dict(plan.send) if self.session_id != NO_SESSION_ID else {}
            return
        self.next_epoch = 1 if plan.epoch >= MAX_EPOCH else plan.epoch + 1
        self.sent.update(plan.send)
        for key in plan.forgotten:
            del self.sent[key]

    def reset(self) -> None:
        """Start over with a full request (the session is unknown or out of step)."""
        self.session_id, self.next_epoch, self.sent = NO_SESSION_ID, INITIAL_EPOCH, {}
        self.pending.clear()


class Positions(Mapping):
    """`_wanted` seen as key -> Position, without copying 10,000 entries."""

    def __init__(self, wanted) -> None:
        self._wanted = wanted

    def __getitem__(self, key):
        return self._wanted[key][0]

    def __iter__(self):
        return iter(self._wanted)

    def __len__(self) -> int:
        return len(self._wanted)
