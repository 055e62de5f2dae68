"""Old request versions that Kafka 2.8 serves, through the dispatcher, in raw bytes.

Frames are written by hand from Kafka's message schemas and answers read
by hand, so neither depends on the broker's own schema classes. Served
versions get a real answer; versions this broker cannot serve (Produce
v0-2, Fetch v0-3: message formats 0 and 1) get UNSUPPORTED_VERSION in the
request's own layout instead of a closed connection; versions beyond what
Kafka 2.8 and this broker know still close it, as Kafka does.
"""

import struct
import time
import zlib

import pytest

from kafkactl.cluster.broker.dispatcher import Dispatcher
from kafkactl.cluster.broker.handlers.services import BrokerServices
from kafkactl.cluster.broker.metadata import MetadataCache
from kafkactl.cluster.broker.role_changes import LeaderAndIsrState
from kafkactl.cluster.protocol.framing import FrameError
from kafkactl.cluster.protocol.record_batch import build_batch
from support.one_broker import one_broker

NOW_MS = 1_700_000_000_000
UNSUPPORTED_VERSION, UNKNOWN_TOPIC_OR_PARTITION, LOG_DIR_NOT_FOUND = 35, 3, 57
LEADER_EPOCH = 4


@pytest.fixture
def broker(tmp_path):
    """Broker 1 leads t-0..t-2 at leader epoch 4; t-1 holds 3 records."""
    log_dir = f"{tmp_path}/a"
    config, manager = one_broker(log_dir, lambda: NOW_MS)
    manager.apply_leader_and_isr(0, 1, [LeaderAndIsrState("t", p, 1, 1, LEADER_EPOCH, (1,), 0, (1,))
                                        for p in range(3)], {})
    manager.append("t", 1, build_batch([(None, b"v", None, NOW_MS)] * 3), 1)
    dispatcher = Dispatcher(BrokerServices(config=config, metadata=MetadataCache(), replica_manager=manager,
                                           zk_agent=None, producer_ids=None, clock_ms=lambda: NOW_MS))
    dispatcher.log_dir = log_dir
    dispatcher.replica_manager = manager
    yield dispatcher
    manager.shutdown()
    manager.log_manager.shutdown()


# --- writing requests and reading answers by hand -----------------------------------

def request(api_key: int, version: int, body: bytes, correlation_id: int = 7) -> bytes:
    """Request header v1 (every version here is non-flexible) and the body, no size prefix."""
    client_id = b"kafka-python-1.4.7"
    return struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id + body


def string(text: str | None) -> bytes:
    if text is None:
        return struct.pack(">h", -1)
    encoded = text.encode()
    return struct.pack(">h", len(encoded)) + encoded


def array(items, null: bool = False) -> bytes:
    if null:
        return struct.pack(">i", -1)
    return struct.pack(">i", len(items)) + b"".join(items)


def message_set_v0(value: bytes) -> bytes:
    """One magic-0 message, as kafka-python's SimpleProducer writes it."""
    message = struct.pack(">bbi", 0, 0, -1) + struct.pack(">i", len(value)) + value
    message = struct.pack(">I", zlib.crc32(message)) + message
    return struct.pack(">qi", 0, len(message)) + message


class Answer:
    """A response frame read field by field; `done` checks nothing is left over."""

    def __init__(self, frame: bytes, correlation_id: int = 7) -> None:
        (size,) = struct.unpack_from(">i", frame, 0)
        assert size == len(frame) - 4
        self.data, self.position = frame, 4
        assert self.int32() == correlation_id   # response header v0

    def _take(self, fmt: str):
        (value,) = struct.unpack_from(fmt, self.data, self.position)
        self.position += struct.calcsize(fmt)
        return value

    def int8(self) -> int:
        return self._take(">b")

    def int16(self) -> int:
        return self._take(">h")

    def int32(self) -> int:
        return self._take(">i")

    def int64(self) -> int:
        return self._take(">q")

    def boolean(self) -> bool:
        return bool(self._take(">b"))

    def string(self) -> str | None:
        length = self.int16()
        if length < 0:
            return None
        self.position += length
        return self.data[self.position - length:self.position].decode()

    def bytes_(self) -> bytes | None:
        length = self.int32()
        if length < 0:
            return None
        self.position += length
        return self.data[self.position - length:self.position]

    def array(self, read_one) -> list:
        return [read_one() for _ in range(self.int32())]

    def done(self) -> None:
        assert self.position == len(self.data), f"{len(self.data) - self.position} bytes left over"


def ask(broker, api_key: int, version: int, body: bytes) -> Answer:
    response = broker.dispatch(request(api_key, version, body))
    assert isinstance(response, bytes), response
    return Answer(response)


# --- Produce v0-v2: answered UNSUPPORTED_VERSION, nothing appended ----------------------

def produce_body(acks: int) -> bytes:
    partitions = [struct.pack(">i", 1) + struct.pack(">i", len(m)) + m for m in [message_set_v0(b"old")]]
    partitions.append(struct.pack(">ii", 9, -1))   # null records
    return struct.pack(">hi", acks, 1000) + array([string("t") + array(partitions)])


@pytest.mark.parametrize("version", [0, 1, 2])
def test_produce_v0_to_v2_answer_unsupported_version_per_partition_in_their_own_layout(broker, version):
    answer = ask(broker, 0, version, produce_body(acks=1))

    def partition():
        fields = [answer.int32(), answer.int16(), answer.int64()]   # index, error, base offset
        if version >= 2:
            fields.append(answer.int64())                           # log append time
        return fields

    topics = answer.array(lambda: (answer.string(), answer.array(partition)))
    tail = [-1] if version >= 2 else []
    assert topics == [("t", [[1, UNSUPPORTED_VERSION, -1, *tail], [9, UNSUPPORTED_VERSION, -1, *tail]])]
    if version >= 1:
        assert answer.int32() == 0   # throttle time, after the topics
    answer.done()
    assert broker.replica_manager.get("t", 1).log.log_end_offset == 3   # nothing appended


def test_produce_v0_with_acks_0_closes_the_connection_as_any_refused_acks_0_produce(broker):
    # acks=0 has no response to carry the error: Kafka closes the connection.
    with pytest.raises(FrameError, match="acks=0"):
        broker.dispatch(request(0, 0, produce_body(acks=0)))


def test_a_malformed_old_produce_is_refused_before_decoding(broker):
    body = struct.pack(">hi", 1, 1000) + struct.pack(">i", 1000)   # 1000 topics, no bytes for them
    with pytest.raises(FrameError, match="malformed"):
        broker.dispatch(request(0, 1, body))


# --- Fetch v0-v3: answered UNSUPPORTED_VERSION at once ---------------------------------

@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_fetch_v0_to_v3_answer_unsupported_version_per_partition_without_waiting(broker, version):
    head = struct.pack(">iii", -1, 5000, 1 << 20) + (struct.pack(">i", 1 << 20) if version == 3 else b"")
    partitions = [struct.pack(">iqi", index, 0, 1 << 20) for index in (1, 9)]
    started = time.monotonic()
    answer = ask(broker, 1, version, head + array([string("t") + array(partitions)]))
    assert time.monotonic() - started < 2   # not a long poll of max_wait 5 s
    if version >= 1:
        assert answer.int32() == 0   # throttle time, before the topics
    topics = answer.array(lambda: (answer.string(), answer.array(
        lambda: (answer.int32(), answer.int16(), answer.int64(), answer.bytes_()))))
    assert topics == [("t", [(1, UNSUPPORTED_VERSION, -1, b""), (9, UNSUPPORTED_VERSION, -1, b"")])]
    answer.done()


# --- served: OffsetForLeaderEpoch v0-v1, DescribeConfigs v0, the log dir APIs v0 ----------

@pytest.mark.parametrize("version", [0, 1])
def test_offset_for_leader_epoch_v0_and_v1_answer_where_the_epoch_ends(broker, version):
    partitions = [struct.pack(">ii", index, LEADER_EPOCH) for index in (1, 9)]
    answer = ask(broker, 23, version, array([string("t") + array(partitions)]))

    def partition():
        fields = [answer.int16(), answer.int32()]   # error, partition
        if version >= 1:
            fields.append(answer.int32())            # leader epoch
        return fields + [answer.int64()]             # end offset

    topics = answer.array(lambda: (answer.string(), answer.array(partition)))
    epoch, unknown = ([LEADER_EPOCH], [-1]) if version >= 1 else ([], [])
    assert topics == [("t", [[0, 1, *epoch, 3], [UNKNOWN_TOPIC_OR_PARTITION, 9, *unknown, -1]])]
    answer.done()


def test_describe_configs_v0_answers_is_default_instead_of_the_source(broker):
    keys = array([string("broker.id"), string("log.retention.ms")])
    answer = ask(broker, 32, 0, array([struct.pack(">b", 4) + string("1") + keys]))
    assert answer.int32() == 0   # throttle time
    results = answer.array(lambda: (answer.int16(), answer.string(), answer.int8(), answer.string(), answer.array(
        lambda: (answer.string(), answer.string(), answer.boolean(), answer.boolean(), answer.boolean()))))
    answer.done()
    [(error, message, resource_type, name, configs)] = results
    assert (error, message, resource_type, name) == (0, None, 4, "1")
    # name, value, read-only, is default, is sensitive (log.retention.ms is dynamic: not read-only, as in Kafka)
    assert configs == [("broker.id", "1", True, False, False),
                       ("log.retention.ms", "604800000", False, True, False)]


def test_describe_log_dirs_v0_lists_the_dir_and_its_partitions(broker):
    answer = ask(broker, 35, 0, array([], null=True))
    assert answer.int32() == 0
    results = answer.array(lambda: (answer.int16(), answer.string(), answer.array(lambda: (answer.string(), answer.array(
        lambda: (answer.int32(), answer.int64(), answer.int64(), answer.boolean()))))))
    answer.done()
    [(error, path, topics)] = results
    assert (error, path) == (0, broker.log_dir)
    [(name, partitions)] = topics
    assert name == "t" and [p[0] for p in partitions] == [0, 1, 2]
    assert partitions[1][1] > 0 and partitions[1][2:] == (0, False)   # size, no lag, not a future log


def test_alter_replica_log_dirs_v0_answers_per_partition(broker):
    body = array([string("/no/such/dir") + array([string("t") + array([struct.pack(">i", 1)])])])
    answer = ask(broker, 34, 0, body)
    assert answer.int32() == 0
    results = answer.array(lambda: (answer.string(), answer.array(lambda: (answer.int32(), answer.int16()))))
    answer.done()
    assert results == [("t", [(1, LOG_DIR_NOT_FOUND)])]


# --- ApiVersions, and versions nobody serves -------------------------------------------

def api_versions_v0_answer(answer: Answer) -> tuple[int, dict[int, tuple[int, int]]]:
    error = answer.int16()
    keys = answer.array(lambda: (answer.int16(), answer.int16(), answer.int16()))
    answer.done()
    return error, {key: (low, high) for key, low, high in keys}


@pytest.mark.parametrize("version", [5, 99, -1])
def test_api_versions_in_an_unknown_version_gets_the_v0_answer_with_unsupported_version(broker, version):
    # KIP-511: the client learns the range and retries; the body is not read at all.
    error, keys = api_versions_v0_answer(ask(broker, 18, version, b"\x00garbage"))
    assert error == UNSUPPORTED_VERSION
    assert keys[18] == (0, 4)
    # The old versions served now are advertised, as Kafka 2.8 advertises them.
    assert keys[23][0] == keys[32][0] == keys[34][0] == keys[35][0] == 0
    assert keys[0][0] == 0 and keys[1][0] == 4   # Produce from v0 for librdkafka; Fetch v0-3 not served


def test_api_versions_v0_is_served(broker):
    error, keys = api_versions_v0_answer(ask(broker, 18, 0, b""))
    assert error == 0 and keys[2] == (0, 7)


@pytest.mark.parametrize("api_key,version", [(0, 10), (1, 13), (23, 5), (32, 5), (34, 3), (42, 3), (61, 0)])
def test_versions_without_a_layout_to_answer_in_still_close_the_connection(broker, api_key, version):
    # Beyond Kafka 2.8's ranges, or an API this broker lacks (61: DescribeProducers):
    # no layout the client would parse is known, and Kafka closes too.
    with pytest.raises(FrameError, match="unsupported api_key"):
        broker.dispatch(request(api_key, version, b""))
