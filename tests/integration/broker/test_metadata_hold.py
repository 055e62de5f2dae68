"""A restarted broker answers Metadata only once the controller's first
UpdateMetadata has reached it (cluster/broker/metadata.py): before, it
answered at once with no broker and no topic, and an acks=-1 librdkafka
producer that asked it then stalled (issue 12's admin soak).

The controller process is paused (SIGSTOP) while the broker restarts, so the
window is as long as the test wants; the test fails on the old broker."""

from __future__ import annotations

import os
import signal
import threading
import time

from kazoo.client import KazooClient
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v9 import request as metadata9

from kafkactl.cluster.admin.topics import create_topic
from kafkactl.cluster.zk import codecs, layout

from support.waiting import wait_for
from support.wire import WireClient

TOPIC = "held"


def ask_metadata(client: WireClient):
    return client.request(metadata9.MetadataRequest(
        topics=(metadata9.MetadataRequestTopic(name=TOPIC),), allow_auto_topic_creation=False,
        include_cluster_authorized_operations=False, include_topic_authorized_operations=False))


def led_everywhere(status) -> bool:
    for broker in status.brokers:
        client = WireClient(broker.host, broker.port)
        try:
            topic = ask_metadata(client).topics[0]
        finally:
            client.close()
        if topic.error_code != ErrorCode.none or any(p.leader_id < 0 for p in topic.partitions):
            return False
    return True


def test_a_restarted_broker_holds_metadata_until_the_controllers_first_update(start_cluster):
    cluster, status = start_cluster(brokers=2)
    zk = KazooClient(hosts=status.zookeeper_connect, timeout=10)
    zk.start(timeout=10)
    try:
        create_topic(zk, TOPIC, {0: [1, 2], 1: [2, 1]}, {}, 10)
        wait_for(lambda: led_everywhere(status), 20, "the topic led, as every broker says")
        controller = codecs.decode_controller(zk.get(layout.CONTROLLER)[0])
        restarted = 2 if controller == 1 else 1
        controller_pid = status.broker(controller).pid
        cluster.kill_broker(restarted)
        os.kill(controller_pid, signal.SIGSTOP)     # no UpdateMetadata can come now
        try:
            status = cluster.up()                   # the broker registered again
            broker = status.broker(restarted)
            client = WireClient(broker.host, broker.port, timeout_s=20)
            answers: list = []
            asking = threading.Thread(target=lambda: answers.append(ask_metadata(client)), daemon=True)
            asking.start()
            asking.join(1.5)
            assert not answers, "answered before any UpdateMetadata: the broker knows no topic yet"
        finally:
            os.kill(controller_pid, signal.SIGCONT)
        started = time.monotonic()
        asking.join(10)
        assert answers, "no answer after the controller came back"
        response = answers[0]
        assert time.monotonic() - started < 4.5      # the UpdateMetadata's arrival, not the 5 s bound
        [topic] = response.topics
        assert ErrorCode(topic.error_code) == ErrorCode.none
        assert sorted(p.partition_index for p in topic.partitions) == [0, 1]
        assert sorted(b.node_id for b in response.brokers) == [1, 2]
        client.close()
    finally:
        zk.stop()
        zk.close()
