"""Two brokers in one process replicate over real localhost sockets.

Each broker is a ReplicaManager over its own log dir behind a real
SocketServer and Dispatcher; its replica fetcher connects to the other's
port. The test is the controller (apply_leader_and_isr, and the partition
state znode in a fake store) and the client (Produce through a socket).
Each broker's housekeeping runs the ISR check every 50 ms.
"""

from __future__ import annotations

import dataclasses
import datetime
import threading
import time

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.produce.v9 import request as produce_v9

from kafkactl.cluster.broker.broker_client import BrokerClient
from kafkactl.cluster.broker.config import from_properties
from kafkactl.cluster.broker.dispatcher import Dispatcher
from kafkactl.cluster.broker.handlers.services import BrokerServices
from kafkactl.cluster.broker.metadata import MetadataCache
from kafkactl.cluster.broker.network import SocketServer
from kafkactl.cluster.broker.replica_fetcher import FetcherConfig, PartitionFetchState
from kafkactl.cluster.broker.isr_writer import PartitionStateConflict, PartitionStateStore
from kafkactl.cluster.broker.replica_manager import ReplicaManager
from kafkactl.cluster.broker.role_changes import LeaderAndIsrState
from kafkactl.cluster.log.manager import LogDir, LogManager
from kafkactl.cluster.protocol.record_batch import build_batch
from kafkactl.cluster.zk.codecs import PartitionState
from support.replication_nodes import records_in
from support.waiting import wait_for

TOPIC = "replicated"
KEY = (TOPIC, 0)
LAG_MS = 1000
WAIT_S = 10.0
POLL_S = 0.02   # the brokers are in this process: state changes within milliseconds
FETCHER = FetcherConfig(fetch_wait_max_ms=100, fetch_backoff_ms=100, socket_timeout_ms=5000)


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


class StateZnodes:
    """The partition state znodes: conditional writes, as ZooKeeper does them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.states: dict[tuple[str, int], PartitionState] = {}

    def elect(self, leader: int, epoch: int, isr) -> int:
        """The controller's write; returns the new zkVersion."""
        with self._lock:
            version = self.states[KEY].zk_version + 1 if KEY in self.states else 0
            self.states[KEY] = PartitionState(leader=leader, leader_epoch=epoch, isr=list(isr),
                                              controller_epoch=1, zk_version=version)
            return version

    def write(self, topic, partition, state, expected):
        with self._lock:
            current = self.states[(topic, partition)]
            if current.zk_version != expected:
                raise PartitionStateConflict(f"expected {expected}, is {current.zk_version}")
            self.states[(topic, partition)] = dataclasses.replace(state, zk_version=expected + 1)
            return expected + 1

    def read(self, topic, partition):
        with self._lock:
            return self.states.get((topic, partition))

    def isr(self) -> list[int]:
        return self.read(*KEY).isr


class Broker:
    def __init__(self, root, broker_id: int, znodes: StateZnodes, properties: dict[str, str]) -> None:
        self.broker_id = broker_id
        config, _ = from_properties({
            "broker.id": str(broker_id), "zookeeper.connect": "unused:1",
            "log.dirs": f"{root}/b{broker_id}", "log.dir.media": f"{root}/b{broker_id}:ssd",
            "replica.lag.time.max.ms": str(LAG_MS), **properties,
        })
        self.logs = LogManager([LogDir(f"{root}/b{broker_id}", "ssd")], config.default_log_config(), wall_clock_ms)
        self.logs.startup()
        store = PartitionStateStore(znodes.write, znodes.read, lambda topic, partition: None)
        self.manager = ReplicaManager(config, self.logs, wall_clock_ms, store, FETCHER)
        services = BrokerServices(config=config, metadata=MetadataCache(), replica_manager=self.manager,
                                  zk_agent=None, producer_ids=None, clock_ms=wall_clock_ms)
        self.server = SocketServer("127.0.0.1", 0, Dispatcher(services), 100, 100 * 1024 * 1024)
        self.endpoint = ("127.0.0.1", self.server.port)
        self._stopping = threading.Event()
        self._housekeeping = threading.Thread(target=self._housekeep, daemon=True)
        self.server.start()
        self._housekeeping.start()

    def _housekeep(self) -> None:
        while not self._stopping.wait(0.05):
            self.manager.maybe_shrink_isr()

    def partition(self):
        return self.manager.get(*KEY)

    def log_end_offset(self) -> int:
        return self.partition().log.log_end_offset

    def kill_fetcher(self) -> None:
        self.manager.fetchers.remove_partitions([KEY])

    def revive_fetcher(self, leader: Broker) -> None:
        partition = self.partition()
        self.manager.fetchers.add_partitions(leader.broker_id, leader.endpoint, [
            PartitionFetchState(partition, partition.leader_id, partition.leader_epoch)])

    def stop_serving(self) -> None:
        self._stopping.set()
        self._housekeeping.join(2)
        self.server.stop()
        self.manager.shutdown()

    def close_logs(self) -> None:
        time.sleep(FETCHER.fetch_wait_max_ms / 1000)   # long polls in flight end
        self.logs.shutdown()


@dataclasses.dataclass
class Cluster:
    brokers: dict[int, Broker]
    znodes: StateZnodes
    controller_epoch: int = 1

    def elect(self, leader: int, epoch: int, isr, replicas=(1, 2)):
        """What the controller does: write the state znode, then tell leader, then followers."""
        version = self.znodes.elect(leader, epoch, isr)
        state = LeaderAndIsrState(TOPIC, 0, self.controller_epoch, leader, epoch, tuple(isr), version,
                                      tuple(replicas))
        live = {b.broker_id: b.endpoint for b in self.brokers.values()}
        order = sorted(self.brokers.values(), key=lambda b: b.broker_id != leader)
        for broker in order:
            errors = broker.manager.apply_leader_and_isr(0, self.controller_epoch, [state], live)
            assert errors == {KEY: ErrorCode.none}


@pytest.fixture
def cluster(tmp_path):
    znodes = StateZnodes()
    made: list[Broker] = []

    def start(**properties) -> Cluster:
        for broker_id in (1, 2):
            made.append(Broker(tmp_path, broker_id, znodes, properties))
        return Cluster({b.broker_id: b for b in made}, znodes)

    yield start
    for broker in made:   # first everything that reads logs, then the logs
        broker.stop_serving()
    for broker in made:
        broker.close_logs()


def produce(broker: Broker, *values: bytes, acks: int = -1, timeout_ms: int = 5000):
    request = produce_v9.ProduceRequest(
        acks=acks, timeout=datetime.timedelta(milliseconds=timeout_ms),
        topic_data=(produce_v9.TopicProduceData(name=TOPIC, partition_data=(produce_v9.PartitionProduceData(
            index=0, records=build_batch([(None, v, None, wall_clock_ms()) for v in values])),)),))
    client = BrokerClient(*broker.endpoint, "test-producer", request_timeout_s=timeout_ms / 1000 + 10)
    try:
        response = client.request(request)
    finally:
        client.close()
    return response.responses[0].partition_responses[0]


def records_of(broker: Broker) -> list[tuple[int, int, bytes]]:
    """(offset, leader epoch, value) of every record in the broker's log."""
    return records_in(broker.partition().log)


def test_the_follower_replicates_and_the_high_watermark_follows(cluster):
    c = cluster()
    a, b = c.brokers[1], c.brokers[2]
    c.elect(1, 0, (1, 2))
    for i in range(20):
        assert produce(a, b"v%d" % i, b"w%d" % i, acks=1).error_code == ErrorCode.none
    wait_for(lambda: b.log_end_offset() == 40, WAIT_S, "the follower to have every record", interval_s=POLL_S)
    wait_for(lambda: a.partition().high_watermark == 40 and b.partition().high_watermark == 40, WAIT_S,
             "both high watermarks at 40", interval_s=POLL_S)
    assert records_of(b) == records_of(a)
    assert a.partition().isr == (1, 2) and c.znodes.isr() == [1, 2]


def test_acks_all_completes_only_when_the_follower_has_the_batch(cluster):
    c = cluster()
    a, b = c.brokers[1], c.brokers[2]
    c.elect(1, 0, (1, 2))
    answer = produce(a, b"first")
    assert answer.error_code == ErrorCode.none
    assert b.log_end_offset() >= answer.base_offset + 1     # acknowledged: the follower had it
    b.kill_fetcher()
    started = time.monotonic()
    answer = produce(a, b"unreplicated", timeout_ms=300)    # well inside replica.lag.time.max.ms
    assert answer.error_code == ErrorCode.request_timed_out
    assert time.monotonic() - started >= 0.3
    assert b.log_end_offset() == 1 and a.partition().high_watermark == 1

    outcome = []
    waiting = threading.Thread(target=lambda: outcome.append(produce(a, b"later", timeout_ms=5000)))
    waiting.start()
    time.sleep(0.3)
    assert not outcome
    b.revive_fetcher(a)
    waiting.join(10)
    assert outcome and outcome[0].error_code == ErrorCode.none
    assert b.log_end_offset() >= outcome[0].base_offset + 1


def test_a_killed_follower_leaves_the_isr_after_the_lag_and_rejoins(cluster):
    c = cluster(**{"min.insync.replicas": "2"})
    a, b = c.brokers[1], c.brokers[2]
    c.elect(1, 0, (1, 2))
    assert produce(a, b"a").error_code == ErrorCode.none
    b.kill_fetcher()
    killed = time.monotonic()
    answer = produce(a, b"b", timeout_ms=10_000)   # waits, then the ISR shrinks below min
    assert answer.error_code == ErrorCode.not_enough_replicas_after_append
    assert time.monotonic() - killed >= LAG_MS / 1000
    assert a.partition().isr == (1,) and c.znodes.isr() == [1]
    assert produce(a, b"c").error_code == ErrorCode.not_enough_replicas
    b.revive_fetcher(a)
    wait_for(lambda: a.partition().isr == (1, 2), WAIT_S, "the follower to rejoin the ISR", interval_s=POLL_S)
    assert c.znodes.isr() == [1, 2] and a.partition().zk_version == c.znodes.read(*KEY).zk_version
    assert produce(a, b"d").error_code == ErrorCode.none
    assert [v for _, _, v in records_of(b)] == [b"a", b"b", b"d"]


def test_after_a_leader_change_the_old_leader_truncates_its_divergent_tail(cluster):
    c = cluster()
    a, b = c.brokers[1], c.brokers[2]
    c.elect(1, 0, (1, 2))
    assert produce(a, b"m1").error_code == ErrorCode.none        # both have it
    wait_for(lambda: b.partition().high_watermark == 1, WAIT_S, "the follower to learn the HW", interval_s=POLL_S)
    b.kill_fetcher()
    assert produce(a, b"m2", acks=1).error_code == ErrorCode.none  # only the leader has it
    assert a.log_end_offset() == 2 and a.partition().high_watermark == 1

    # A is gone; B is elected at epoch 1, with A still named in the ISR.
    c.brokers = {2: b}
    c.elect(2, 1, (2, 1))
    assert b.partition().high_watermark == 1
    assert produce(b, b"m3", acks=1).error_code == ErrorCode.none
    # Between the new leader's HW and its LEO a consumer sees nothing, and no error.
    read = b.manager.read(TOPIC, 0, 1, 1 << 20, 1, True)
    assert read.error == ErrorCode.none and read.region is None and read.high_watermark == 1

    # A comes back and follows B: m2 goes, m3 comes.
    c.brokers = {1: a, 2: b}
    state = LeaderAndIsrState(TOPIC, 0, 1, 2, 1, (2, 1), c.znodes.read(*KEY).zk_version, (1, 2))
    assert a.manager.apply_leader_and_isr(0, 1, [state], {2: b.endpoint}) == {KEY: ErrorCode.none}
    wait_for(lambda: records_of(a) == records_of(b) and b.partition().high_watermark == 2, WAIT_S,
             "the old leader to match the new one", interval_s=POLL_S)
    assert records_of(a) == [(0, 0, b"m1"), (1, 1, b"m3")]
    wait_for(lambda: a.partition().high_watermark == 2, WAIT_S, "the follower to learn the HW", interval_s=POLL_S)


def test_a_fetcher_to_a_dead_leader_backs_off_and_stops_promptly(cluster):
    c = cluster()
    a, b = c.brokers[1], c.brokers[2]
    c.elect(1, 0, (1, 2))
    assert produce(a, b"a").error_code == ErrorCode.none
    a.server.stop()                                 # the leader's process is gone
    time.sleep(0.5)
    fetcher = b.manager.fetchers.fetcher_for(1)
    assert fetcher.is_alive()
    assert FETCHER.connect_backoff_initial_ms / 1000 < fetcher.connect_backoff_s <= FETCHER.connect_backoff_max_ms / 1000
    started = time.monotonic()
    b.manager.fetchers.remove_partitions([KEY])     # asks it to stop, does not wait for it
    fetcher.join(2.0)
    assert time.monotonic() - started < 2 and not fetcher.is_alive()
    assert b.manager.fetchers.fetcher_for(1) is None


def test_stopping_a_fetcher_interrupts_its_long_poll(tmp_path):
    from kafkactl.cluster.broker.replica_fetcher import ReplicaFetcherThread

    znodes = StateZnodes()
    a = Broker(tmp_path, 1, znodes, {})
    try:
        c = Cluster({1: a}, znodes)
        c.elect(1, 0, (1, 2))
        # The fetcher only needs a partition to ask about: A's own, fetched
        # from its log end, keeps the request waiting in A's long poll.
        follower = a.partition()
        slow = dataclasses.replace(FETCHER, fetch_wait_max_ms=10_000)
        fetcher = ReplicaFetcherThread(2, 1, *a.endpoint, slow)
        fetcher.add_partitions([PartitionFetchState(follower, 1, 0, truncating=False)])
        fetcher.start()
        time.sleep(0.5)                             # now waiting in the leader's long poll
        started = time.monotonic()
        fetcher.stop()
        assert time.monotonic() - started < 1 and not fetcher.is_alive()
    finally:
        a.stop_serving()
        a.close_logs()
