"""Every read command understands a ZooKeeper tree written the way Apache
Kafka writes it: the JSON examples of shared/reference/zookeeper-layout.md
with their keys in another order, a topic in the version-1 format (only
`partitions`), a version-3 topic with a topic id and a reassignment in flight,
an offline partition, an unclean leader (leader_recovery_state), a broker
with a rack and one without, under a chroot. No broker process runs: commands
that ask brokers report them per replica instead of failing."""


import pytest

from kafkactl.cluster.local.ports import free_loopback_ports
from kafkactl.cluster.zk import client as zk_client

CHROOT = "/kafka"


def kafka_tree(port_1: int, port_2: int) -> dict[str, str]:
    broker_1 = ('{"endpoints":["PLAINTEXT://127.0.0.1:%d"],"port":%d,"version":5,"jmx_port":-1,"host":"127.0.0.1",'
                '"features":{},"timestamp":"1725032975661","rack":"r1",'
                '"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"}}') % (port_1, port_1)
    broker_2 = ('{"version":5,"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"host":"127.0.0.1",'
                '"features":{},"port":%d,"timestamp":"1725032975662","jmx_port":-1,'
                '"endpoints":["PLAINTEXT://127.0.0.1:%d"]}') % (port_2, port_2)
    return {
        "/controller": '{"timestamp":"1590000000000","brokerid":2,"version":1}',
        "/controller_epoch": "7",
        "/brokers/ids/1": broker_1,
        "/brokers/ids/2": broker_2,
        "/brokers/topics/old": '{"partitions":{"1":[2,1],"0":[1,2]},"version":1}',
        "/brokers/topics/old/partitions/0/state":
            '{"isr":[1,2],"leader_epoch":4,"version":1,"leader":1,"controller_epoch":7}',
        "/brokers/topics/old/partitions/1/state":
            '{"leader":2,"controller_epoch":6,"isr":[2],"version":1,"leader_epoch":0}',
        "/brokers/topics/new": ('{"topic_id":"cMr3GpVESX2L3byPGf93lQ","removing_replicas":{"1":[3]},'
                                '"partitions":{"0":[2,3,1],"1":[1,2,3]},"version":3,"adding_replicas":{"1":[2]}}'),
        "/brokers/topics/new/partitions/0/state":
            '{"version":1,"controller_epoch":7,"leader":-1,"leader_epoch":3,"isr":[3]}',
        "/brokers/topics/new/partitions/1/state":
            '{"leader_recovery_state":1,"leader":1,"isr":[1],"version":1,"leader_epoch":9,"controller_epoch":7}',
        "/config/topics/old": '{"config":{"retention.ms":"86400000","min.insync.replicas":"2"},"version":1}',
        "/config/topics/new": '{"version":1,"config":{}}',
        "/config/brokers/<default>": '{"config":{"leader.replication.throttled.rate":"1000000"},"version":1}',
        "/admin/reassign_partitions": '{"partitions":[{"replicas":[1,2],"partition":1,"topic":"new"}],"version":1}',
        "/cluster/id": '{"id":"cMr3GpVESX2L3byPGf93lQ","version":"1"}',
    }


@pytest.fixture(scope="module")
def kafka_zookeeper(zookeeper_server):
    """The tree under a chroot of the shared server; its connect string."""
    port_1, port_2 = free_loopback_ports(2)          # nothing listens there
    client = zk_client.connect(zookeeper_server)
    try:
        for path, data in kafka_tree(port_1, port_2).items():
            client.create(CHROOT + path, data.encode(), makepath=True)
    finally:
        zk_client.close(client)
    return f"{zookeeper_server}{CHROOT}"


@pytest.fixture
def kafka(real_cli, kafka_zookeeper):
    def run(*args: str):
        result = real_cli("-z", kafka_zookeeper, "--timeout", "5", *args)
        assert result.code in (0, 1), f"kafkactl {' '.join(args)}: {result.err}"
        return result
    return run


def by_partition(rows: list[dict]) -> dict[tuple[str, int], dict]:
    return {(r["topic"], r["partition"]): r for r in rows}


def test_topics_list_and_describe(kafka):
    assert kafka("topics", "list", "-o", "json").json() == ["new", "old"]
    rows = by_partition(kafka("topics", "describe", "-o", "json").json())
    assert {k: (r["leader"], r["leader_epoch"], r["replicas"], r["isr"]) for k, r in rows.items()} == {
        ("old", 0): (1, 4, [1, 2], [1, 2]),
        ("old", 1): (2, 0, [2, 1], [2]),
        ("new", 0): (-1, 3, [2, 3, 1], [3]),
        ("new", 1): (1, 9, [1, 2, 3], [1]),
    }
    assert rows[("old", 1)]["min_insync_replicas"] == 2          # from /config/topics/old
    offline = kafka("topics", "describe", "--unavailable-partitions", "-o", "json")
    assert offline.code == 1 and [(r["topic"], r["partition"]) for r in offline.json()] == [("new", 0)]
    under_min = kafka("topics", "describe", "--under-min-isr-partitions", "-o", "json").json()
    assert {(r["topic"], r["partition"]) for r in under_min} == {("old", 1), ("new", 0)}


def test_isr_summary_and_unreachable_brokers(kafka):
    report = kafka("isr", "-o", "json").json()
    assert report["summary"] == {"partitions": 4, "under_replicated": 3, "under_min_isr": 2, "offline": 1}
    rows = by_partition(report["partitions"])
    problems = {o["broker_id"]: o["problem"] for o in rows[("new", 1)]["out_of_isr"]}
    assert "not registered" in problems[3] and "did not answer" in problems[2]
    assert rows[("old", 0)]["out_of_isr"] == []


def test_brokers_and_controller(kafka):
    brokers = {b["id"]: b for b in kafka("brokers", "list", "-o", "json").json()}
    assert brokers[1]["rack"] == "r1" and brokers[2]["rack"] is None
    assert [b for b, info in brokers.items() if info["controller"]] == [2]
    assert brokers[1]["leader_count"] == 2 and brokers[2]["leader_count"] == 1
    assert brokers[1]["registered_ms"] == 1725032975661
    assert "did not answer" in brokers[1]["log_dirs_error"]
    described = kafka("brokers", "describe", "2", "-o", "json").json()
    assert described["id"] == 2 and described["controller"] is True
    assert kafka("controller", "show", "-o", "json").json() == {
        "controller_id": 2, "controller_epoch": 7, "elected_ms": 1590000000000}


def test_configs_and_reassignment_status(kafka):
    old = {c["key"]: (c["value"], c["source"]) for c in kafka("configs", "describe", "--topic", "old", "-o", "json").json()}
    assert old["retention.ms"] == ("86400000", "override") and old["min.insync.replicas"] == ("2", "override")
    assert old["cleanup.policy"] == ("delete", "default")
    default = kafka("configs", "describe", "--broker-default", "-o", "json").json()
    assert [(c["key"], c["value"]) for c in default] == [("leader.replication.throttled.rate", "1000000")]
    [moving] = kafka("reassign", "status", "-o", "json").json()
    assert (moving["topic"], moving["partition"], moving["target"], moving["adding"], moving["removing"]) == \
        ("new", 1, [1, 2], [2], [3])


# Packages a simple command must not load: each costs 0.1-1 s of start-up
# (pyspark, pandas and pyarrow are the planner's; the client libraries and
# paramiko serve other commands). The start-up time itself is measured by
# bench/cli_startup.py, not timed here.
HEAVY_PACKAGES = {"pyspark", "pandas", "pyarrow", "numpy", "confluent_kafka", "kafka", "paramiko",
                  "ansible", "pydantic", "kio"}


def test_a_simple_command_loads_no_heavy_package(real_cli, kafka_zookeeper):
    done = real_cli.ok("-z", kafka_zookeeper, "topics", "list", extra_env={"PYTHONPROFILEIMPORTTIME": "1"})
    imported = {line.split("|")[-1].strip().split(".")[0]
                for line in done.err.splitlines() if line.startswith("import time:")}
    assert "kazoo" in imported, "the import trace was not captured"
    assert not imported & HEAVY_PACKAGES, sorted(imported & HEAVY_PACKAGES)
