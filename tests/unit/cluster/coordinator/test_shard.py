"""The coordinator's shell on one owner thread (shard.py, group_requests.py):
decisions applied to parked requests, writes and their outcomes, loads and
unloads. The owner thread and the log are stood in for by recorders; the
decisions are the real ones."""

from concurrent.futures import Future

from kio.schema.errors import ErrorCode as E

from kafkactl.cluster.coordinator import group_requests
from kafkactl.cluster.coordinator.group import GroupConfig
from kafkactl.cluster.coordinator.group_requests import OffsetCommitRequest
from kafkactl.cluster.coordinator.loading import replay
from kafkactl.cluster.coordinator.messages import JoinRequest, SyncRequest
from kafkactl.cluster.coordinator.records import (
    GroupKey, OffsetKey, decode_group_value, decode_key, decode_offset_value)
from kafkactl.cluster.coordinator.shard import CoordinatorContext, GroupShard

PARTITION = 3


class Owner:
    """Runs hand-overs at once; keeps timers for the test to look at."""
    name = "owner"

    def __init__(self):
        self.timers = []

    def at(self, deadline_ms, action):
        self.timers.append((deadline_ms, action))

    def fire_due(self, now_ms=1000):
        due = [action for deadline, action in self.timers if deadline <= now_ms]
        self.timers = [(d, a) for d, a in self.timers if d > now_ms]
        for action in due:
            action()

    def submit_waiting(self, task, timeout_s):
        task()
        return True


class Writer:
    """Keeps each write's records and its `done`, for the test to complete."""

    def __init__(self):
        self.writes = []

    def write(self, partition, records, done):
        self.writes.append((partition, records, done))


def shard(loading=False, installed=True, new_uuid=lambda: "u1", clock_ms=lambda: 1000,
          partition_count=lambda t: 1):
    writer = Writer()
    context = CoordinatorContext(
        config=GroupConfig(initial_rebalance_delay_ms=0), clock_ms=clock_ms, new_uuid=new_uuid,
        writer=writer, partition_for=lambda group_id: PARTITION, is_loading=lambda p: loading,
        offset_metadata_max_bytes=10, offsets_retention_ms=60_000, topic_known=lambda t, p: t == "t",
        partition_count=partition_count)
    result = GroupShard(Owner(), context)
    if installed:
        result.install(PARTITION, replay([]), [])
    return result, writer


def join(s, member_id=""):
    """A JoinGroup; the group's timers due now fired (the initial delay of 0 ms)."""
    future = Future()
    s.join(JoinRequest("g", member_id, "c", "/h", 10000, 20000, "consumer", (("range", b"m"),), version=5), future)
    s.owner.fire_due()
    return future


def test_requests_for_groups_not_served_here_say_why():
    not_led, _ = shard(installed=False)
    assert join(not_led).result(0).error is E.not_coordinator
    loading, _ = shard(loading=True, installed=False)
    assert join(loading).result(0).error is E.coordinator_load_in_progress


def test_the_leaders_sync_is_answered_once_its_assignment_is_committed():
    s, writer = shard()
    member_id = join(s).result(0).member_id
    joined = join(s, member_id).result(0)
    assert (joined.error, joined.generation_id) == (E.none, 1)
    future = Future()
    s.sync(SyncRequest("g", member_id, 1, {member_id: b"assignment"}), future)
    assert not future.done()
    [(partition, [(key, value)], done)] = writer.writes
    assert partition == PARTITION and decode_key(key) == GroupKey("g")
    assert decode_group_value(value).members[0].assignment == b"assignment"
    done(E.none)
    assert future.result(0).assignment == b"assignment"
    assert s.entry("g").group.state.value == "Stable"


def test_a_failed_store_answers_the_sync_with_kafkas_mapped_error():
    s, writer = shard()
    member_id = join(s).result(0).member_id
    join(s, member_id).result(0)
    future = Future()
    s.sync(SyncRequest("g", member_id, 1, {member_id: b"a"}), future)
    writer.writes[0][2](E.not_leader_or_follower)
    assert future.result(0).error is E.not_coordinator
    assert s.entry("g").group.state.value == "PreparingRebalance"


def test_unloading_answers_parked_joins_not_coordinator_and_forgets_the_groups():
    s, _ = shard(new_uuid=iter(["u1", "u2"]).__next__)
    first = join(s).result(0).member_id
    join(s, first).result(0)                    # generation 1, one member
    second = join(s).result(0).member_id
    rejoin = join(s, second)                    # parked until the first member rejoins too
    assert not rejoin.done()
    s.unload(PARTITION)
    assert rejoin.result(0).error is E.not_coordinator
    assert s.entry("g") is None
    assert join(s, first).result(0).error is E.not_coordinator


def test_commits_enter_the_cache_only_once_written():
    s, writer = shard()
    first, second = Future(), Future()
    request = OffsetCommitRequest("g", "", -1, None, {("t", 0): (5, -1, "meta"), ("t", 1): (6, -1, None),
                                                        ("x", 0): (1, -1, None)})
    group_requests.commit(s, request, first)
    [(_, records, done)] = writer.writes
    assert [decode_key(k) for k, _ in records] == [OffsetKey("g", "t", 0), OffsetKey("g", "t", 1)]
    assert decode_offset_value(records[0][1]).metadata == "meta"
    fetch = Future()
    group_requests.fetch(s, "g", [("t", 0)], fetch)
    assert fetch.result(0) == (E.none, {("t", 0): None})
    done(E.none)
    assert first.result(0) == {("x", 0): E.unknown_topic_or_partition, ("t", 0): E.none, ("t", 1): E.none}
    group_requests.commit(s, OffsetCommitRequest("g", "", -1, None, {("t", 0): (9, -1, None)}), second)
    writer.writes[1][2](E.request_timed_out)
    assert second.result(0) == {("t", 0): E.request_timed_out}
    fetch = Future()
    group_requests.fetch(s, "g", None, fetch)
    assert {tp: o.offset for tp, o in fetch.result(0)[1].items()} == {("t", 0): 5, ("t", 1): 6}


def test_deleting_an_empty_group_writes_tombstones_and_a_live_one_is_refused():
    s, writer = shard()
    group_requests.commit(s, OffsetCommitRequest("g", "", -1, None, {("t", 0): (5, -1, None)}), Future())
    writer.writes[0][2](E.none)
    deleted = Future()
    group_requests.delete_group(s, "g", deleted)
    [_, (_, records, done)] = writer.writes
    assert [(decode_key(k), v) for k, v in records] == [(OffsetKey("g", "t", 0), None), (GroupKey("g"), None)]
    done(E.none)
    assert deleted.result(0) is E.none and s.entry("g") is None
    join(s)                                  # a pending member only
    member_id = join(s).result(0).member_id
    join(s, member_id)
    refused = Future()
    group_requests.delete_group(s, "g", refused)
    assert refused.result(0) is E.non_empty_group
    unknown = Future()
    group_requests.delete_group(s, "nobody", unknown)
    assert unknown.result(0) is E.group_id_not_found


def test_expired_offsets_become_tombstones_and_an_emptied_group_is_removed():
    now = [1000]
    s, writer = shard(clock_ms=lambda: now[0])        # offsets.retention.ms: 60 s
    group_requests.commit(s, OffsetCommitRequest("g", "", -1, None, {("t", 0): (5, -1, None)}), Future())
    writer.writes[0][2](E.none)
    group_requests.expire_offsets(s)
    assert len(writer.writes) == 1 and s.entry("g") is not None         # not yet
    now[0] = 61_000
    group_requests.expire_offsets(s)
    assert s.entry("g") is None
    tombstones = [(decode_key(k), v) for _, records, _ in writer.writes[1:] for k, v in records]
    assert tombstones == [(OffsetKey("g", "t", 0), None), (GroupKey("g"), None)]


def test_a_stable_group_rebalances_when_a_subscribed_topic_gains_partitions():
    from support.consumer_protocol import subscription
    counts = {"t": 1}
    s, writer = shard(partition_count=counts.get)
    future = Future()
    s.join(JoinRequest("g", "", "c", "/h", 10000, 20000, "consumer", (("range", subscription(["t", "later"])),),
                       version=3), future)
    s.owner.fire_due()
    member_id = future.result(0).member_id
    synced = Future()
    s.sync(SyncRequest("g", member_id, 1, {member_id: b"a"}), synced)
    writer.writes[0][2](E.none)
    assert s.entry("g").group.state.value == "Stable"
    s.check_partition_growth()
    assert s.entry("g").group.state.value == "Stable"        # nothing grew
    counts["later"] = 3                                        # a subscribed topic created
    s.check_partition_growth()
    assert s.entry("g").group.state.value == "PreparingRebalance"
