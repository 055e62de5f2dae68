"""Brokers in one process for the replication unit tests, without sockets.

Each broker is a ReplicaManager over real logs in a temp dir. The controller
is the test, calling apply_leader_and_isr; ZooKeeper is a fake partition
state store; a follower's fetcher talks to its leader's Dispatcher through a
loopback client (real request encoding, real handlers, no socket), one round
at a time. Test modules import the fixtures `clock`, `zk` and `nodes`.
"""

import dataclasses
import threading

import pytest
from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker.broker_client import decode_response, encode_request
from kafkactl.cluster.broker.config import from_properties
from kafkactl.cluster.broker.deferred import DeferredResponse
from kafkactl.cluster.broker.dispatcher import Dispatcher
from kafkactl.cluster.broker.fetch_session import FetchSessionCache
from kafkactl.cluster.broker.handlers.services import BrokerServices
from kafkactl.cluster.broker.isr_writer import PartitionStateConflict, PartitionStateStore
from kafkactl.cluster.broker.metadata import MetadataCache
from kafkactl.cluster.broker.replica_fetcher import FetcherConfig, PartitionFetchState, ReplicaFetcherThread
from kafkactl.cluster.broker.replica_manager import ReplicaManager
from kafkactl.cluster.broker.role_changes import LeaderAndIsrState
from kafkactl.cluster.log.manager import LogDir, LogManager
from kafkactl.cluster.protocol.codec import SplicedResponse, response_class
from kafkactl.cluster.protocol.record_batch import build_batch, decode_records, parse_header
from kafkactl.cluster.zk.codecs import PartitionState

T0 = 1_700_000_000_000
LAG_MS = 10_000
TOPIC = "t"
KEY = (TOPIC, 0)


class Clock:
    def __init__(self) -> None:
        self.now_ms = T0

    def __call__(self) -> int:
        return self.now_ms

    def advance(self, ms: int) -> None:
        self.now_ms += ms


class FakeStateStore:
    """The partition state znodes, with ZooKeeper's conditional setData.
    `gate`: while set and closed, writes block (a ZooKeeper that does not
    answer); `always_conflict`: every write loses to another writer."""

    def __init__(self) -> None:
        self.states: dict[tuple[str, int], PartitionState] = {}
        self.notifications: list[tuple[str, int]] = []
        self.write_error: Exception | None = None
        self.read_error: Exception | None = None
        self.writes = 0
        self.gate: threading.Event | None = None
        self.writing = threading.Event()   # set once a write has begun
        self.always_conflict = False

    def seed(self, leader, epoch, isr, zk_version=0, key=KEY):
        self.states[key] = PartitionState(leader=leader, leader_epoch=epoch, isr=list(isr),
                                          controller_epoch=1, zk_version=zk_version)

    def write(self, topic, partition, state, expected_zk_version):
        self.writes += 1
        self.writing.set()
        if self.gate is not None:
            assert self.gate.wait(30), "the test never opened the gate"
        if self.always_conflict:
            current = self.states[(topic, partition)]
            self.states[(topic, partition)] = dataclasses.replace(current, zk_version=current.zk_version + 1)
            raise PartitionStateConflict("another writer got there first")
        if self.write_error is not None:
            raise self.write_error
        current = self.states.get((topic, partition))
        if current is None or current.zk_version != expected_zk_version:
            raise PartitionStateConflict(f"version {expected_zk_version} is stale")
        self.states[(topic, partition)] = dataclasses.replace(state, zk_version=current.zk_version + 1)
        return current.zk_version + 1

    def read(self, topic, partition):
        if self.read_error is not None:
            raise self.read_error
        return self.states.get((topic, partition))

    def notify(self, topic, partition):
        self.notifications.append((topic, partition))

    def store(self) -> PartitionStateStore:
        return PartitionStateStore(self.write, self.read, self.notify)


class LoopbackClient:
    """Requests through the leader's Dispatcher, encoded and decoded as on the wire."""

    def __init__(self, dispatcher: Dispatcher) -> None:
        self.dispatcher = dispatcher
        self.correlation_id = 0

    def request(self, request, timeout_s=None, response_cls=None):
        self.correlation_id += 1
        frame = encode_request(request, self.correlation_id, "loopback")[4:]
        answer = self.dispatcher.dispatch(frame)
        if isinstance(answer, DeferredResponse):
            answer = answer.finish()
        if isinstance(answer, SplicedResponse):
            answer = b"".join(p if isinstance(p, (bytes, bytearray)) else p.read_bytes() for p in answer.parts)
        cls = response_cls or response_class(request.__api_key__, request.__version__)
        return decode_response(answer[4:], cls, self.correlation_id)

    def connect(self) -> None:
        pass

    def close(self) -> None:
        pass


@dataclasses.dataclass
class Node:
    broker_id: int
    manager: ReplicaManager
    logs: LogManager
    dispatcher: Dispatcher

    def partition(self, key=KEY):
        return self.manager.get(*key)


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def zk():
    return FakeStateStore()


@pytest.fixture
def nodes(tmp_path, clock, zk):
    made = []

    def make(broker_id, **properties):
        config, _ = from_properties({
            "broker.id": str(broker_id), "zookeeper.connect": "z:1",
            "log.dirs": f"{tmp_path}/b{broker_id}", "log.dir.media": f"{tmp_path}/b{broker_id}:ssd",
            "replica.lag.time.max.ms": str(LAG_MS), **properties,
        })
        logs = LogManager([LogDir(f"{tmp_path}/b{broker_id}", "ssd")], config.default_log_config(), clock)
        logs.startup()
        manager = ReplicaManager(config, logs, clock, partition_state_store=zk.store())
        services = BrokerServices(config=config, metadata=MetadataCache(), replica_manager=manager,
                                  zk_agent=None, producer_ids=None, clock_ms=clock,
                                  fetch_sessions=FetchSessionCache(clock_ms=clock, changes=manager.changes))
        node = Node(broker_id, manager, logs, Dispatcher(services))
        made.append(node)
        return node

    yield make
    for node in made:
        node.manager.shutdown()
        node.logs.shutdown()


def state(leader, epoch, isr, replicas=(1, 2), zk_version=0, key=KEY):
    return LeaderAndIsrState(topic=key[0], partition=key[1], controller_epoch=1, leader=leader,
                                 leader_epoch=epoch, isr=tuple(isr), partition_epoch=zk_version,
                                 replicas=tuple(replicas))


def control(node, *states, controller_epoch=1):
    return node.manager.apply_leader_and_isr(0, controller_epoch, list(states), {})


def batch(*values):
    return build_batch([(None, v, None, T0) for v in values])


def produce(node, *values, acks=1):
    result = node.manager.append(TOPIC, 0, batch(*values), acks)
    assert result.error == ErrorCode.none, result
    return result


def follower_fetch(leader, follower_id, offset, epoch=-1):
    fetch = leader.manager.begin_follower_fetch(TOPIC, 0, follower_id, offset, 0, epoch)
    if fetch is not None:
        leader.manager.end_follower_fetch(fetch)
    assert leader.manager.isr_writer.flush()   # the ISR expansion it proposed, written
    return fetch


def shrink(node, now_ms=None):
    """The housekeeping tick's ISR check, and the ISR writer's writes of what it proposed."""
    node.manager.maybe_shrink_isr(now_ms)
    assert node.manager.isr_writer.flush()


def values_in(node, key=KEY):
    """(offset, leader epoch, value) of every record in the node's log."""
    return records_in(node.partition(key).log)


def records_in(log_):
    """(offset, leader epoch, value) of every record in a partition's log."""
    data = log_.read(log_.log_start_offset, 1 << 30, None, True)
    raw = data.region.read_bytes() if data is not None else b""
    out, position = [], 0
    while position < len(raw):
        header = parse_header(raw, position)
        for record in decode_records(raw[position:position + header.size_bytes]):
            out.append((record.offset, header.partition_leader_epoch, record.value))
        position += header.size_bytes
    return out


def fetcher_for(follower, leader, epoch, key=KEY):
    config = FetcherConfig(fetch_wait_max_ms=0, fetch_backoff_ms=0)
    fetcher = ReplicaFetcherThread(follower.broker_id, leader.broker_id, "loopback", 0, config,
                                   client=LoopbackClient(leader.dispatcher))
    fetcher.add_partitions([PartitionFetchState(follower.partition(key), leader.broker_id, epoch)])
    return fetcher
