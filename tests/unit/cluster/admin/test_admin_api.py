"""The Admin API client and back end against brokers simulated at the wire
(support/wire_brokers.py): requests as a broker decodes them, answers as
literal kio entities, plus recorded bytes of requests kafkactl sends.
Checks routing (bootstrap, controller, the broker a config belongs to), the
bounded NOT_CONTROLLER retries, and how answers map to kafkactl's values."""

from __future__ import annotations

import datetime

import pytest
from kio.schema.errors import ErrorCode

from kafkactl.cluster.admin import admin_protocol as ap
from kafkactl.cluster.admin import configs
from kafkactl.cluster.admin.admin_backend import AdminApiBackend
from kafkactl.cluster.admin.admin_client import CONTROLLER_ATTEMPTS, AdminApiError, AdminClient, parse_bootstrap
from kafkactl.cluster.admin.backend import NewTopic, RefusedChange, TopicExists
from kafkactl.cluster.broker.broker_client import encode_request
from kafkactl.cluster.protocol.build import make, nested
from kafkactl.cluster.protocol.codec import response_class
from support.wire_brokers import Clock, FakeBroker, FakeSession

ZERO = datetime.timedelta(0)
ADMIN_VERSIONS = {3: (0, 12), 19: (2, 7), 20: (1, 6), 32: (1, 4), 37: (0, 3), 43: (0, 2), 44: (0, 1), 45: (0, 0),
                  46: (0, 0)}


def response(api_key, version, **fields):
    return make(response_class(api_key, version), throttle_time=ZERO, **fields)


class Cluster:
    """Three brokers; Metadata names them and `controller`, with topic t (2 partitions)."""

    def __init__(self, controller: int = 2) -> None:
        self.brokers = {i: FakeBroker(i, ADMIN_VERSIONS) for i in (1, 2, 3)}
        self.controller = controller
        for broker in self.brokers.values():
            broker.handlers[3] = self.metadata

    def metadata(self, request, version):
        cls = response_class(3, version)
        brokers = tuple(nested(cls, "MetadataResponseBroker", node_id=b.address.broker_id, host=b.address.host,
                               port=b.address.port, rack=None) for b in self.brokers.values())
        partitions = tuple(nested(cls, "MetadataResponsePartition", error_code=ErrorCode.none, partition_index=p,
                                  leader_id=leader, leader_epoch=4, replica_nodes=(leader, 3), isr_nodes=(leader,),
                                  offline_replicas=()) for p, leader in ((1, 2), (0, 1)))
        known = {"t": nested(cls, "MetadataResponseTopic", error_code=ErrorCode.none, name="t", topic_id=None,
                             is_internal=False, partitions=partitions)}
        names = [t.name for t in request.topics] if request.topics is not None else list(known)
        topics = tuple(known.get(n) or nested(cls, "MetadataResponseTopic", name=n, topic_id=None,
                                               error_code=ErrorCode.unknown_topic_or_partition, partitions=())
                       for n in names)
        return response(3, version, brokers=brokers, cluster_id="c", controller_id=self.controller, topics=topics)

    def client(self, timeout_s: float = 10.0, clock: Clock | None = None, bootstrap=(1,)) -> AdminClient:
        clock = clock or Clock()
        by_address = {(b.address.host, b.address.port): b for b in self.brokers.values()}
        return AdminClient([self.brokers[i].address for i in bootstrap], timeout_s,
                           connect=lambda address, _: FakeSession(by_address[(address.host, address.port)]),
                           clock=lambda: clock.now, sleep=clock.sleep)

    def backend(self, **kwargs) -> AdminApiBackend:
        return AdminApiBackend(self.client(**kwargs), 10.0)


def test_parse_bootstrap_keeps_order_and_strips_brackets():
    assert [(a.host, a.port) for a in parse_bootstrap("a:1, [::1]:9092")] == [("a", 1), ("::1", 9092)]


def test_metadata_maps_brokers_controller_and_partitions():
    cluster = Cluster(controller=3)
    found = cluster.client().metadata()
    assert (found.cluster_id, found.controller_id, sorted(found.brokers)) == ("c", 3, [1, 2, 3])
    [p0, p1] = found.topics["t"].partitions                  # sorted by partition, whatever the broker's order
    assert (p0.partition, p0.leader, p0.leader_epoch, p0.replicas, p0.isr) == (0, 1, 4, (1, 3), (1,))
    assert p1.leader == 2


def test_describe_topics_gives_partition_infos_and_none_for_unknown_topics():
    described = Cluster().backend().describe_topics(["t", "nope"])
    assert described["nope"] is None
    assert [p.to_dict() for p in described["t"]][0] == {"topic": "t", "partition": 0, "leader": 1, "leader_epoch": 4,
                                                         "replicas": [1, 3], "isr": [1]}


def test_a_dead_bootstrap_server_is_skipped_and_all_dead_is_one_clear_error():
    cluster = Cluster()
    cluster.brokers[1].down = 1
    assert cluster.client(bootstrap=(1, 2)).metadata().controller_id == 2
    cluster.brokers[1].down = cluster.brokers[2].down = 5
    with pytest.raises(AdminApiError, match="no broker answered.*h:9001: connection reset; h:9002"):
        cluster.client(bootstrap=(1, 2)).metadata()


def created(name: str, error=ErrorCode.none, message=None):
    def handle(request, version):
        cls = response_class(19, version)
        return response(19, version, topics=(nested(cls, "CreatableTopicResult", name=name, topic_id=None,
                                                    error_code=error, error_message=message, num_partitions=-1,
                                                    replication_factor=-1, configs=()),))
    return handle


def test_create_topics_goes_to_the_controller_with_the_planned_assignment():
    cluster = Cluster(controller=2)
    cluster.brokers[2].handlers[19] = created("t")      # Metadata already shows t: the wait ends at once
    backend = cluster.backend()
    topic = NewTopic("t", None, None, None, {"cleanup.policy": "compact"})
    assert backend.create_topic(topic, {0: [1, 2], 1: [2, 3]}) == {0: [1, 2], 1: [2, 3]}
    [(api_key, version, request)] = cluster.brokers[2].requests
    assert (api_key, version) == (19, 7)
    [sent] = request.topics
    assert (sent.num_partitions, sent.replication_factor) == (-1, -1)       # as Kafka requires with assignments
    assert [(a.partition_index, list(a.broker_ids)) for a in sent.assignments] == [(0, [1, 2]), (1, [2, 3])]
    assert [(c.name, c.value) for c in sent.configs] == [("cleanup.policy", "compact")]
    assert request.validate_only is False and request.timeout > ZERO


@pytest.mark.parametrize("error, raised", [(ErrorCode.topic_already_exists, TopicExists),
                                           (ErrorCode.invalid_replication_factor, RefusedChange),
                                           (ErrorCode.invalid_config, RefusedChange),
                                           (ErrorCode.request_timed_out, AdminApiError)])
def test_create_topics_errors_map_to_what_the_cli_reports(error, raised):
    cluster = Cluster(controller=2)
    cluster.brokers[2].handlers[19] = created("u", error, "why")
    with pytest.raises(raised):
        cluster.backend().create_topic(NewTopic("u", 1, 1, None, {}), {0: [1]})


def test_not_controller_refreshes_metadata_and_asks_the_new_controller():
    cluster = Cluster(controller=2)

    def moved(request, version):
        cluster.controller = 3                              # the next Metadata names the new one
        return created("t", ErrorCode.not_controller)(request, version)

    cluster.brokers[2].handlers[19] = moved
    cluster.brokers[3].handlers[19] = created("t")
    clock = Clock()
    cluster.backend(clock=clock).create_topic(NewTopic("t", 1, 1, None, {}), {0: [1]})
    assert [r[0] for r in cluster.brokers[3].requests] == [19] and clock.sleeps == [0.1]


def test_not_controller_forever_gives_up_after_a_bounded_number_of_attempts():
    cluster = Cluster(controller=2)
    cluster.brokers[2].handlers[19] = created("t", ErrorCode.not_controller)
    clock = Clock()
    with pytest.raises(AdminApiError, match="no controller took the request.*NOT_CONTROLLER"):
        cluster.backend(clock=clock).create_topic(NewTopic("t", 1, 1, None, {}), {0: [1]})
    assert sum(1 for r in cluster.brokers[2].requests if r[0] == 19) == CONTROLLER_ATTEMPTS
    assert sum(clock.sleeps) < 5


def test_a_missing_api_is_named():
    cluster = Cluster(controller=2)
    del cluster.brokers[2].versions[19]
    with pytest.raises(AdminApiError, match="does not support CreateTopics .API 19."):
        cluster.backend().create_topic(NewTopic("t", 1, 1, None, {}), {0: [1]})


def described(entries, resource_type=ap.BROKER_RESOURCE, name="1"):
    def handle(request, version):
        cls = response_class(32, version)
        configs_ = tuple(nested(cls, "DescribeConfigsResourceResult", name=key, value=value, read_only=False,
                                config_source=source, is_sensitive=False, config_type=0, documentation=None,
                                synonyms=tuple(nested(cls, "DescribeConfigsSynonym", name=key, value=v, source=s)
                                               for v, s in synonyms))
                         for key, value, source, synonyms in entries)
        return response(32, version, results=(nested(cls, "DescribeConfigsResult", error_code=ErrorCode.none,
                                                     error_message=None, resource_type=resource_type,
                                                     resource_name=request.resources[0].resource_name,
                                                     configs=configs_),))
    return handle


def test_broker_configs_take_each_level_from_the_entry_or_its_synonyms():
    cluster = Cluster()
    # log.retention.ms: set on broker 1 (2), shadowing the cluster-wide default (3); num.io.threads: static (4).
    entries = [("log.retention.ms", "5000", 2, [("5000", 2), ("6000", 3)]), ("num.io.threads", "8", 4, [])]
    for broker in cluster.brokers.values():
        broker.handlers[32] = described(entries)
    backend = cluster.backend()
    assert backend.broker_configs(1) == {"log.retention.ms": "5000"}
    assert backend.broker_configs(None) == {"log.retention.ms": "6000"}
    [(_, _, request)] = [r for r in cluster.brokers[1].requests if r[0] == 32][:1]
    assert request.include_synonyms is True


def test_alter_config_of_a_broker_goes_to_that_broker_with_set_and_delete():
    cluster = Cluster()
    cluster.brokers[3].handlers[32] = described([("log.retention.ms", "5000", 2, [])], name="3")

    def altered(request, version):
        cls = response_class(44, version)
        [resource] = request.resources
        return response(44, version, responses=(nested(cls, "AlterConfigsResourceResponse", error_code=ErrorCode.none,
                                                       error_message=None, resource_type=resource.resource_type,
                                                       resource_name=resource.resource_name),))

    cluster.brokers[3].handlers[44] = altered
    after = cluster.backend().alter_config(configs.broker_entity(3), {"num.io.threads": "4"}, ["log.retention.ms"])
    assert after == {"num.io.threads": "4"}
    [(_, _, request)] = [r for r in cluster.brokers[3].requests if r[0] == 44]
    [resource] = request.resources
    assert (resource.resource_type, resource.resource_name) == (ap.BROKER_RESOURCE, "3")
    assert [(c.name, int(c.config_operation), c.value) for c in resource.configs] == [
        ("num.io.threads", ap.SET, "4"), ("log.retention.ms", ap.DELETE, None)]


def test_deleting_a_key_that_is_not_set_is_refused_before_anything_is_sent():
    cluster = Cluster()
    cluster.brokers[1].handlers[32] = described([], ap.TOPIC_RESOURCE)
    with pytest.raises(RefusedChange, match="not set"):
        cluster.backend().alter_config(configs.topic_entity("t"), {}, ["retention.ms"])
    assert not any(r[0] == 44 for b in cluster.brokers.values() for r in b.requests)


def test_elect_leaders_maps_per_partition_results():
    cluster = Cluster(controller=2)

    def elected(request, version):
        cls = response_class(43, version)
        return response(43, version, error_code=ErrorCode.none, replica_election_results=(
            nested(cls, "ReplicaElectionResult", topic="t", partition_result=(
                nested(cls, "PartitionResult", partition_id=0, error_code=ErrorCode.none, error_message=None),
                nested(cls, "PartitionResult", partition_id=1, error_code=ErrorCode.election_not_needed,
                       error_message="leader is preferred"))),))

    cluster.brokers[2].handlers[43] = elected
    results = cluster.backend().elect(ap.PREFERRED, [("t", 1), ("t", 0)])
    assert results == {("t", 0): ap.Outcome(None), ("t", 1): ap.Outcome("election_not_needed", "leader is preferred")}
    [(_, version, request)] = cluster.brokers[2].requests[-1:]
    assert version == 2 and int(request.election_type) == ap.PREFERRED
    assert [(t.topic, list(t.partitions)) for t in request.topic_partitions] == [("t", [0, 1])]


def test_not_controller_is_found_at_any_depth():
    cls = response_class(43, 2)
    nested_error = response(43, 2, error_code=ErrorCode.none, replica_election_results=(
        nested(cls, "ReplicaElectionResult", topic="t", partition_result=(
            nested(cls, "PartitionResult", partition_id=0, error_code=ErrorCode.not_controller, error_message=None),)),))
    assert ap.find_error(nested_error, ap.NOT_CONTROLLER)
    assert not ap.find_error(response(43, 2, error_code=ErrorCode.none, replica_election_results=()), ap.NOT_CONTROLLER)


def test_list_reassignments_maps_adding_and_removing():
    cls = response_class(46, 0)
    answer = response(46, 0, error_code=ErrorCode.none, error_message=None, topics=(
        nested(cls, "OngoingTopicReassignment", name="t", partitions=(
            nested(cls, "OngoingPartitionReassignment", partition_index=0, replicas=(1, 2, 3), adding_replicas=(3,),
                   removing_replicas=(1,)),)),))
    assert ap.listed_reassignments(answer) == (ap.Outcome(None), {("t", 0): ap.Reassignment((1, 2, 3), (3,), (1,))})


# Recorded with kio (these bytes are what Kafka's brokers receive): a change
# to a builder that alters them is a change on the wire.
CREATE_TOPICS_V7 = bytes.fromhex(
    "00000059" "0013" "0007" "00000001" "0008" "6b61666b6163746c" "00"     # size, key 19, v7, correlation, client id
    "02" "0274" "ffffffff" "ffff"                                            # one topic "t", partitions -1, factor -1
    "03" "00000000" "03" "00000001" "00000002" "00"                          # assignments: 0 -> [1, 2]
    "00000001" "03" "00000002" "00000003" "00"                               #              1 -> [2, 3]
    "02" "0f" "636c65616e75702e706f6c696379" "08" "636f6d70616374" "00"      # configs: cleanup.policy=compact
    "00" "00007530" "00" "00")                                               # timeout 30000 ms, validate_only false


def test_create_topics_request_bytes_are_kafkas():
    request = ap.create_topics_request(7, "t", 2, 2, {0: [1, 2], 1: [2, 3]}, {"cleanup.policy": "compact"}, 30.0,
                                       False)
    assert encode_request(request, 1, "kafkactl") == CREATE_TOPICS_V7


def test_incremental_alter_configs_v0_request_is_not_flexible_and_v1_is():
    v0 = ap.incremental_alter_configs_request(0, (ap.TOPIC_RESOURCE, "t"), {"retention.ms": "1"}, [], True)
    v1 = ap.incremental_alter_configs_request(1, (ap.TOPIC_RESOURCE, "t"), {"retention.ms": "1"}, [], True)
    assert (type(v0).__flexible__, type(v1).__flexible__) == (False, True)
    assert v0.validate_only and v1.resources[0].configs[0].config_operation == ap.SET
