"""GroupAdmin against brokers simulated at the wire: each request is encoded
and decoded as a broker decodes it, each answer encoded and decoded as the
client reads it. Checks coordinator lookup (batched v4 or one key at a time),
the retries Kafka calls for, and the bounds on them."""

from __future__ import annotations

import datetime

import pytest
from kio.schema.errors import ErrorCode

from kafkactl.cluster.admin import group_protocol as gp
from kafkactl.cluster.admin.broker_queries import BrokerAddress
from kafkactl.cluster.admin.consumer_protocol import encode_assignment
from kafkactl.cluster.admin.group_queries import GroupAdmin, GroupQueryError
from kafkactl.cluster.protocol.build import make, nested
from support.wire_brokers import ALL_VERSIONS, Clock, FakeBroker, FakeSession

ZERO = datetime.timedelta(0)


def admin(brokers, timeout_s=10.0, clock=None):
    clock = clock or Clock()
    by_address = {b.address: b for b in brokers}
    return GroupAdmin([b.address for b in brokers], timeout_s,
                      connect=lambda address, _: FakeSession(by_address[address]),
                      clock=lambda: clock.now, sleep=clock.sleep)


def response(api_key, version, **fields):
    from kafkactl.cluster.protocol.codec import response_class

    return make(response_class(api_key, version), throttle_time=ZERO, **fields)


def coordinator_is(broker: FakeBroker, target: FakeBroker, errors=()):
    """FindCoordinator on `broker` names `target`, after answering `errors` first."""
    pending = list(errors)

    def handle(request, version):
        keys = request.coordinator_keys if version >= 4 else (request.key,)
        error = pending.pop(0) if pending else ErrorCode.none
        found = dict(node_id=target.address.broker_id, host=target.address.host, port=target.address.port,
                     error_code=error, error_message="loading" if error else None)
        if version >= 4:
            return response(10, version, coordinators=tuple(
                nested(response_cls(10, version), "Coordinator", key=k, **found) for k in keys))
        return response(10, version, **found)

    broker.handlers[10] = handle


def response_cls(api_key, version):
    from kafkactl.cluster.protocol.codec import response_class

    return response_class(api_key, version)


def describes(broker: FakeBroker, errors=()):
    """DescribeGroups: each group Stable with one member owning t-0, after `errors`."""
    pending = list(errors)

    def handle(request, version):
        error = pending.pop(0) if pending else ErrorCode.none
        cls = response_cls(15, version)
        member = nested(cls, "DescribedGroupMember", member_id="m-1", group_instance_id=None, client_id="c",
                        client_host="/127.0.0.1", member_metadata=b"", member_assignment=encode_assignment({"t": [0]}))
        return response(15, version, groups=tuple(
            nested(cls, "DescribedGroup", error_code=error, group_id=g, group_state="Stable", protocol_type="consumer",
                   protocol_data="range", members=(member,), authorized_operations=-2147483648)
            for g in request.groups))

    broker.handlers[15] = handle


def test_batched_lookup_then_one_describe_per_coordinator():
    b1, b2 = FakeBroker(1), FakeBroker(2)
    coordinator_is(b1, b2)
    describes(b2)
    with admin([b1, b2]) as groups:
        described = groups.describe_groups(["a", "b", "c"])
    assert sorted(described) == ["a", "b", "c"]
    assert described["a"].state == "Stable" and described["a"].members[0].member_id == "m-1"
    assert [(k, v, r.coordinator_keys) for k, v, r in b1.requests] == [(10, 4, ("a", "b", "c"))]
    assert [(k, v, r.groups) for k, v, r in b2.requests] == [(15, 5, ("a", "b", "c"))]


def test_a_broker_without_v4_is_asked_one_key_at_a_time():
    b1 = FakeBroker(1, {**ALL_VERSIONS, 10: (0, 3)})
    coordinator_is(b1, b1)
    describes(b1)
    with admin([b1]) as groups:
        groups.describe_groups(["a", "b"])
    assert [(k, v, getattr(r, "key", None)) for k, v, r in b1.requests] == [
        (10, 3, "a"), (10, 3, "b"), (15, 5, None)]


def test_not_coordinator_looks_the_coordinator_up_again():
    b1 = FakeBroker(1)
    coordinator_is(b1, b1)
    describes(b1, errors=[ErrorCode.not_coordinator])
    clock = Clock()
    with admin([b1], clock=clock) as groups:
        assert groups.describe_groups(["g"])["g"].error is None
    assert [k for k, _, _ in b1.requests] == [10, 15, 10, 15]
    assert clock.sleeps == [0.05]


def test_load_in_progress_asks_the_same_coordinator_again_with_a_doubling_backoff():
    b1 = FakeBroker(1)
    coordinator_is(b1, b1)
    describes(b1, errors=[ErrorCode.coordinator_load_in_progress] * 3)
    clock = Clock()
    with admin([b1], clock=clock) as groups:
        groups.describe_groups(["g"])
    assert [k for k, _, _ in b1.requests] == [10, 15, 15, 15, 15]
    assert clock.sleeps == [0.05, 0.1, 0.2]


def test_no_coordinator_until_the_deadline_is_an_error_naming_the_group_and_the_reason():
    b1 = FakeBroker(1)
    coordinator_is(b1, b1, errors=[ErrorCode.coordinator_not_available] * 1000)
    clock = Clock()
    with admin([b1], timeout_s=3.0, clock=clock) as groups:
        with pytest.raises(GroupQueryError, match=r"group 'g': no coordinator \(COORDINATOR_NOT_AVAILABLE: "
                                                  r"loading\); gave up at the deadline"):
            groups.describe_groups(["g"])
    assert clock.now <= 3.0 and max(clock.sleeps) == 1.0
    assert len(b1.requests) < 15


def test_a_lost_connection_to_the_coordinator_is_retried():
    b1, b2 = FakeBroker(1), FakeBroker(2)
    coordinator_is(b1, b2)
    describes(b2)
    b2.down = 1
    with admin([b1, b2]) as groups:
        assert groups.describe_groups(["g"])["g"].state == "Stable"
    assert [k for k, _, _ in b1.requests] == [10, 10]


def test_a_missing_api_is_named():
    b1 = FakeBroker(1, {10: (0, 4)})
    coordinator_is(b1, b1)
    with admin([b1]) as groups, pytest.raises(GroupQueryError, match=r"broker 1 does not support DescribeGroups "
                                                                      r"\(API 15\)"):
        groups.describe_groups(["g"])


def offsets_handler(broker: FakeBroker, committed: dict[str, dict[tuple[str, int], int]]):
    def handle(request, version):
        cls = response_cls(9, version)

        def topics(group, topic_cls, partition_cls):
            by_topic = {}
            for (t, p), offset in sorted(committed[group].items()):
                by_topic.setdefault(t, []).append(nested(cls, partition_cls, partition_index=p, committed_offset=offset,
                                                         committed_leader_epoch=-1, metadata="", error_code=ErrorCode.none))
            return tuple(nested(cls, topic_cls, name=t, partitions=tuple(ps)) for t, ps in by_topic.items())

        if version >= 8:
            return response(9, version, groups=tuple(
                nested(cls, "OffsetFetchResponseGroup", group_id=g.group_id, error_code=ErrorCode.none,
                       topics=topics(g.group_id, "OffsetFetchResponseTopics", "OffsetFetchResponsePartitions"))
                for g in request.groups))
        return response(9, version, error_code=ErrorCode.none,
                        topics=topics(request.group_id, "OffsetFetchResponseTopic", "OffsetFetchResponsePartition"))

    broker.handlers[9] = handle


@pytest.mark.parametrize("fetch_max, expected_requests", [(8, 1), (7, 2)])
def test_offset_fetch_asks_for_several_groups_at_once_from_v8(fetch_max, expected_requests):
    b1 = FakeBroker(1, {**ALL_VERSIONS, 9: (0, fetch_max)})
    coordinator_is(b1, b1)
    offsets_handler(b1, {"a": {("t", 0): 5, ("t", 1): -1}, "b": {("u", 2): 7}})
    with admin([b1]) as groups:
        fetched = groups.fetch_offsets(["a", "b"])
    assert fetched["a"].offsets == {("t", 0): 5}      # -1: nothing committed there
    assert fetched["b"].offsets == {("u", 2): 7}
    assert len([r for r in b1.requests if r[0] == 9]) == expected_requests


def test_commit_returns_kafkas_partition_errors_and_retries_coordinator_ones():
    b1 = FakeBroker(1)
    coordinator_is(b1, b1)
    answers = [ErrorCode.coordinator_load_in_progress, ErrorCode.unknown_member_id]

    def handle(request, version):
        assert (request.generation_id_or_member_epoch, request.member_id) == (-1, "")
        error = answers.pop(0)
        cls = response_cls(8, version)
        return response(8, version, topics=tuple(
            nested(cls, "OffsetCommitResponseTopic", name=t.name, partitions=tuple(
                nested(cls, "OffsetCommitResponsePartition", partition_index=p.partition_index, error_code=error)
                for p in t.partitions)) for t in request.topics))

    b1.handlers[8] = handle
    with admin([b1]) as groups:
        assert groups.commit_offsets("g", {("t", 0): 3}) == {("t", 0): "unknown_member_id"}


def test_list_groups_unites_every_broker_and_names_the_ones_that_failed():
    b1, b2, b3 = FakeBroker(1), FakeBroker(2), FakeBroker(3, {})

    def lists(*names):
        def handle(request, version):
            cls = response_cls(16, version)
            return response(16, version, error_code=ErrorCode.none, groups=tuple(
                nested(cls, "ListedGroup", group_id=n, protocol_type="consumer", group_state="Empty") for n in names))
        return handle

    b1.handlers[16] = lists("a", "b")
    b2.handlers[16] = lists("c")
    with admin([b1, b2, b3]) as groups:
        listed, failures = groups.list_groups()
    assert [(g.group_id, g.state) for g in listed] == [("a", "Empty"), ("b", "Empty"), ("c", "Empty")]
    assert list(failures) == [3] and "does not support ListGroups" in failures[3]


def test_list_offsets_goes_to_each_leader():
    b1, b2 = FakeBroker(1), FakeBroker(2)

    def offsets(base):
        def handle(request, version):
            assert request.replica_id == -1
            cls = response_cls(2, version)
            return response(2, version, topics=tuple(
                nested(cls, "ListOffsetsTopicResponse", name=t.name, partitions=tuple(
                    nested(cls, "ListOffsetsPartitionResponse", partition_index=p.partition_index, error_code=ErrorCode.none,
                           timestamp=-1, offset=base + p.partition_index, leader_epoch=0) for p in t.partitions))
                for t in request.topics))
        return handle

    b1.handlers[2] = offsets(100)
    b2.handlers[2] = offsets(200)
    b2.down = 1
    leaders = {("t", 0): b1.address, ("t", 1): b2.address, ("t", 2): b1.address}
    with admin([b1, b2]) as groups:
        answers = groups.list_offsets(leaders, {tp: -1 for tp in leaders})
    assert answers == {("t", 0): (100, None), ("t", 2): (102, None), ("t", 1): (-1, "leader_not_reachable")}


def test_delete_groups_is_sent_once_when_it_succeeds():
    b1 = FakeBroker(1)
    coordinator_is(b1, b1)
    answers = {"gone": ErrorCode.none, "busy": ErrorCode.non_empty_group}

    def handle(request, version):
        cls = response_cls(42, version)
        return response(42, version, results=tuple(
            nested(cls, "DeletableGroupResult", group_id=g, error_code=answers[g]) for g in request.groups_names))

    b1.handlers[42] = handle
    with admin([b1]) as groups:
        assert groups.delete_groups(["gone", "busy"]) == {"gone": None, "busy": "non_empty_group"}
    assert [k for k, _, _ in b1.requests] == [10, 42]
