"""A consumer group's in-memory state, as the coordinator keeps it (Kafka's
GroupMetadata and MemberMetadata, classic protocol).

1. A member is known by its member id; a static member (KIP-345) also by its
   group.instance.id, mapped to its current member id in `static_members`.
2. A pending member (KIP-394) has been handed a member id by a JoinGroup
   answered MEMBER_ID_REQUIRED and has not joined with it yet; it is not a
   member, but a rebalance waits for it (until its session deadline).
3. `members` keeps the order members joined in: the first member added to a
   group without a leader becomes the leader; when the leader leaves, the
   first remaining member does.
4. A member supports an ordered list of protocols (name -> metadata bytes),
   most preferred first. The group's protocol is chosen by vote among the
   protocols every member supports (`select_protocol`).
5. `awaiting_join` / `awaiting_sync`: the member has a JoinGroup / SyncGroup
   parked until the rebalance progresses. A member awaiting either does not
   expire by its session deadline, unless it is new (it joined in this
   rebalance and has never been answered), as in Kafka.
6. The group's join deadline (`join_deadline_ms`) ends PreparingRebalance:
   the rebalance timeout, or for a group coming out of Empty the initial
   rebalance delay, extended (for a group of generation 0) while new members
   keep joining, at most the rebalance timeout in all.

The state is owned by one thread per group; the decisions of membership.py
update it in place and hand it back.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kafkactl.cluster.coordinator.group_state import GroupState, transition
from kafkactl.cluster.coordinator.records import GroupValue, MemberMetadata

# Kafka's GroupCoordinator.NewMemberJoinTimeoutMs: a new member's JoinGroup
# is parked at most this long before the member is dropped.
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000

Protocols = tuple[tuple[str, bytes], ...]


@dataclass(frozen=True, slots=True)
class GroupConfig:
    """The broker's group settings (Kafka's names and defaults)."""
    min_session_timeout_ms: int = 6_000           # group.min.session.timeout.ms
    max_session_timeout_ms: int = 1_800_000       # group.max.session.timeout.ms
    initial_rebalance_delay_ms: int = 3_000       # group.initial.rebalance.delay.ms
    max_size: int = 2**31 - 1                     # group.max.size


@dataclass(slots=True)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: Protocols
    assignment: bytes = b""
    awaiting_join: bool = False
    awaiting_sync: bool = False
    is_new: bool = False
    session_deadline_ms: int = 0

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata(self, protocol: str) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        raise KeyError(protocol)

    def vote(self, candidates: set[str]) -> str:
        """The member's most preferred protocol among `candidates`."""
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise ValueError(f"member {self.member_id} supports none of {sorted(candidates)}")

    def matches(self, protocols: Protocols) -> bool:
        return tuple(protocols) == tuple(self.protocols)

    def satisfied_heartbeat(self) -> bool:
        """Whether a passed session deadline spares this member (rule 5)."""
        return not self.is_new and (self.awaiting_join or self.awaiting_sync)


@dataclass(slots=True)
class Group:
    group_id: str
    state: GroupState = GroupState.EMPTY
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)     # instance id -> member id
    pending_members: dict[str, int] = field(default_factory=dict)    # member id -> session deadline
    state_timestamp_ms: int = 0
    # PreparingRebalance's end (rule 6).
    join_deadline_ms: int | None = None
    initial_delay_active: bool = False
    initial_delay_ms: int = 0
    initial_remaining_ms: int = 0
    new_member_added: bool = False

    # --- reading

    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def static_member_id(self, group_instance_id: str | None) -> str | None:
        return None if group_instance_id is None else self.static_members.get(group_instance_id)

    def is_static_member_fenced(self, member_id: str, group_instance_id: str | None) -> bool:
        """A known instance id presented with another member id than its current one."""
        current = self.static_member_id(group_instance_id)
        return current is not None and current != member_id

    def num_awaiting_join(self) -> int:
        return sum(1 for m in self.members.values() if m.awaiting_join)

    def all_joined(self) -> bool:
        return not self.pending_members and all(m.awaiting_join for m in self.members.values())

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def candidate_protocols(self) -> set[str]:
        members = list(self.members.values())
        if not members:
            return set()
        common = set(members[0].protocol_names())
        for member in members[1:]:
            common &= set(member.protocol_names())
        return common

    def supports_protocols(self, protocol_type: str, protocols: Protocols) -> bool:
        """Kafka's supportsProtocols: an empty group takes any non-empty type and
        protocol list; otherwise the type must match and one of the protocols
        must be supported by every member."""
        names = {name for name, _ in protocols}
        if self.state is GroupState.EMPTY:
            return protocol_type != "" and bool(names)
        return self.protocol_type == protocol_type and bool(names & self.candidate_protocols())

    def select_protocol(self) -> str:
        """Each member votes its most preferred protocol among those all members
        support; the most votes win. Kafka breaks a tie by hash order; here the
        tied protocol voted first (in join order) wins."""
        candidates = self.candidate_protocols()
        votes: dict[str, int] = {}
        for member in self.members.values():
            choice = member.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        if not votes:
            raise ValueError(f"group {self.group_id}: cannot select a protocol without members")
        return max(votes, key=lambda name: votes[name])   # max keeps the first of equals

    # --- changing

    def transition_to(self, target: GroupState, now_ms: int) -> None:
        self.state = transition(self.group_id, self.state, target)
        self.state_timestamp_ms = now_ms

    def add(self, member: Member) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self.pending_members.pop(member.member_id, None)
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id

    def remove(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        if member is not None and member.group_instance_id is not None:
            if self.static_members.get(member.group_instance_id) == member_id:
                del self.static_members[member.group_instance_id]
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return member

    def replace_member_id(self, old_id: str, new_id: str) -> Member:
        """A static member's new member id (KIP-345): same member, same place as leader."""
        member = self.members.pop(old_id)
        member.member_id = new_id
        self.members[new_id] = member
        if self.leader_id == old_id:
            self.leader_id = new_id
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = new_id
        return member

    # --- persisting

    def to_group_value(self) -> GroupValue:
        """The group's `__consumer_offsets` metadata value (records.py)."""
        protocol = self.protocol_name
        return GroupValue(
            protocol_type=self.protocol_type or "", generation=self.generation_id,
            protocol=protocol, leader=self.leader_id, current_state_timestamp_ms=self.state_timestamp_ms,
            members=tuple(MemberMetadata(
                member_id=m.member_id, client_id=m.client_id, client_host=m.client_host,
                rebalance_timeout_ms=m.rebalance_timeout_ms, session_timeout_ms=m.session_timeout_ms,
                subscription=m.metadata(protocol) if protocol is not None else b"",
                assignment=m.assignment, group_instance_id=m.group_instance_id)
                for m in self.members.values()))
