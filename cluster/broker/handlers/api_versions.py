"""ApiVersions: what this broker speaks.

An unsupported request version is answered with a v0 response carrying
UNSUPPORTED_VERSION and the supported list, so the client can retry with a
version both sides know (KIP-511); ApiVersions responses always use response
header v0.
"""

from __future__ import annotations

import datetime

from kio.schema.api_versions.v0.response import ApiVersion as ApiVersionV0
from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0
from kio.schema.errors import ErrorCode

from kafkactl.cluster.protocol.apis import SUPPORTED
from kafkactl.cluster.protocol.build import make, nested
from kafkactl.cluster.protocol.codec import response_class


def _api_keys(response_cls):
    return tuple(
        nested(response_cls, "ApiVersion", api_key=key, min_version=r.advertised_min, max_version=r.advertised_max)
        for key, r in sorted(SUPPORTED.items())
    )


def unsupported_version_response() -> ApiVersionsResponseV0:
    return ApiVersionsResponseV0(
        error_code=ErrorCode.unsupported_version,
        api_keys=tuple(
            ApiVersionV0(api_key=key, min_version=r.advertised_min, max_version=r.advertised_max)
            for key, r in sorted(SUPPORTED.items())
        ),
    )


def handle(services, header, request):
    cls = response_class(18, header.api_version)
    return make(
        cls,
        error_code=ErrorCode.none,
        api_keys=_api_keys(cls),
        throttle_time=datetime.timedelta(0),
        supported_features=(),
        finalized_features_epoch=-1,
        finalized_features=(),
        zk_migration_ready=False,
    )
