"""Kafka's per-topic decisions for CreateTopics, CreatePartitions and
DeleteTopics (admin/topic_requests.py), with literal inputs: each error,
in Kafka's order, and what is planned when nothing is refused."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from kafkactl.cluster.admin.replica_assignment import BrokerInfo
from kafkactl.cluster.admin.topic_requests import (
    MAX_NEW_PARTITIONS,
    CreateView,
    Deletion,
    NewPartitions,
    NewTopic,
    PartitionsView,
    PlannedTopic,
    Refusal,
    plan_deletions,
    plan_new_partitions,
    plan_new_topics,
)

BROKERS = (BrokerInfo(1), BrokerInfo(2), BrokerInfo(3))
VIEW = CreateView(BROKERS, in_metadata=frozenset({"known"}), in_zookeeper=frozenset({"known", "only-in-zk", "a.b"}),
                  marked_for_deletion=frozenset({"going"}), default_num_partitions=4, default_replication_factor=2)


def error_of(topic: NewTopic, view: CreateView = VIEW) -> ErrorCode:
    [plan] = plan_new_topics([topic], view)
    return plan.error if isinstance(plan, Refusal) else ErrorCode.none


def test_defaults_of_minus_one_come_from_the_broker_and_the_assignment_spreads_over_live_brokers():
    [plan] = plan_new_topics([NewTopic("fresh", -1, -1, configs=(("cleanup.policy", "compact"),))], VIEW)
    assert isinstance(plan, PlannedTopic)
    assert sorted(plan.assignment) == [0, 1, 2, 3] and plan.replication_factor == 2
    assert all(len(set(r)) == 2 and set(r) <= {1, 2, 3} for r in plan.assignment.values())
    assert {r[0] for r in plan.assignment.values()} == {1, 2, 3}    # leaders spread
    assert plan.config == {"cleanup.policy": "compact"}
    [given] = plan_new_topics([NewTopic("given", 2, -1)], VIEW)
    assert len(given.assignment) == 2 and given.replication_factor == 2


def test_an_explicit_assignment_is_kept_as_given():
    [plan] = plan_new_topics([NewTopic("fresh", -1, -1, assignments=((1, (3, 1)), (0, (2, 3))))], VIEW)
    assert plan.assignment == {0: [2, 3], 1: [3, 1]}


@pytest.mark.parametrize("topic,error", [
    (NewTopic("known", 1, 1), ErrorCode.topic_already_exists),              # in the metadata
    (NewTopic("only-in-zk", 1, 1), ErrorCode.topic_already_exists),         # in ZooKeeper only
    (NewTopic("going", 1, 1), ErrorCode.topic_already_exists),              # marked for deletion
    (NewTopic("a_b", 1, 1), ErrorCode.invalid_topic_exception),             # collides with a.b
    (NewTopic("", 1, 1), ErrorCode.invalid_topic_exception),
    (NewTopic("..", 1, 1), ErrorCode.invalid_topic_exception),
    (NewTopic("x" * 250, 1, 1), ErrorCode.invalid_topic_exception),
    (NewTopic("no/slash", 1, 1), ErrorCode.invalid_topic_exception),
    (NewTopic("t", 0, 1), ErrorCode.invalid_partitions),
    (NewTopic("t", -2, 1), ErrorCode.invalid_partitions),
    (NewTopic("t", 1, 0), ErrorCode.invalid_replication_factor),
    (NewTopic("t", 1, 4), ErrorCode.invalid_replication_factor),            # 3 live brokers
    (NewTopic("t", 2, -1, assignments=((0, (1,)),)), ErrorCode.invalid_request),     # counts and assignment
    (NewTopic("t", -1, 1, assignments=((0, (1,)),)), ErrorCode.invalid_request),
    (NewTopic("t", 1, 1, configs=(("retention.ms", None),)), ErrorCode.invalid_request),
    (NewTopic("t", -1, -1, assignments=((0, (1, 1)),)), ErrorCode.invalid_replica_assignment),       # twice
    (NewTopic("t", -1, -1, assignments=((0, (1, 2)), (1, (3,)))), ErrorCode.invalid_replica_assignment),  # uneven
    (NewTopic("t", -1, -1, assignments=((0, (1, 9)),)), ErrorCode.invalid_replica_assignment),       # unknown
    (NewTopic("t", -1, -1, assignments=((0, ()),)), ErrorCode.invalid_replica_assignment),           # empty
    (NewTopic("t", -1, -1, assignments=((0, (1,)), (2, (2,)))), ErrorCode.invalid_replica_assignment),  # gap
    (NewTopic("t", -1, -1, assignments=((0, (1,)), (0, (2,)))), ErrorCode.invalid_replica_assignment),  # index twice
    (NewTopic("t", 1, 1, configs=(("no.such.key", "1"),)), ErrorCode.invalid_config),
    (NewTopic("t", 1, 1, configs=(("retention.ms", "soon"),)), ErrorCode.invalid_config),
    (NewTopic("t", 1, 1, configs=(("cleanup.policy", "sometimes"),)), ErrorCode.invalid_config),
])
def test_each_refusal(topic, error):
    assert error_of(topic) == error


def test_kafkas_order_the_metadata_first_then_the_counts_then_the_name():
    assert error_of(NewTopic("known", 0, 1)) == ErrorCode.topic_already_exists
    assert error_of(NewTopic("bad name", 0, 1)) == ErrorCode.invalid_partitions
    assert error_of(NewTopic("bad name", 1, 1, configs=(("no.such.key", "1"),))) == ErrorCode.invalid_topic_exception


def test_a_topic_named_twice_is_refused_in_every_entry_and_the_others_are_planned():
    plans = plan_new_topics([NewTopic("d", 1, 1), NewTopic("ok", 1, 1), NewTopic("d", 2, 1)], VIEW)
    assert [p.error if isinstance(p, Refusal) else "planned" for p in plans] == \
        [ErrorCode.invalid_request, "planned", ErrorCode.invalid_request]


def test_partitions_beyond_the_request_budget_are_refused_before_anything_is_allocated():
    huge = NewTopic("huge", 2**31 - 1, 1)
    assert error_of(huge) == ErrorCode.invalid_partitions     # would take minutes and gigabytes otherwise
    plans = plan_new_topics([NewTopic("a", MAX_NEW_PARTITIONS - 1, 1), NewTopic("b", 2, 1), NewTopic("c", 1, 1)],
                            VIEW)
    assert [isinstance(p, PlannedTopic) for p in plans] == [True, False, True]
    assert plans[1].error == ErrorCode.invalid_partitions


# --- CreatePartitions

PARTITIONS_VIEW = PartitionsView(
    BROKERS,
    {"t": ({0: [2, 3], 1: [3, 1]}, False), "moving": ({0: [1, 2]}, True), "going": ({0: [1, 2]}, False)},
    frozenset({"going"}))


def partitions_error(request: NewPartitions) -> ErrorCode:
    plan = plan_new_partitions([request], PARTITIONS_VIEW)[request.name]
    return plan.error if isinstance(plan, Refusal) else ErrorCode.none


def test_new_partitions_continue_kafkas_assignment_from_partition_zeros_first_replica():
    plan = plan_new_partitions([NewPartitions("t", 5)], PARTITIONS_VIEW)["t"]
    # start index 1 (broker 2, the first id >= partition 0's leader 2), also the
    # first follower shift; leader of partition p: ids[(p + 1) % 3], the shift
    # growing at p = 3 (Kafka's AdminUtils, worked by hand)
    assert plan == {2: [1, 3], 3: [2, 3], 4: [3, 1]}


def test_explicit_new_partitions_are_numbered_after_the_existing_ones():
    assert plan_new_partitions([NewPartitions("t", 4, ((1, 2), (2, 3)))], PARTITIONS_VIEW)["t"] == \
        {2: [1, 2], 3: [2, 3]}


@pytest.mark.parametrize("request_,error", [
    (NewPartitions("going", 3), ErrorCode.invalid_topic_exception),
    (NewPartitions("moving", 3), ErrorCode.reassignment_in_progress),
    (NewPartitions("absent", 3), ErrorCode.unknown_topic_or_partition),
    (NewPartitions("t", 1), ErrorCode.invalid_partitions),
    (NewPartitions("t", 2), ErrorCode.invalid_partitions),
    (NewPartitions("t", 2**31 - 1), ErrorCode.invalid_partitions),
    (NewPartitions("t", 3, ((1, 9),)), ErrorCode.invalid_replica_assignment),       # unknown broker
    (NewPartitions("t", 4, ((1, 2),)), ErrorCode.invalid_replica_assignment),       # one of two
    (NewPartitions("t", 3, ((1, 1),)), ErrorCode.invalid_replica_assignment),       # twice
    (NewPartitions("t", 3, ((1,),)), ErrorCode.invalid_replica_assignment),         # factor 1, not 2
    (NewPartitions("t", 3, ((),)), ErrorCode.invalid_replica_assignment),
])
def test_each_partitions_refusal(request_, error):
    assert partitions_error(request_) == error


def test_a_partitions_request_needing_more_brokers_than_registered_is_invalid_replication_factor():
    view = PartitionsView((BrokerInfo(1),), PARTITIONS_VIEW.topics, frozenset())
    assert plan_new_partitions([NewPartitions("t", 3)], view)["t"].error == ErrorCode.invalid_replication_factor


def test_a_topic_named_twice_in_create_partitions_gets_one_invalid_request():
    plans = plan_new_partitions([NewPartitions("t", 3), NewPartitions("t", 4)], PARTITIONS_VIEW)
    assert list(plans) == ["t"] and plans["t"].error == ErrorCode.invalid_request


# --- DeleteTopics

IDS = {"a": "id-a", "b": None, "__consumer_offsets": "id-o"}


def test_deletions_by_name_and_by_id():
    plan = plan_deletions([("a", None), (None, "id-a"), ("zz", None), (None, "id-zz"), ("__consumer_offsets", None)],
                          IDS, version=6, delete_enabled=True)
    assert plan == [Deletion("a", None, None), Deletion("a", "id-a", None),
                    Deletion("zz", None, ErrorCode.unknown_topic_or_partition),
                    Deletion(None, "id-zz", ErrorCode.unknown_topic_id),
                    Deletion("__consumer_offsets", None, ErrorCode.invalid_topic_exception)]


def test_deletion_disabled_is_invalid_request_before_v3():
    assert {d.error for d in plan_deletions([("a", None)], IDS, 2, False)} == {ErrorCode.invalid_request}
    assert {d.error for d in plan_deletions([("a", None)], IDS, 3, False)} == {ErrorCode.topic_deletion_disabled}


def test_a_name_and_an_id_in_one_entry_refuse_the_whole_request():
    plan = plan_deletions([("a", None), ("b", "id-a")], IDS, 6, True)
    assert {d.error for d in plan} == {ErrorCode.invalid_request}
