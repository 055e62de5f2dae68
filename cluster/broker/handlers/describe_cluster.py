"""DescribeCluster (API 60, v0-v1): the live brokers, the cluster id and the
controller, from this broker's metadata snapshot, as Kafka's broker answers
from its metadata cache.

- v1's `endpoint_type` 2 (controllers, KIP-919) is a KRaft notion: a broker
  answers UNSUPPORTED_ENDPOINT_TYPE, as Kafka's brokers do.
- `include_cluster_authorized_operations`: without an authorizer Kafka
  grants every operation the CLUSTER resource has, so the bit set of those;
  otherwise Int32.MIN_VALUE ("not asked").
- Before the controller's first UpdateMetadata the snapshot lists no broker:
  the answer is held until it comes, at most the hold Metadata answers wait
  (handlers/metadata.py says why), on the answer sender.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker.deferred import PendingAnswer
from kafkactl.cluster.broker.handlers.group_answers import NO_THROTTLE
from kafkactl.cluster.protocol.build import make, nested
from kafkactl.cluster.protocol.codec import response_class

API_KEY = 60
BROKERS_ENDPOINT = 1
CONTROLLER_ENDPOINT = 2
NOT_ASKED = -2**31
# Kafka's AclOperation codes of the CLUSTER resource: CREATE 5, ALTER 7,
# DESCRIBE 8, CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12.
CLUSTER_OPERATIONS = sum(1 << code for code in (5, 7, 8, 9, 10, 11, 12))


def handle(services, header, request):
    if not services.metadata.controller_updated():
        return _Held(services, header, request)
    return _answer(services, header, request)


class _Held(PendingAnswer):
    __slots__ = ("_args",)

    def __init__(self, *args) -> None:
        self._args = args

    def answer(self):
        self._args[0].metadata.wait_for_controller_update()
        return _answer(*self._args)


def _answer(services, header, request):
    cls = response_class(API_KEY, header.api_version)
    snapshot = services.metadata.snapshot
    endpoint_type = getattr(request, "endpoint_type", BROKERS_ENDPOINT)
    if endpoint_type != BROKERS_ENDPOINT:
        return make(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.unsupported_endpoint_type,
                    error_message=f"The broker does not support endpoint type {endpoint_type}",
                    endpoint_type=endpoint_type, cluster_id=snapshot.cluster_id or "", controller_id=-1,
                    brokers=(), cluster_authorized_operations=NOT_ASKED)
    brokers = tuple(nested(cls, "DescribeClusterBroker", broker_id=b.broker_id, host=b.host, port=b.port,
                           rack=b.rack)
                    for b in sorted(snapshot.brokers.values(), key=lambda b: b.broker_id))
    operations = CLUSTER_OPERATIONS if request.include_cluster_authorized_operations else NOT_ASKED
    return make(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, error_message=None,
                endpoint_type=BROKERS_ENDPOINT, cluster_id=snapshot.cluster_id or "",
                controller_id=snapshot.controller_id, brokers=brokers,
                cluster_authorized_operations=operations)
