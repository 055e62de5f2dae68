import json

import pytest

from kafkactl.cluster.zk import codecs


def test_broker_registration_is_kafkas_version_5():
    data = codecs.encode_broker(codecs.BrokerRegistration(1, "h", 9092, ("PLAINTEXT://h:9092",), rack="r1", timestamp_ms=5))
    value = json.loads(data)
    assert value["version"] == 5 and value["timestamp"] == "5" and value["rack"] == "r1"
    assert value["endpoints"] == ["PLAINTEXT://h:9092"]
    assert value["listener_security_protocol_map"] == {"PLAINTEXT": "PLAINTEXT"}
    assert "rack" not in json.loads(codecs.encode_broker(codecs.BrokerRegistration(1, "h", 1, ("PLAINTEXT://h:1",))))


def test_decode_broker_as_kafka_writes_it():
    kafka = b'{"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"endpoints":["PLAINTEXT://h:9092"],"jmx_port":-1,"features":{},"host":"h","timestamp":"1725032975661","port":9092,"version":5}'
    registration = codecs.decode_broker(2, kafka, czxid=77)
    assert (registration.host, registration.port, registration.broker_epoch) == ("h", 9092, 77)


def test_topic_round_trip_and_version_1():
    assignment = codecs.TopicAssignment({0: [2, 3, 1], 1: [3, 1, 2]}, topic_id=codecs.new_topic_id())
    decoded = codecs.decode_topic("t", codecs.encode_topic(assignment))
    assert decoded == assignment
    assert json.loads(codecs.encode_topic(assignment))["partitions"] == {"0": [2, 3, 1], "1": [3, 1, 2]}
    old = codecs.decode_topic("t", b'{"version":1,"partitions":{"0":[1]}}')
    assert old.partitions == {0: [1]} and old.topic_id is None


def test_topic_id_is_22_chars_base64url():
    topic_id = codecs.new_topic_id()
    assert len(topic_id) == 22
    assert codecs.topic_id_to_string(codecs.topic_id_from_string(topic_id)) == topic_id


def test_partition_state_round_trip_any_key_order():
    kafka = b'{"isr":[2,3,1],"leader_epoch":0,"version":1,"leader":2,"controller_epoch":1}'
    state = codecs.decode_partition_state("p", kafka, zk_version=4)
    assert (state.leader, state.isr, state.zk_version) == (2, [2, 3, 1], 4)
    assert codecs.decode_partition_state("p", codecs.encode_partition_state(state), 4) == state
    unclean = codecs.PartitionState(1, 2, [1], 1, leader_recovery_state=1)
    assert json.loads(codecs.encode_partition_state(unclean))["leader_recovery_state"] == 1


@pytest.mark.parametrize("state", [
    codecs.PartitionState(2, 0, [2, 3, 1], 1), codecs.PartitionState(-1, 7, [], 3),
    codecs.PartitionState(5, 2**31 - 1, [5], 2**31 - 1, leader_recovery_state=1),
])
def test_partition_state_is_written_as_json_dumps_would(state):
    value = {"controller_epoch": state.controller_epoch, "leader": state.leader, "version": 1,
             "leader_epoch": state.leader_epoch, "isr": list(state.isr)}
    if state.leader_recovery_state:
        value["leader_recovery_state"] = state.leader_recovery_state
    assert codecs.encode_partition_state(state) == json.dumps(value, separators=(",", ":")).encode()


@pytest.mark.parametrize("data,field", [
    (b"not json", "not JSON"),
    (b'{"leader":1,"leader_epoch":0,"controller_epoch":1}', "isr"),
    (b'{"leader":"1","leader_epoch":0,"isr":[],"controller_epoch":1}', "leader"),
    (b'{"leader":1,"leader_epoch":0,"isr":["a"],"controller_epoch":1}', "isr"),
])
def test_bad_partition_state_names_the_field(data, field):
    with pytest.raises(codecs.ZnodeFormatError, match=field):
        codecs.decode_partition_state("/brokers/topics/t/partitions/0/state", data)


def test_small_znodes():
    assert codecs.decode_controller(codecs.encode_controller(2, 9)) == 2
    assert json.loads(codecs.encode_controller(2, 9))["timestamp"] == "9"
    assert codecs.decode_controller_epoch(b"5") == 5
    assert json.loads(codecs.encode_cluster_id("abc")) == {"version": "1", "id": "abc"}
    assert codecs.decode_entity_config("c", codecs.encode_entity_config({"retention.ms": 5})) == {"retention.ms": "5"}
    assert codecs.decode_config_change(codecs.encode_config_change("topics/t")) == "topics/t"
    assert codecs.decode_partition_list("x", codecs.encode_partition_list([("t", 1)])) == [("t", 1)]
    assert codecs.decode_reassignment(codecs.encode_reassignment({("t", 0): [1, 2]})) == {("t", 0): [1, 2]}


def test_producer_id_blocks_follow_each_other():
    first = codecs.next_producer_id_block(None, 1)
    assert (first.block_start, first.block_end) == (0, 999)
    stored = codecs.decode_producer_id_block(codecs.encode_producer_id_block(first))
    second = codecs.next_producer_id_block(stored, 2)
    assert (second.block_start, second.block_end, second.broker_id) == (1000, 1999, 2)
    assert json.loads(codecs.encode_producer_id_block(first))["block_start"] == "0"
