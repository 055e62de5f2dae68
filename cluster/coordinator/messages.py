"""The requests, responses and decisions of the group membership protocol
(membership.py): the fields a thin shell copies from and to Kafka's
JoinGroup, SyncGroup, Heartbeat and LeaveGroup messages.

A `Decision` carries the updated group, the reply to this request (None:
parked under `waiting_as`), answers to requests parked earlier, timers to
(re)arm, members removed (their timers and parked requests can be dropped)
and, when set, the group metadata to store in `__consumer_offsets`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import NamedTuple

from kio.schema.errors import ErrorCode

from kafkactl.cluster.coordinator.group import Group, Protocols
UNKNOWN_MEMBER = ""
NO_GENERATION = -1


# --- requests

class JoinRequest(NamedTuple):
    group_id: str
    member_id: str
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: Protocols
    group_instance_id: str | None = None
    version: int = 5


class SyncRequest(NamedTuple):
    group_id: str
    member_id: str
    generation_id: int
    assignments: Mapping[str, bytes] = {}
    group_instance_id: str | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None


class HeartbeatRequest(NamedTuple):
    group_id: str
    member_id: str
    generation_id: int
    group_instance_id: str | None = None


class MemberIdentity(NamedTuple):
    member_id: str
    group_instance_id: str | None = None


# --- responses

class JoinedMember(NamedTuple):
    member_id: str
    group_instance_id: str | None
    metadata: bytes


class JoinResponse(NamedTuple):
    error: ErrorCode
    member_id: str
    generation_id: int = NO_GENERATION
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    members: tuple[JoinedMember, ...] = ()


class SyncResponse(NamedTuple):
    error: ErrorCode
    assignment: bytes = b""
    protocol_type: str | None = None
    protocol_name: str | None = None


class MemberLeft(NamedTuple):
    member_id: str
    group_instance_id: str | None
    error: ErrorCode


class LeaveResponse(NamedTuple):
    error: ErrorCode
    members: tuple[MemberLeft, ...] = ()


Response = JoinResponse | SyncResponse | LeaveResponse | ErrorCode


class Answer(NamedTuple):
    """The response to the request parked under `member_id`."""
    member_id: str
    response: JoinResponse | SyncResponse


class TimerKind(Enum):
    JOIN = "join"          # the group's PreparingRebalance deadline -> on_join_deadline
    SESSION = "session"    # a member's (or pending member's) session -> expire_sessions


class Timer(NamedTuple):
    kind: TimerKind
    member_id: str | None
    deadline_ms: int


class StoreGroup(NamedTuple):
    """Write the group's metadata record; `assignments` as they will be (the
    leader's SyncGroup: pass back to `assignment_stored` once written)."""
    generation_id: int
    assignments: Mapping[str, bytes]


@dataclass(slots=True)
class Decision:
    group: Group | None
    reply: Response | None = None
    waiting_as: str | None = None
    answers: list[Answer] = field(default_factory=list)
    timers: list[Timer] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    store: StoreGroup | None = None

    def _finish(self) -> Decision:
        # The decision that parks a request may also complete it (the last
        # member to join): its answer is the reply. (An answer to the same
        # member's parked SyncGroup stays an answer.)
        if self.reply is None and self.waiting_as is not None:
            for i, answer in enumerate(self.answers):
                if answer.member_id == self.waiting_as and isinstance(answer.response, JoinResponse):
                    self.reply = answer.response
                    del self.answers[i]
                    self.waiting_as = None
                    break
        return self
