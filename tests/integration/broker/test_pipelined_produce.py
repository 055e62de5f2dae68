"""acks=-1 produce requests pipelined on one connection to a leader with two
followers: real ZooKeeper, three broker processes.

The leader appends a connection's next produce request while earlier ones
wait for their ISR (network.py); what a client must still see is Kafka's
contract: answers in request order, the batches at consecutive offsets in
that order, every one replicated before it is acknowledged, and a request of
another kind behind them answered only after them, seeing their commits.
"""

from __future__ import annotations

import datetime
import time

from kazoo.client import KazooClient
from kio.schema.errors import ErrorCode
from kio.schema.list_offsets.v7 import request as list_offsets7
from kio.schema.produce.v9 import request as produce9

from kafkactl.cluster.admin.topics import create_topic
from kafkactl.cluster.protocol.record_batch import build_batch
from support.broker_support import assert_contiguous, confluent_consume, partition_dir, stored_batches
from support.names import unique_topic
from support.wire import WireClient
from support.waiting import wait_for

REQUESTS = 30
RECORDS_PER_REQUEST = 10


def produce_request(topic: str, first: int):
    now_ms = int(time.time() * 1000)
    batch = build_batch([(None, f"r{first + i}".encode(), None, now_ms) for i in range(RECORDS_PER_REQUEST)])
    return produce9.ProduceRequest(
        transactional_id=None, acks=-1, timeout=datetime.timedelta(seconds=30),
        topic_data=(produce9.TopicProduceData(name=topic, partition_data=(
            produce9.PartitionProduceData(index=0, records=batch),)),))


def latest_offset_request(topic: str):
    return list_offsets7.ListOffsetsRequest(
        replica_id=-1, isolation_level=0, topics=(list_offsets7.ListOffsetsTopic(name=topic, partitions=(
            list_offsets7.ListOffsetsPartition(partition_index=0, current_leader_epoch=-1, timestamp=-1),)),))


def test_pipelined_acks_all_requests_commit_in_order_and_are_answered_in_order(start_cluster):
    cluster, status = start_cluster(brokers=3, overrides={"auto.leader.rebalance.enable": "false"})
    topic = unique_topic("pipelined")
    zk = KazooClient(hosts=status.zookeeper_connect, timeout=10.0)
    zk.start(timeout=30)
    try:
        create_topic(zk, topic, {0: [1, 2, 3]}, {"min.insync.replicas": "2"})
        state_path = f"/brokers/topics/{topic}/partitions/0/state"
        wait_for(lambda: zk.exists(state_path) and b'"isr":[1,2,3]' in zk.get(state_path)[0].replace(b" ", b""),
                 30, what="the partition with a full ISR")
    finally:
        zk.stop()
        zk.close()
    leader = status.broker(1)
    with WireClient(leader.host, leader.port, timeout_s=30) as client:
        wait_for(lambda: client.request(latest_offset_request(topic)).topics[0].partitions[0].error_code
                 == ErrorCode.none, 30, what="the leader to serve the partition")
        first_id = client.correlation_id + 1
        requests = [produce_request(topic, n * RECORDS_PER_REQUEST) for n in range(REQUESTS)]
        for request in requests:                  # all sent before any answer is read
            client.send(request)
        offsets_request = latest_offset_request(topic)
        client.send(offsets_request)
        base_offsets = []
        for n, request in enumerate(requests):
            answer = client.receive(request, first_id + n).responses[0].partition_responses[0]
            assert answer.error_code == ErrorCode.none
            base_offsets.append(answer.base_offset)
        latest = client.receive(offsets_request, first_id + REQUESTS).topics[0].partitions[0]
    total = REQUESTS * RECORDS_PER_REQUEST
    assert base_offsets == [n * RECORDS_PER_REQUEST for n in range(REQUESTS)]
    assert latest.offset == total       # the high watermark covers every acknowledged batch
    for follower in (2, 3):             # acknowledged means both followers have it
        assert assert_contiguous(stored_batches(partition_dir(status, topic, 0, follower))) >= total
    values = [m.value() for m in confluent_consume(status.bootstrap_servers, topic, total)]
    assert values == [f"r{i}".encode() for i in range(total)]
