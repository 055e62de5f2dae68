"""FindCoordinator before there is a coordinator: retriable COORDINATOR_NOT_AVAILABLE,
with a message that says which coordinator is missing."""

import importlib

import pytest
from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker.broker_client import decode_response, encode_request
from kafkactl.cluster.broker.config import from_properties
from kafkactl.cluster.broker.dispatcher import Dispatcher
from kafkactl.cluster.broker.handlers.services import BrokerServices
from kafkactl.cluster.broker.metadata import MetadataCache
from kafkactl.cluster.protocol.codec import response_class


@pytest.fixture
def dispatcher(tmp_path):
    config, _ = from_properties({"broker.id": "1", "zookeeper.connect": "z:1", "log.dirs": f"{tmp_path}/a"})
    return Dispatcher(BrokerServices(config=config, metadata=MetadataCache(), replica_manager=None,
                                     zk_agent=None, producer_ids=None, clock_ms=lambda: 0))


def ask(dispatcher, version: int, key_type: int):
    schema = importlib.import_module(f"kio.schema.find_coordinator.v{version}.request")
    keys = {"coordinator_keys": ("my-id",)} if version >= 4 else {"key": "my-id"}
    request = schema.FindCoordinatorRequest(key_type=key_type, **keys)
    frame = encode_request(request, 2, "test")[4:]
    return decode_response(dispatcher.dispatch(frame)[4:], response_class(10, version), 2)


def test_a_transaction_coordinator_is_said_to_be_unsupported(dispatcher):
    response = ask(dispatcher, 3, key_type=1)
    assert response.error_code == ErrorCode.coordinator_not_available
    assert response.error_message == "transactions are not supported: this broker has no transaction coordinator"


def test_batched_keys_carry_the_message_each(dispatcher):
    (coordinator,) = ask(dispatcher, 4, key_type=0).coordinators
    assert (coordinator.key, coordinator.error_code) == ("my-id", ErrorCode.coordinator_not_available)
    assert coordinator.error_message == "this broker has no group coordinator yet"
