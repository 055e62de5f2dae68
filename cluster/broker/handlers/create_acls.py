"""CreateAcls (API 30, v1-v2): no authorizer here, so every creation is
answered SECURITY_DISABLED and nothing is stored (Kafka's getErrorResponse
with a SecurityDisabledException)."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker.handlers.describe_acls import NO_AUTHORIZER
from kafkactl.cluster.broker.handlers.group_answers import NO_THROTTLE
from kafkactl.cluster.protocol.build import make, nested
from kafkactl.cluster.protocol.codec import response_class

API_KEY = 30


def handle(services, header, request):
    cls = response_class(API_KEY, header.api_version)
    return make(cls, throttle_time=NO_THROTTLE, results=tuple(
        nested(cls, "AclCreationResult", error_code=ErrorCode.security_disabled, error_message=NO_AUTHORIZER + ".")
        for _ in request.creations))
