"""Reading reassignment and election plans: Kafka's JSON, every defect named."""

import json

import pytest

from kafkactl.cluster.admin.plan_file import (
    PlanEntry, PlanError, check_against_cluster, format_reassignment, parse_election_plan,
    parse_reassignment_plan,
)


def plan(*entries, **top):
    return json.dumps({"version": 1, "partitions": list(entries), **top})


def test_kafka_tool_plans_with_and_without_log_dirs_and_extra_keys():
    # Key order as Kafka's hash maps write it, log_dirs on one entry only,
    # and keys a planner may add (sizes, comments) at both levels.
    text = ('{"partitions":[{"replicas":[2,1],"partition":1,"topic":"t","log_dirs":["any","/data/ssd0"]},'
            '{"topic":"t","partition":0,"replicas":[3],"size_bytes":5}],"version":1,"planner":{"moves":2}}')
    entries = parse_reassignment_plan(text)
    assert entries == [PlanEntry("t", 1, (2, 1), ("any", "/data/ssd0")), PlanEntry("t", 0, (3,), None)]
    assert entries[0].explicit_log_dirs() == {1: "/data/ssd0"}


def test_a_plan_without_version_is_read_as_version_1_as_kafka_does():
    text = json.dumps({"partitions": [{"topic": "t", "partition": 0, "replicas": [2, 1]}]})
    assert parse_reassignment_plan(text) == [PlanEntry("t", 0, (2, 1), None)]


@pytest.mark.parametrize("text, fragment", [
    ("not json", "not JSON"),
    ("[1]", "expected a JSON object"),
    (plan(version=2), '"version" is 2'),
    (json.dumps({"version": 1}), 'missing key "partitions"'),
    (json.dumps({"version": 1, "partitions": {}}), '"partitions" must be a list'),
    (plan(), '"partitions" is empty'),
    (plan("x"), "partitions[0]: expected an object"),
    (plan({"partition": 0, "replicas": [1]}), 'partitions[0]: missing key "topic"'),
    (plan({"topic": 7, "partition": 0, "replicas": [1]}), 'partitions[0]: "topic" must be'),
    (plan({"topic": "t", "replicas": [1]}), 'partitions[0]: missing key "partition"'),
    (plan({"topic": "t", "partition": -1, "replicas": [1]}), '"partition" must be a partition number'),
    (plan({"topic": "t", "partition": True, "replicas": [1]}), '"partition" must be a partition number'),
    (plan({"topic": "t", "partition": 0}), "partitions[0] (topic 't' partition 0): missing key \"replicas\""),
    (plan({"topic": "t", "partition": 0, "replicas": []}), '"replicas" is empty'),
    (plan({"topic": "t", "partition": 0, "replicas": ["1"]}), '"replicas" must be a list of broker ids'),
    (plan({"topic": "t", "partition": 0, "replicas": [1, 2, 1]}), '"replicas" lists broker 1 more than once'),
    (plan({"topic": "t", "partition": 0, "replicas": [1, 2], "log_dirs": ["any"]}),
     '"log_dirs" has 1 entries for 2 replicas'),
    (plan({"topic": "t", "partition": 0, "replicas": [1], "log_dirs": "any"}), '"log_dirs" must be a list'),
    (plan({"topic": "t", "partition": 0, "replicas": [1], "log_dirs": ["ssd0"]}),
     "\"log_dirs\" entry 'ssd0' is neither"),
    (plan({"topic": "t", "partition": 0, "replicas": [1]}, {"topic": "t", "partition": 0, "replicas": [2]}),
     "partitions[1] (topic 't' partition 0): listed twice (also partitions[0])"),
])
def test_every_bad_plan_is_one_line_naming_the_entry_and_key(text, fragment):
    with pytest.raises(PlanError) as raised:
        parse_reassignment_plan(text, "p.json")
    message = str(raised.value)
    assert fragment in message and message.startswith("p.json: ") and "\n" not in message


def test_checks_against_the_cluster_name_the_entry():
    entries = parse_reassignment_plan(plan({"topic": "t", "partition": 0, "replicas": [1, 2]},
                                           {"topic": "t", "partition": 5, "replicas": [1]},
                                           {"topic": "u", "partition": 0, "replicas": [9]}))
    cases = [({"t": [0, 1], "u": [0]}, "partitions[1] (topic 't' partition 5): \"partition\": topic 't' has no partition 5"),
             ({"t": [0, 5], "u": None}, "partitions[2] (topic 'u' partition 0): \"topic\": topic 'u' does not exist"),
             ({"t": [0, 5], "u": [0]}, "partitions[2] (topic 'u' partition 0): \"replicas\": broker 9 is not registered"
                                       " (registered: 1, 2)")]
    for partitions, message in cases:
        with pytest.raises(PlanError, match=None) as raised:
            check_against_cluster(entries, partitions, [1, 2])
        assert message in str(raised.value)
    check_against_cluster(entries, {"t": [0, 5], "u": [0]}, [1, 2, 9])


def test_election_plans():
    assert parse_election_plan('{"partitions":[{"partition":1,"topic":"t"},{"topic":"u","partition":0}]}') == \
        [("t", 1), ("u", 0)]
    with pytest.raises(PlanError, match=r"partitions\[1\] \(topic 't' partition 1\): listed twice"):
        parse_election_plan('{"partitions":[{"partition":1,"topic":"t"},{"topic":"t","partition":1}]}')
    with pytest.raises(PlanError, match=r'partitions\[0\]: missing key "partition"'):
        parse_election_plan('{"partitions":[{"topic":"t"}]}')


def test_format_is_kafkas_and_reads_back():
    formatted = format_reassignment({("t", 1): [2, 3], ("t", 0): [1, 2]})
    assert formatted == {"version": 1, "partitions": [
        {"topic": "t", "partition": 0, "replicas": [1, 2], "log_dirs": ["any", "any"]},
        {"topic": "t", "partition": 1, "replicas": [2, 3], "log_dirs": ["any", "any"]}]}
    assert [e.replicas for e in parse_reassignment_plan(json.dumps(formatted))] == [(1, 2), (2, 3)]
