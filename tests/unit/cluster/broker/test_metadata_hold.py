"""A (re)started broker holds Metadata answers until the controller's first
UpdateMetadata, at most its hold (issue 12: librdkafka producers stalled on
the empty answer a restarted broker gave before it)."""

import threading
import time

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v9.request import MetadataRequest, MetadataRequestTopic

from kafkactl.cluster.broker.broker_client import decode_response, encode_request
from kafkactl.cluster.broker.config import from_properties
from kafkactl.cluster.broker.deferred import DeferredResponse
from kafkactl.cluster.broker.dispatcher import Dispatcher
from kafkactl.cluster.broker.handlers.services import BrokerServices
from kafkactl.cluster.broker.metadata import MetadataCache, MetadataSnapshot, TopicMetadata
from kafkactl.cluster.protocol.codec import response_class
from kafkactl.cluster.zk.codecs import BrokerRegistration, PartitionState, TopicAssignment

UPDATED = MetadataSnapshot(
    cluster_id="c", controller_id=1,
    brokers={1: BrokerRegistration(1, "127.0.0.1", 9001, ("PLAINTEXT://127.0.0.1:9001",))},
    topics={"t": TopicMetadata("t", TopicAssignment({0: [1]}), {
        0: PartitionState(leader=1, leader_epoch=3, isr=[1], controller_epoch=1)})})


def dispatcher_with(tmp_path, cache: MetadataCache) -> Dispatcher:
    config, _ = from_properties({"broker.id": "1", "zookeeper.connect": "z:1", "log.dirs": f"{tmp_path}/a",
                                 "auto.create.topics.enable": "false"})
    return Dispatcher(BrokerServices(config=config, metadata=cache, replica_manager=None,
                                     zk_agent=None, producer_ids=None, clock_ms=lambda: 0))


def metadata_frame() -> bytes:
    request = MetadataRequest(topics=(MetadataRequestTopic(name="t"),), allow_auto_topic_creation=False,
                              include_cluster_authorized_operations=False,
                              include_topic_authorized_operations=False)
    return encode_request(request, 7, "test")[4:]


def decoded(response_bytes: bytes):
    return decode_response(response_bytes[4:], response_class(3, 9), 7)


def test_the_answer_waits_for_the_first_update_and_carries_it(tmp_path):
    cache = MetadataCache(hold_until_controller_update_s=30.0)
    held = dispatcher_with(tmp_path, cache).dispatch(metadata_frame())
    assert isinstance(held, DeferredResponse)
    timer = threading.Timer(0.2, cache.replace_from_controller, args=(UPDATED,))
    timer.start()
    started = time.monotonic()
    response = decoded(held.finish())
    waited_s = time.monotonic() - started
    assert 0.1 < waited_s < 10
    [topic] = response.topics
    assert ErrorCode(topic.error_code) == ErrorCode.none
    assert [(p.partition_index, p.leader_id) for p in topic.partitions] == [(0, 1)]
    assert [b.node_id for b in response.brokers] == [1]


def test_without_an_update_the_hold_ends_and_the_broker_answers_what_it_has(tmp_path):
    cache = MetadataCache(hold_until_controller_update_s=0.3)
    held = dispatcher_with(tmp_path, cache).dispatch(metadata_frame())
    started = time.monotonic()
    response = decoded(held.finish())
    assert time.monotonic() - started >= 0.25
    assert ErrorCode(response.topics[0].error_code) == ErrorCode.unknown_topic_or_partition


def test_after_the_first_update_answers_are_immediate(tmp_path):
    cache = MetadataCache(hold_until_controller_update_s=30.0)
    cache.replace_from_controller(UPDATED)
    response = dispatcher_with(tmp_path, cache).dispatch(metadata_frame())
    assert isinstance(response, (bytes, bytearray, memoryview))
    assert ErrorCode(decoded(bytes(response)).topics[0].error_code) == ErrorCode.none


@pytest.mark.parametrize("hold_s", [0.0, -1.0])
def test_a_cache_without_a_hold_never_holds(tmp_path, hold_s):
    cache = MetadataCache(hold_until_controller_update_s=hold_s)
    cache.replace(UPDATED)   # filled by hand, as the unit tests of other handlers do
    assert not isinstance(dispatcher_with(tmp_path, cache).dispatch(metadata_frame()), DeferredResponse)


def test_wait_until_wakes_on_the_replacement_that_satisfies_it_and_is_bounded_otherwise():
    cache = MetadataCache()
    started = time.monotonic()
    assert not cache.wait_until(lambda s: s.controller_id == 2, 0.2)
    assert 0.2 <= time.monotonic() - started < 2
    replacer = threading.Timer(0.1, lambda: [cache.replace(MetadataSnapshot(controller_id=i)) for i in (1, 2)])
    replacer.start()
    started = time.monotonic()
    assert cache.wait_until(lambda s: s.controller_id == 2, 10)
    assert time.monotonic() - started < 5
    replacer.join()
