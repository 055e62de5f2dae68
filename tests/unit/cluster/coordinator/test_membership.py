"""The classic group protocol's membership decisions (cluster/coordinator/
membership.py), with literal requests and clock values."""

import itertools

from kio.schema.errors import ErrorCode as E

from kafkactl.cluster.coordinator.group import Group, GroupConfig
from kafkactl.cluster.coordinator.group_state import GroupState as S
from kafkactl.cluster.coordinator.membership import (
    HeartbeatRequest, JoinRequest, MemberIdentity, SyncRequest, SyncResponse, TimerKind,
    assignment_stored, expire_sessions, heartbeat, join_group, leave_group, on_join_deadline, sync_group)

CONFIG = GroupConfig(min_session_timeout_ms=6000, max_session_timeout_ms=30000,
                     initial_rebalance_delay_ms=3000, max_size=3)
RANGE = (("range", b"r"), ("roundrobin", b"rr"))


def uuids():
    counter = itertools.count(1)
    return lambda: f"u{next(counter)}"


def req(member_id="", client_id="c", protocols=RANGE, session=10000, rebalance=20000,
        instance=None, version=5, protocol_type="consumer"):
    return JoinRequest("g", member_id, client_id, "/10.0.0.1", session, rebalance, protocol_type,
                       protocols, instance, version)


def settle(group):
    """Fire the join timer until the rebalance completes; the time it did."""
    while group.state is S.PREPARING_REBALANCE:
        now = group.join_deadline_ms
        on_join_deadline(group, CONFIG, now)
    return now


def stable_group(n=3, now=0):
    """n members joined (ids c1-u1.. ), synced by the leader: Stable, generation 1."""
    uuid = uuids()
    group = None
    ids = []
    for i in range(1, n + 1):
        d = join_group(group, req(client_id=f"c{i}"), CONFIG, now, uuid)
        group = d.group
        assert d.reply.error is E.member_id_required
        ids.append(d.reply.member_id)
        join_group(group, req(d.reply.member_id, client_id=f"c{i}"), CONFIG, now, uuid)
    now = settle(group)             # 6000: the initial delay, extended once
    assert group.state is S.COMPLETING_REBALANCE
    d = sync_group(group, SyncRequest("g", ids[0], 1, {m: m.encode() for m in ids}), now)
    assignment_stored(group, d.store, E.none, CONFIG, now)
    assert group.state is S.STABLE
    return group, ids


def test_three_members_join_to_stable():
    uuid = uuids()
    d = join_group(None, req(client_id="c1", version=4), CONFIG, 0, uuid)
    assert d.reply.error is E.member_id_required and d.reply.member_id == "c1-u1"
    group = d.group
    assert group.state is S.EMPTY and "c1-u1" in group.pending_members
    assert d.timers[0].kind is TimerKind.SESSION and d.timers[0].deadline_ms == 10000
    d = join_group(group, req("c1-u1", client_id="c1"), CONFIG, 10, uuid)
    assert d.reply is None and d.waiting_as == "c1-u1"
    assert group.state is S.PREPARING_REBALANCE and group.join_deadline_ms == 3010
    ids = ["c1-u1"]
    for client in ("c2", "c3"):
        d = join_group(group, req(client_id=client), CONFIG, 20, uuid)
        ids.append(d.reply.member_id)
        assert join_group(group, req(d.reply.member_id, client_id=client), CONFIG, 30, uuid).reply is None
    assert group.state is S.PREPARING_REBALANCE      # everyone joined, the initial delay still runs
    d = on_join_deadline(group, CONFIG, 3010)        # a new member joined: delay extended
    assert group.join_deadline_ms == 6010 and not d.answers
    d = on_join_deadline(group, CONFIG, 6010)
    assert group.state is S.COMPLETING_REBALANCE and group.generation_id == 1
    assert group.protocol_name == "range" and group.leader_id == "c1-u1"
    answers = dict(d.answers)
    assert [m.member_id for m in answers["c1-u1"].members] == ids
    assert [m.metadata for m in answers["c1-u1"].members] == [b"r", b"r", b"r"]
    assert answers["c2-u2"].members == () and answers["c2-u2"].leader_id == "c1-u1"
    assert {t.member_id: t.deadline_ms for t in d.timers} == {i: 16010 for i in ids}
    # A follower's SyncGroup waits; the leader's asks to store; stored -> Stable, all answered.
    d = sync_group(group, SyncRequest("g", "c2-u2", 1), 6020)
    assert d.reply is None and d.waiting_as == "c2-u2"
    d = sync_group(group, SyncRequest("g", "c1-u1", 1, {"c1-u1": b"a1", "c2-u2": b"a2"}), 6030)
    assert d.reply is None and d.store.assignments == {"c1-u1": b"a1", "c2-u2": b"a2", "c3-u3": b""}
    d = assignment_stored(group, d.store, E.none, CONFIG, 6040)
    assert group.state is S.STABLE
    assert dict(d.answers) == {"c1-u1": SyncResponse(E.none, b"a1", "consumer", "range"),
                               "c2-u2": SyncResponse(E.none, b"a2", "consumer", "range")}
    d = sync_group(group, SyncRequest("g", "c3-u3", 1), 6050)      # late: Stable answers at once
    assert d.reply == SyncResponse(E.none, b"", "consumer", "range")
    assert group.to_group_value().members[1].assignment == b"a2"


def test_join_errors():
    uuid = uuids()
    assert join_group(None, req(session=5999), CONFIG, 0, uuid).reply.error is E.invalid_session_timeout
    assert join_group(None, req(session=30001), CONFIG, 0, uuid).reply.error is E.invalid_session_timeout
    d = join_group(None, req("who"), CONFIG, 0, uuid)
    assert d.group is None and d.reply.error is E.unknown_member_id
    group, ids = stable_group(2)
    assert join_group(group, req("who"), CONFIG, 0, uuid).reply.error is E.unknown_member_id
    assert join_group(group, req(protocol_type="connect"), CONFIG, 0, uuid).reply.error \
        is E.inconsistent_group_protocol
    assert join_group(group, req(protocols=(("sticky", b""),)), CONFIG, 0, uuid).reply.error \
        is E.inconsistent_group_protocol
    group, ids = stable_group(3)
    d = join_group(group, req(), CONFIG, 0, uuid)          # max_size 3 reached (checked first)
    assert d.reply.error is E.group_max_size_reached and d.reply.member_id == ""
    assert group.state is S.STABLE
    group.state = S.DEAD
    assert join_group(group, req(ids[0]), CONFIG, 0, uuid).reply.error is E.coordinator_not_available


def test_an_old_client_joins_without_a_member_id_round_trip():
    d = join_group(None, req(version=3), CONFIG, 0, uuids())
    assert d.reply is None and d.waiting_as == "c-u1" and d.group.has("c-u1")


def test_protocol_vote_picks_the_most_preferred_common_protocol():
    group, ids = stable_group(3)
    uuid = uuids()
    # Every member rejoins: two prefer roundrobin; "sticky" is not common to all.
    prefs = [(("roundrobin", b"x"), ("range", b"y")), (("sticky", b""), ("roundrobin", b"x"), ("range", b"y")),
             (("range", b"y"), ("roundrobin", b"x"))]
    for member_id, protocols in zip(ids, prefs):
        join_group(group, req(member_id, protocols=protocols), CONFIG, 100, uuid)
    assert group.state is S.COMPLETING_REBALANCE and group.generation_id == 2
    assert group.protocol_name == "roundrobin"


def test_a_member_leaving_rebalances_and_the_last_one_empties_the_group():
    group, ids = stable_group(3)
    d = leave_group(group, (MemberIdentity(ids[0]), MemberIdentity("nobody")), CONFIG, 100)
    assert [m.error for m in d.reply.members] == [E.none, E.unknown_member_id]
    assert group.state is S.PREPARING_REBALANCE and group.leader_id == ids[1]
    assert group.join_deadline_ms == 100 + 20000
    assert heartbeat(group, HeartbeatRequest("g", ids[1], 1), 110).reply is E.rebalance_in_progress
    join_group(group, req(ids[1], client_id="c2"), CONFIG, 120, uuids())
    d = join_group(group, req(ids[2], client_id="c3"), CONFIG, 130, uuids())
    assert group.state is S.COMPLETING_REBALANCE and group.generation_id == 2
    assert d.reply.generation_id == 2 and d.reply.leader_id == ids[1]
    d = leave_group(group, (MemberIdentity(ids[1]), MemberIdentity(ids[2])), CONFIG, 140)
    assert group.state is S.EMPTY and group.generation_id == 3 and d.store is not None


def test_session_timeout_removes_the_member_and_the_others_rebalance():
    group, ids = stable_group(3)                 # session deadlines 6000 + 10000
    heartbeat(group, HeartbeatRequest("g", ids[0], 1), 8000)
    heartbeat(group, HeartbeatRequest("g", ids[1], 1), 8000)
    assert expire_sessions(group, CONFIG, 15999).removed == []
    d = expire_sessions(group, CONFIG, 16000)
    assert d.removed == [ids[2]] and group.state is S.PREPARING_REBALANCE
    # Nobody rejoins within the rebalance timeout: dynamic members are dropped, group Empty.
    d = on_join_deadline(group, CONFIG, 36000)
    assert set(d.removed) == {ids[0], ids[1]} and group.state is S.EMPTY


def test_heartbeat_errors_by_state():
    group, ids = stable_group(2)
    hb = lambda member, gen=1, inst=None: heartbeat(group, HeartbeatRequest("g", member, gen, inst), 4000).reply
    assert hb(ids[0]) is E.none and group.members[ids[0]].session_deadline_ms == 14000
    assert hb("nobody") is E.unknown_member_id
    assert hb(ids[0], gen=0) is E.illegal_generation
    assert heartbeat(None, HeartbeatRequest("g", ids[0], 1), 0).reply is E.unknown_member_id
    join_group(group, req(ids[0]), CONFIG, 4000, uuids())      # the leader rejoins: rebalance
    assert hb(ids[1]) is E.rebalance_in_progress
    join_group(group, req(ids[1]), CONFIG, 4000, uuids())
    assert group.state is S.COMPLETING_REBALANCE and hb(ids[1], gen=2) is E.none
    group.state = S.DEAD
    assert hb(ids[1], gen=2) is E.coordinator_not_available


def test_sync_errors():
    group, ids = stable_group(2)
    sync = lambda member, gen=1, **kw: sync_group(group, SyncRequest("g", member, gen, **kw), 4000).reply.error
    assert sync_group(None, SyncRequest("g", "x", 1), 0).reply.error is E.unknown_member_id
    assert sync("nobody") is E.unknown_member_id
    assert sync(ids[0], gen=7) is E.illegal_generation
    assert sync(ids[0], protocol_name="roundrobin") is E.inconsistent_group_protocol
    join_group(group, req(ids[0]), CONFIG, 4000, uuids())
    assert sync(ids[1]) is E.rebalance_in_progress


def test_a_rebalance_answers_parked_syncs_with_rebalance_in_progress():
    group, ids = stable_group(2)
    join_group(group, req(ids[0]), CONFIG, 4000, uuids())
    join_group(group, req(ids[1]), CONFIG, 4000, uuids())
    sync_group(group, SyncRequest("g", ids[1], 2), 4100)
    d = join_group(group, req(ids[1], protocols=(("roundrobin", b"x"),)), CONFIG, 4200, uuids())
    assert (ids[1], SyncResponse(E.rebalance_in_progress)) in d.answers
    assert group.state is S.PREPARING_REBALANCE


def test_initial_rebalance_delay_extends_while_members_join_at_most_the_rebalance_timeout():
    uuid = uuids()
    d = join_group(None, req(version=3, rebalance=10000), CONFIG, 0, uuid)
    group = d.group
    assert group.join_deadline_ms == 3000
    for now in (2000, 5000, 8000):
        join_group(group, req(version=3, client_id=f"n{now}", rebalance=10000), CONFIG, now, uuid) \
            if len(group.members) < 3 else None
        on_join_deadline(group, CONFIG, group.join_deadline_ms)
        group.new_member_added = True          # a member joined during each delay
    assert group.state is S.PREPARING_REBALANCE
    assert group.join_deadline_ms == 10000     # 3000 + 3000 + 3000 + 1000: the rebalance timeout
    on_join_deadline(group, CONFIG, 10000)
    assert group.state is S.COMPLETING_REBALANCE and len(group.members) == 3


def test_static_member_rejoins_without_rebalance_and_its_old_id_is_fenced():
    uuid = uuids()
    d = join_group(None, req(instance="i1", client_id="a"), CONFIG, 0, uuid)
    group, old = d.group, d.waiting_as
    assert old == "i1-u1"
    join_group(group, req(client_id="b", version=3), CONFIG, 0, uuid)
    now = settle(group)
    d = sync_group(group, SyncRequest("g", old, 1, {old: b"p0"}), now)
    assignment_stored(group, d.store, E.none, CONFIG, now)
    # The static member restarts: empty member id, same instance id, same protocols.
    d = join_group(group, req(instance="i1", client_id="a"), CONFIG, 5000, uuid)
    new = d.reply.member_id
    assert d.reply.error is E.none and new == "i1-u3" and d.reply.leader_id == old
    assert group.state is S.STABLE and group.generation_id == 1 and group.leader_id == new
    assert group.members[new].assignment == b"p0" and d.store is not None
    assert heartbeat(group, HeartbeatRequest("g", old, 1, "i1"), 5100).reply is E.fenced_instance_id
    assert join_group(group, req(old, instance="i1"), CONFIG, 5100, uuid).reply.error is E.fenced_instance_id
    d = leave_group(group, (MemberIdentity(old, "i1"),), CONFIG, 5200)
    assert d.reply.members[0].error is E.fenced_instance_id
    # Leaving by instance id alone removes it and rebalances.
    d = leave_group(group, (MemberIdentity("", "i1"),), CONFIG, 5300)
    assert d.reply.members[0].error is E.none and not group.has(new)
    assert "i1" not in group.static_members and group.state is S.PREPARING_REBALANCE


def test_a_static_member_rejoining_with_other_protocols_rebalances():
    uuid = uuids()
    group = join_group(None, req(instance="i1"), CONFIG, 0, uuid).group
    on_join_deadline(group, CONFIG, 3000)
    d = sync_group(group, SyncRequest("g", "i1-u1", 1), 3000)
    assignment_stored(group, d.store, E.none, CONFIG, 3000)
    d = join_group(group, req(instance="i1", protocols=(("roundrobin", b""),)), CONFIG, 4000, uuid)
    assert group.state is S.COMPLETING_REBALANCE and d.reply.generation_id == 2


def test_a_static_member_expiring_triggers_a_rebalance():
    uuid = uuids()
    group = join_group(None, req(instance="i1"), CONFIG, 0, uuid).group
    join_group(group, req(version=3, client_id="b"), CONFIG, 0, uuid)
    now = settle(group)                          # 6000; sessions until 16000
    d = sync_group(group, SyncRequest("g", "i1-u1", 1), now)
    assignment_stored(group, d.store, E.none, CONFIG, now)
    heartbeat(group, HeartbeatRequest("g", "b-u2", 1), 15000)
    d = expire_sessions(group, CONFIG, 16000)
    assert d.removed == ["i1-u1"] and group.static_members == {}
    assert group.state is S.PREPARING_REBALANCE


def test_a_pending_member_that_never_rejoins_expires():
    d = join_group(None, req(), CONFIG, 0, uuids())
    group = d.group
    assert expire_sessions(group, CONFIG, 9999).removed == []
    assert expire_sessions(group, CONFIG, 10000).removed == ["c-u1"] and not group.pending_members


def test_leave_unknown_group_and_dead_group():
    d = leave_group(None, (MemberIdentity("m"),), CONFIG, 0)
    assert d.reply.members[0].error is E.unknown_member_id
    group = Group("g", state=S.DEAD)
    assert leave_group(group, (MemberIdentity("m"),), CONFIG, 0).reply.error is E.coordinator_not_available
