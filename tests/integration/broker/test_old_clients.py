"""A 2.x-era client against the broker: kafka-python 1.4.7, pinned by tools of
that era (kafka-utils), in a venv of its own. It produces, consumes with
assign() and asks for watermarks, with ListOffsets v0 through its SimpleClient
as kafka-utils' kafka-check does. The versions this broker cannot serve
(Produce v0-2, Fetch v0-3: message formats 0 and 1), sent by SimpleClient or
by a client pinned to api_version=(0, 10, 1), get UNSUPPORTED_VERSION, which
kafka-python raises as UnsupportedVersionError, on a connection that stays
open."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

OLD_CLIENT = """
import json, sys
from kafka import KafkaConsumer, KafkaProducer, SimpleClient, TopicPartition
from kafka.structs import OffsetRequestPayload
bootstrap, topic = sys.argv[1], sys.argv[2]
producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
offsets = [producer.send(topic, value=b"old-%d" % i, partition=0).get(timeout=30).offset for i in range(10)]
producer.close()
consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=3000)
tp = TopicPartition(topic, 0)
consumer.assign([tp])
consumer.seek_to_beginning(tp)
values = [m.value.decode() for m in consumer]
end, begin = consumer.end_offsets([tp])[tp], consumer.beginning_offsets([tp])[tp]
consumer.close()
client = SimpleClient(bootstrap)
latest = client.send_offset_request([OffsetRequestPayload(topic, 0, -1, 1)])[0]
earliest = client.send_offset_request([OffsetRequestPayload(topic, 0, -2, 1)])[0]
client.close()
print(json.dumps({"offsets": offsets, "values": values, "end": end, "begin": begin,
                  "v0": [list(latest.offsets), list(earliest.offsets), latest.error, earliest.error]}))
"""

OLD_PROTOCOL = """
import json, sys, time
from kafka import KafkaConsumer, KafkaProducer, SimpleClient, TopicPartition
from kafka.errors import UnsupportedVersionError
from kafka.protocol.message import Message
from kafka.structs import FetchRequestPayload, OffsetRequestPayload, ProduceRequestPayload
bootstrap, topic = sys.argv[1], sys.argv[2]
tp = TopicPartition(topic, 0)
producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
producer.send(topic, value=b"current", partition=0).get(timeout=30)
producer.close()
client = SimpleClient(bootstrap)
[produced] = client.send_produce_request([ProduceRequestPayload(topic, 0, [Message(b"v0")])], fail_on_error=False)
[fetched] = client.send_fetch_request([FetchRequestPayload(topic, 0, 0, 1024)], fail_on_error=False)
[latest] = client.send_offset_request([OffsetRequestPayload(topic, 0, -1, 1)])
client.close()
pinned = KafkaProducer(bootstrap_servers=bootstrap, api_version=(0, 10, 1), retries=0)
try:
    pinned.send(topic, value=b"pinned", partition=0).get(timeout=30)
    pinned_produce = "sent"
except UnsupportedVersionError:
    pinned_produce = "UnsupportedVersionError"
pinned.close()
consumer = KafkaConsumer(bootstrap_servers=bootstrap, api_version=(0, 10, 1), enable_auto_commit=False)
consumer.assign([tp])
consumer.seek(tp, 0)
pinned_fetch, deadline = "nothing", time.time() + 20
while pinned_fetch == "nothing" and time.time() < deadline:
    try:
        pinned_fetch = "records" if consumer.poll(timeout_ms=500) else "nothing"
    except UnsupportedVersionError:
        pinned_fetch = "UnsupportedVersionError"
consumer.close()
print(json.dumps({"simple": [produced.error, fetched.error, fetched.messages and list(fetched.messages),
                             list(latest.offsets)],
                  "pinned": [pinned_produce, pinned_fetch]}))
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from kafkactl.cluster.local import LocalCluster

    local = LocalCluster(tmp_path_factory.mktemp("old-clients") / "cluster")
    try:
        yield local.up(brokers=1, overrides={"auto.create.topics.enable": "true", "num.partitions": "1"})
    finally:
        local.down()


@pytest.fixture(scope="module")
def old_kafka_python(tmp_path_factory) -> str:
    venv = tmp_path_factory.mktemp("kafka-python-1.4.7") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check",
                    "kafka-python==1.4.7"], check=True, timeout=300, capture_output=True)
    return str(venv / "bin" / "python")


def run_old_client(python: str, script: str, bootstrap: str, topic: str) -> dict:
    run = subprocess.run([python, "-c", script, bootstrap, topic], capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_kafka_python_1_4_7_produces_consumes_and_reads_watermarks_with_v0(cluster, old_kafka_python):
    result = run_old_client(old_kafka_python, OLD_CLIENT, cluster.bootstrap_servers, "old-client")
    assert result["offsets"] == list(range(10))
    assert result["values"] == [f"old-{i}" for i in range(10)]
    assert (result["begin"], result["end"]) == (0, 10)
    assert result["v0"] == [[10], [0], 0, 0]


def test_message_format_0_and_1_requests_get_unsupported_version_not_a_closed_connection(cluster, old_kafka_python):
    result = run_old_client(old_kafka_python, OLD_PROTOCOL, cluster.bootstrap_servers, "old-protocol")
    # SimpleClient: Produce v0 and Fetch v0 refused per partition, nothing appended,
    # and its next request (ListOffsets v0) answered.
    assert result["simple"] == [35, 35, [], [1]]
    # api_version=(0, 10, 1): Produce v2 and Fetch v3, refused with an error it raises.
    assert result["pinned"] == ["UnsupportedVersionError", "UnsupportedVersionError"]
