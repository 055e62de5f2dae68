"""FindCoordinator (API 10, v0-v4): which broker coordinates a group: the
leader of the group's `__consumer_offsets` partition (coordinator/
placement.py). v4 asks for several keys at once.

The topic is created on first need, as Kafka creates it
(coordinator/offsets_topic.py, off the request thread); until it exists and
the partition has a live leader, the answer is COORDINATOR_NOT_AVAILABLE,
which clients retry. Transactions have no coordinator here: key type 1 is
answered COORDINATOR_NOT_AVAILABLE, with a message saying so.
"""

from __future__ import annotations

import datetime

from kio.schema.errors import ErrorCode

from kafkactl.cluster.coordinator.offsets_topic import offsets_topic_wish
from kafkactl.cluster.coordinator.placement import OFFSETS_TOPIC, partition_for
from kafkactl.cluster.protocol.build import make, nested
from kafkactl.cluster.protocol.codec import response_class

API_KEY = 10
GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1
NO_TRANSACTIONS = "transactions are not supported: this broker has no transaction coordinator"


class Found:
    __slots__ = ("error", "node_id", "host", "port", "message")

    def __init__(self, error: ErrorCode, node_id: int = -1, host: str = "", port: int = -1,
                 message: str | None = None) -> None:
        self.error, self.node_id, self.host, self.port, self.message = error, node_id, host, port, message


def handle(services, header, request):
    key_type = getattr(request, "key_type", GROUP_KEY_TYPE)
    batched = hasattr(request, "coordinator_keys")
    keys = request.coordinator_keys if batched else (request.key,)
    found = {key: _find(services, key_type, key) for key in keys}
    cls = response_class(API_KEY, header.api_version)
    first = found[keys[0]] if keys else Found(ErrorCode.invalid_request)
    return make(
        cls, throttle_time=datetime.timedelta(0),
        error_code=first.error, error_message=first.message, node_id=first.node_id, host=first.host,
        port=first.port,
        coordinators=tuple(nested(cls, "Coordinator", key=key, node_id=f.node_id, host=f.host, port=f.port,
                                  error_code=f.error, error_message=f.message)
                           for key, f in found.items()) if batched else ())


def _find(services, key_type: int, key: str) -> Found:
    if key_type == TRANSACTION_KEY_TYPE:
        return Found(ErrorCode.coordinator_not_available, message=NO_TRANSACTIONS)
    if key_type != GROUP_KEY_TYPE:
        return Found(ErrorCode.invalid_request, message=f"unknown coordinator key type {key_type}")
    snapshot = services.metadata.snapshot
    topic = snapshot.topics.get(OFFSETS_TOPIC)
    if topic is None or not topic.assignment.partitions:
        if OFFSETS_TOPIC not in snapshot.deleting_topics:
            services.zk_agent.auto_creator.request(offsets_topic_wish(services.config))
        return Found(ErrorCode.coordinator_not_available, message=f"{OFFSETS_TOPIC} is being created")
    partition = partition_for(key, len(topic.assignment.partitions))
    leader = snapshot.leader_of(OFFSETS_TOPIC, partition)
    broker = snapshot.brokers.get(leader)
    if broker is None:
        return Found(ErrorCode.coordinator_not_available,
                     message=f"{OFFSETS_TOPIC}-{partition} has no live leader")
    return Found(ErrorCode.none, broker.broker_id, broker.host, broker.port)
