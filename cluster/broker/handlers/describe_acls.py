"""DescribeAcls (API 29, v1-v2): this broker has no authorizer, so, as
Kafka's KafkaApis answers without `authorizer.class.name`, the whole request
gets SECURITY_DISABLED and no ACLs."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker.handlers.group_answers import NO_THROTTLE
from kafkactl.cluster.protocol.build import make
from kafkactl.cluster.protocol.codec import response_class

API_KEY = 29
# Kafka's wording, without the final period here (the create and delete answers have one).
NO_AUTHORIZER = "No Authorizer is configured on the broker"


def handle(services, header, request):
    cls = response_class(API_KEY, header.api_version)
    return make(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.security_disabled,
                error_message=NO_AUTHORIZER, resources=())
