"""A 2.x-era client against the broker: kafka-python 1.4.7, pinned by tools of
that era (kafka-utils), in a venv of its own. It produces, consumes with
assign() and asks for watermarks, with ListOffsets v0 through its SimpleClient
as kafka-utils' kafka-check does."""

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


@pytest.fixture(scope="module")
def old_kafka_python(tmp_path_factory) -> str:
    venv = tmp_path_factory.mktemp("kafka-python-1.4.7") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check",
                    "kafka-python==1.4.7"], check=True, timeout=300, capture_output=True)
    return str(venv / "bin" / "python")


def test_kafka_python_1_4_7_produces_consumes_and_reads_watermarks_with_v0(start_cluster, old_kafka_python):
    _, status = start_cluster(brokers=1, overrides={"auto.create.topics.enable": "true", "num.partitions": "1"})
    run = subprocess.run([old_kafka_python, "-c", OLD_CLIENT, status.bootstrap_servers, "old-client"],
                         capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["offsets"] == list(range(10))
    assert result["values"] == [f"old-{i}" for i in range(10)]
    assert (result["begin"], result["end"]) == (0, 10)
    assert result["v0"] == [[10], [0], 0, 0]
