"""An idle leader of thousands of partitions keeps its in-sync followers in the
ISR, though its idle incremental fetches no longer visit every partition
(fetch_session.py): real ZooKeeper, three broker processes.

The check that matters is the produce after the idle time: the follower's
log end offset is then behind the leader's, and only a caught-up time kept
fresh by the idle fetches keeps it in the ISR. Then a follower that stops
(SIGSTOP, its ZooKeeper session still alive) leaves the ISRs of the
partitions that moved on, by the leader's own shrink, and rejoins once
resumed.
"""

from __future__ import annotations

import datetime
import json
import os
import signal
import time

from kazoo.client import KazooClient
from kio.schema.errors import ErrorCode
from kio.schema.produce.v9 import request as produce9

from kafkactl.cluster.admin.topics import create_topic
from kafkactl.cluster.broker.broker_client import BrokerClient
from kafkactl.cluster.protocol.record_batch import build_batch
from support.names import unique_topic
from support.waiting import wait_for

PARTITIONS = 2000
LAG_MS = 2000
# Long enough that the stopped follower's registration outlives the test's
# wait: its leaving the ISR is the leader's doing, not the controller's.
SESSION_TIMEOUT_MS = 40_000


def isrs(zk: KazooClient, topic: str) -> dict[int, list[int]]:
    results = {p: zk.get_async(f"/brokers/topics/{topic}/partitions/{p}/state") for p in range(PARTITIONS)}
    out = {}
    for p, result in results.items():
        try:
            out[p] = sorted(json.loads(result.get(timeout=30)[0])["isr"])
        except Exception:  # not created yet
            out[p] = []
    return out


def produce_everywhere(client: BrokerClient, topic: str) -> None:
    batch = build_batch([(b"k", b"v", None, int(time.time() * 1000))])
    request = produce9.ProduceRequest(
        transactional_id=None, acks=1, timeout=datetime.timedelta(seconds=10),
        topic_data=(produce9.TopicProduceData(name=topic, partition_data=tuple(
            produce9.PartitionProduceData(index=p, records=batch) for p in range(PARTITIONS))),))
    response = client.request(request, timeout_s=60)
    errors = {r.error_code for t in response.responses for r in t.partition_responses}
    assert errors == {ErrorCode.none}, errors


def test_idle_in_sync_followers_stay_in_the_isr_and_a_stopped_one_leaves(start_cluster):
    cluster, status = start_cluster(brokers=3, overrides={
        "replica.lag.time.max.ms": str(LAG_MS),
        "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
        "auto.leader.rebalance.enable": "false",
    })
    topic = unique_topic("idle-isr")
    zk = KazooClient(hosts=status.zookeeper_connect, timeout=10.0)
    zk.start(timeout=30)
    leader = status.broker(1)
    client = BrokerClient(leader.host, leader.port, "test-idle-isr", request_timeout_s=60.0)
    stopped = None
    try:
        create_topic(zk, topic, {p: [1, 2, 3] for p in range(PARTITIONS)}, {})
        wait_for(lambda: all(isr == [1, 2, 3] for isr in isrs(zk, topic).values()), 180,
                 "every partition created with a full ISR", interval_s=1.0)
        # Applied by the leader too: a produce to every partition succeeds.
        wait_for(lambda: _produced(client, topic), 60, "the leader to serve every partition", interval_s=1.0)
        # Setting up 2,000 partitions on a loaded machine may push followers out
        # and back in; the test starts once the ISRs are full and stay put.
        versions = wait_for(lambda: _quiet(zk, topic), 120, "full ISRs that stay put for two lags")

        time.sleep(3 * LAG_MS / 1000)     # idle for three lags
        assert _versions(zk, topic) == versions, "an ISR changed while nothing happened"
        produce_everywhere(client, topic)          # both followers are behind the log end now
        time.sleep(2 * LAG_MS / 1000)
        assert _versions(zk, topic) == versions, "an idle in-sync follower was dropped after the produce"
        assert all(isr == [1, 2, 3] for isr in isrs(zk, topic).values())

        stopped = status.broker(3).pid
        os.kill(stopped, signal.SIGSTOP)
        started = time.monotonic()
        produce_everywhere(client, topic)
        wait_for(lambda: all(isr == [1, 2] for isr in isrs(zk, topic).values()), 30,
                 "the leader to drop the stopped follower from every ISR", interval_s=0.5)
        assert time.monotonic() - started < SESSION_TIMEOUT_MS / 1000
        assert zk.exists("/brokers/ids/3") is not None   # the controller had no part in it

        os.kill(stopped, signal.SIGCONT)
        stopped = None
        wait_for(lambda: all(isr == [1, 2, 3] for isr in isrs(zk, topic).values()), 60,
                 "the resumed follower to rejoin every ISR", interval_s=1.0)
    finally:
        if stopped is not None:
            os.kill(stopped, signal.SIGCONT)
        client.close()
        zk.stop()
        zk.close()


def _produced(client: BrokerClient, topic: str) -> bool:
    try:
        produce_everywhere(client, topic)
    except AssertionError:
        return False
    return True


def _quiet(zk: KazooClient, topic: str) -> dict[int, int] | None:
    """The state znodes' versions if every ISR is full and none changes for two lags."""
    versions = _versions(zk, topic)
    if not all(isr == [1, 2, 3] for isr in isrs(zk, topic).values()):
        time.sleep(1.0)
        return None
    time.sleep(2 * LAG_MS / 1000)
    return versions if _versions(zk, topic) == versions else None


def _versions(zk: KazooClient, topic: str) -> dict[int, int]:
    results = {p: zk.get_async(f"/brokers/topics/{topic}/partitions/{p}/state") for p in range(PARTITIONS)}
    return {p: result.get(timeout=30)[1].version for p, result in results.items()}
