"""The Admin API handlers in every version they serve, answers encoded and
decoded again as a client reads them: the ACL APIs (SECURITY_DISABLED),
DescribeCluster, the config changes refused before any ZooKeeper work,
the controller's requests on a broker that is not the controller and on
one that is (its answer given by a stand-in controller), DeleteRecords'
refusals."""

from types import SimpleNamespace

import pytest
from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker.broker_client import decode_response
from kafkactl.cluster.broker.deferred import PendingAnswer
from kafkactl.cluster.broker.handlers import (
    alter_configs, alter_partition_reassignments, create_acls, delete_acls, delete_records, describe_acls,
    describe_cluster, elect_leaders, incremental_alter_configs, list_partition_reassignments,
)
from kafkactl.cluster.controller.model import ReplicaAssignment, TopicPartition
from kafkactl.cluster.protocol import apis
from kafkactl.cluster.protocol.build import make, nested
from kafkactl.cluster.protocol.codec import encode_response, request_class, response_class
from kafkactl.cluster.zk.codecs import BrokerRegistration, TopicAssignment


def versions(api_key):
    supported = apis.SUPPORTED[api_key]
    return list(range(supported.implemented_min, supported.advertised_max + 1))


def services(controller=None):
    brokers = {b: BrokerRegistration(b, "h", 9000 + b, (f"PLAINTEXT://h:{9000 + b}",), rack="r1" if b == 1 else None)
               for b in (1, 2)}
    snapshot = SimpleNamespace(cluster_id="c-id", controller_id=2, brokers=brokers, topics={
        "t": SimpleNamespace(assignment=TopicAssignment({0: [1, 2], 1: [2, 1]}))})
    snapshot.leader_of = lambda topic, partition: -1
    metadata = SimpleNamespace(snapshot=snapshot, controller_updated=lambda: True)
    return SimpleNamespace(config=SimpleNamespace(broker_id=1), metadata=metadata,
                           controller=controller, admin_work=None,
                           replica_manager=SimpleNamespace(get=lambda topic, index: None,
                                                            offline_partitions=frozenset()))


def roundtrip(api_key, version, handler, svc, **fields):
    request_cls = request_class(api_key, version)
    response = handler(svc, SimpleNamespace(api_version=version), make(request_cls, **fields))
    if isinstance(response, PendingAnswer):
        response = response.answer()
    frame = encode_response(response, correlation_id=5)
    return decode_response(frame[4:], response_class(api_key, version), 5)


def request_nested(api_key, version, class_name, /, **fields):
    return nested(request_class(api_key, version), class_name, **fields)


@pytest.mark.parametrize("version", versions(apis.DESCRIBE_ACLS))
def test_acl_apis_answer_security_disabled(version):
    described = roundtrip(29, version, describe_acls.handle, services(), resource_type_filter=1,
                          resource_name_filter=None, pattern_type_filter=1, principal_filter=None,
                          host_filter=None, operation=1, permission_type=1)
    assert (described.error_code, described.resources) == (ErrorCode.security_disabled, ())
    assert described.error_message == "No Authorizer is configured on the broker"
    creation = request_nested(30, version, "AclCreation", resource_type=2, resource_name="t",
                              resource_pattern_type=3, principal="User:a", host="*", operation=3, permission_type=3)
    created = roundtrip(30, version, create_acls.handle, services(), creations=(creation, creation))
    assert [r.error_code for r in created.results] == [ErrorCode.security_disabled] * 2
    acl_filter = request_nested(31, version, "DeleteAclsFilter", resource_type_filter=1, resource_name_filter=None,
                                pattern_type_filter=1, principal_filter=None, host_filter=None, operation=1,
                                permission_type=1)
    deleted = roundtrip(31, version, delete_acls.handle, services(), filters=(acl_filter,))
    assert [(r.error_code, r.matching_acls) for r in deleted.filter_results] == [(ErrorCode.security_disabled, ())]


@pytest.mark.parametrize("version", versions(apis.DESCRIBE_CLUSTER))
def test_describe_cluster_from_the_metadata_snapshot(version):
    answer = roundtrip(60, version, describe_cluster.handle, services(), include_cluster_authorized_operations=False,
                       endpoint_type=1)
    assert (answer.error_code, answer.cluster_id, answer.controller_id) == (ErrorCode.none, "c-id", 2)
    assert [(b.broker_id, b.host, b.port, b.rack) for b in answer.brokers] == [(1, "h", 9001, "r1"),
                                                                               (2, "h", 9002, None)]
    assert answer.cluster_authorized_operations == -2**31
    asked = roundtrip(60, version, describe_cluster.handle, services(), include_cluster_authorized_operations=True)
    assert asked.cluster_authorized_operations == describe_cluster.CLUSTER_OPERATIONS


def test_describe_cluster_is_held_until_the_controllers_first_update():
    svc = services()
    waited = []
    svc.metadata.controller_updated = lambda: False
    svc.metadata.wait_for_controller_update = lambda: waited.append(True) or True
    answer = roundtrip(60, 1, describe_cluster.handle, svc, include_cluster_authorized_operations=False)
    assert waited == [True] and len(answer.brokers) == 2


def test_describe_cluster_refuses_the_controller_endpoint_type():
    answer = roundtrip(60, 1, describe_cluster.handle, services(), include_cluster_authorized_operations=False,
                       endpoint_type=2)
    assert answer.error_code == ErrorCode.unsupported_endpoint_type and answer.brokers == ()


@pytest.mark.parametrize("api_key, handler", [(33, alter_configs.handle), (44, incremental_alter_configs.handle)])
def test_config_changes_refused_before_any_zookeeper_work_in_every_version(api_key, handler):
    for version in versions(api_key):
        value = {"value": "1", "config_operation": 0}
        config = request_nested(api_key, version, "AlterableConfig", name="log.retention.ms", **value)
        resources = tuple(request_nested(api_key, version, "AlterConfigsResource", resource_type=t, resource_name=n,
                                         configs=(config,)) for t, n in ((4, "2"), (8, "1"), (2, "a/b")))
        answer = roundtrip(api_key, version, handler, services(), resources=resources, validate_only=False)
        assert [(r.resource_type, r.resource_name, r.error_code) for r in answer.responses] == [
            (4, "2", ErrorCode.invalid_request), (8, "1", ErrorCode.invalid_request),
            (2, "a/b", ErrorCode.unknown_topic_or_partition)]


@pytest.mark.parametrize("version", versions(apis.ELECT_LEADERS))
def test_elect_leaders_elsewhere_than_on_the_controller_is_not_controller_per_partition(version):
    asked = (request_nested(43, version, "TopicPartitions", topic="t", partitions=(1, 0)),)
    answer = roundtrip(43, version, elect_leaders.handle, services(), election_type=0, topic_partitions=asked,
                       timeout=1000)
    [result] = answer.replica_election_results
    assert result.topic == "t" and [(p.partition_id, p.error_code) for p in result.partition_result] == [
        (0, ErrorCode.not_controller), (1, ErrorCode.not_controller)]
    every = roundtrip(43, version, elect_leaders.handle, services(), election_type=0, topic_partitions=None,
                      timeout=1000)
    assert sum(len(r.partition_result) for r in every.replica_election_results) == 2


class StandIn:
    """A controller that answers every Admin request at once with `answer`."""

    def __init__(self, answer) -> None:
        self.answer = answer
        self.events = []

    def is_active(self) -> bool:
        return True

    def admin_request(self, event) -> None:
        self.events.append(event)
        event.reply(self.answer)


def test_elect_leaders_on_the_controller_waits_for_the_metadata_and_leaves_out_unneeded_ones():
    controller = StandIn({TopicPartition("t", 0): (ErrorCode.none, None, 2),
                          TopicPartition("t", 1): (ErrorCode.election_not_needed, None, -1)})
    svc = services(controller)
    svc.metadata.snapshot.leader_of = lambda topic, partition: 2
    answer = roundtrip(43, 2, elect_leaders.handle, svc, election_type=1, topic_partitions=None, timeout=1000)
    [result] = answer.replica_election_results
    assert [(p.partition_id, p.error_code) for p in result.partition_result] == [(0, ErrorCode.none)]
    assert controller.events[0].partitions is None and controller.events[0].unclean
    # A leader the metadata never shows: REQUEST_TIMED_OUT at the request's timeout.
    svc.metadata.snapshot.leader_of = lambda topic, partition: 1
    asked = (request_nested(43, 2, "TopicPartitions", topic="t", partitions=(0,)),)
    late = roundtrip(43, 2, elect_leaders.handle, svc, election_type=0, topic_partitions=asked, timeout=100)
    assert late.replica_election_results[0].partition_result[0].error_code == ErrorCode.request_timed_out


def test_reassignment_requests_on_and_off_the_controller():
    partition = request_nested(45, 0, "ReassignablePartition", partition_index=0, replicas=(2, 1))
    topics = (request_nested(45, 0, "ReassignableTopic", name="t", partitions=(partition,)),)
    off = roundtrip(45, 0, alter_partition_reassignments.handle, services(), timeout=1000, topics=topics)
    assert (off.error_code, off.responses) == (ErrorCode.not_controller, ())
    controller = StandIn({TopicPartition("t", 0): (ErrorCode.no_reassignment_in_progress, None)})
    on = roundtrip(45, 0, alter_partition_reassignments.handle, services(controller), timeout=1000, topics=topics)
    assert on.error_code == ErrorCode.none
    assert [(p.partition_index, p.error_code) for p in on.responses[0].partitions] == [
        (0, ErrorCode.no_reassignment_in_progress)]
    assert controller.events[0].targets == ((TopicPartition("t", 0), (2, 1)),)

    listed_off = roundtrip(46, 0, list_partition_reassignments.handle, services(), timeout=1000, topics=None)
    assert listed_off.error_code == ErrorCode.not_controller
    moving = StandIn({TopicPartition("t", 1): ReplicaAssignment((3, 1, 2), adding=(3,), removing=(2,))})
    listed = roundtrip(46, 0, list_partition_reassignments.handle, services(moving), timeout=1000, topics=None)
    [topic] = listed.topics
    [p] = topic.partitions
    assert (topic.name, p.partition_index, p.replicas, p.adding_replicas, p.removing_replicas) == (
        "t", 1, (3, 1, 2), (3,), (2,))
    resigned = StandIn(None)          # preempted: the controller resigned meanwhile
    gone = roundtrip(46, 0, list_partition_reassignments.handle, services(resigned), timeout=1000, topics=None)
    assert gone.error_code == ErrorCode.not_controller


@pytest.mark.parametrize("version", versions(apis.DELETE_RECORDS))
def test_delete_records_refusals_in_every_version(version):
    topics = tuple(request_nested(21, version, "DeleteRecordsTopic", name=name, partitions=(
        request_nested(21, version, "DeleteRecordsPartition", partition_index=0, offset=5),))
        for name in ("t", "nope", "__consumer_offsets"))
    answer = roundtrip(21, version, delete_records.handle, services(), topics=topics, timeout=1000)
    assert {t.name: (t.partitions[0].error_code, t.partitions[0].low_watermark) for t in answer.topics} == {
        "t": (ErrorCode.not_leader_or_follower, -1), "nope": (ErrorCode.unknown_topic_or_partition, -1),
        "__consumer_offsets": (ErrorCode.invalid_topic_exception, -1)}
