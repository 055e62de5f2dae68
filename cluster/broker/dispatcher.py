"""Routes one request frame to its handler and encodes the answer.

Unsupported versions: ApiVersions gets its v0 fallback answer (KIP-511);
versions Kafka 2.8 serves that this broker cannot (protocol/apis.py,
`is_refused`) are answered with UNSUPPORTED_VERSION in their own layout
(handlers/unsupported_version.py); any other unknown API or version cannot
be answered in a layout the client expects, so the connection is closed, as
Apache Kafka does.
"""

from __future__ import annotations

import logging
import time

from kafkactl.cluster.broker.handlers import (
    alter_replica_log_dirs,
    api_versions,
    create_partitions,
    create_topics,
    delete_groups,
    delete_topics,
    describe_configs,
    describe_groups,
    describe_log_dirs,
    fetch,
    find_coordinator,
    heartbeat,
    init_producer_id,
    join_group,
    leave_group,
    list_groups,
    list_offsets,
    metadata,
    offset_commit,
    offset_delete,
    offset_fetch,
    offset_for_leader_epoch,
    produce,
    sync_group,
    unsupported_version,
)
from kafkactl.cluster.broker.handlers import control as control_handlers
from kafkactl.cluster.broker.deferred import DeferredResponse, PendingAnswer
from kafkactl.cluster.protocol import apis, control
from kafkactl.cluster.protocol.codec import SplicedResponse, decode_request, encode_response
from kafkactl.cluster.protocol.framing import FrameError, peek_api

log = logging.getLogger(__name__)

HANDLERS = {
    apis.PRODUCE: produce.handle,
    apis.FETCH: fetch.handle,
    apis.LIST_OFFSETS: list_offsets.handle,
    apis.METADATA: metadata.handle,
    apis.FIND_COORDINATOR: find_coordinator.handle,
    apis.API_VERSIONS: api_versions.handle,
    apis.INIT_PRODUCER_ID: init_producer_id.handle,
    apis.OFFSET_FOR_LEADER_EPOCH: offset_for_leader_epoch.handle,
    apis.DESCRIBE_CONFIGS: describe_configs.handle,
    apis.DESCRIBE_LOG_DIRS: describe_log_dirs.handle,
    apis.ALTER_REPLICA_LOG_DIRS: alter_replica_log_dirs.handle,
    apis.OFFSET_COMMIT: offset_commit.handle,
    apis.OFFSET_FETCH: offset_fetch.handle,
    apis.JOIN_GROUP: join_group.handle,
    apis.HEARTBEAT: heartbeat.handle,
    apis.LEAVE_GROUP: leave_group.handle,
    apis.SYNC_GROUP: sync_group.handle,
    apis.DESCRIBE_GROUPS: describe_groups.handle,
    apis.LIST_GROUPS: list_groups.handle,
    apis.DELETE_GROUPS: delete_groups.handle,
    apis.OFFSET_DELETE: offset_delete.handle,
    apis.CREATE_TOPICS: create_topics.handle,
    apis.DELETE_TOPICS: delete_topics.handle,
    apis.CREATE_PARTITIONS: create_partitions.handle,
}

# Handlers that are also told the client's address (JoinGroup records it as
# the member's client host, shown by DescribeGroups).
WITH_CLIENT_HOST = frozenset({apis.JOIN_GROUP})


CONTROL_HANDLERS = {
    control.LEADER_AND_ISR: control_handlers.leader_and_isr,
    control.STOP_REPLICA: control_handlers.stop_replica,
    control.UPDATE_METADATA: control_handlers.update_metadata,
    control.CONTROLLED_SHUTDOWN: control_handlers.controlled_shutdown,
}


class Dispatcher:
    def __init__(self, services) -> None:
        self.services = services
        self.requests = services.metrics.requests

    def dispatch(self, frame: bytes, client_ip: str = "") -> bytes | SplicedResponse | DeferredResponse | None:
        """The response to send, None for none, or a DeferredResponse to
        finish later; FrameError closes the connection.

        Counts the request and its latency under its API (services.metrics);
        one that raises counts as an error."""
        started = time.perf_counter()
        api_key, api_version, correlation_id = peek_api(frame)
        stats = self.requests.stats(api_key)
        try:
            response = self._dispatch(frame, api_key, api_version, correlation_id, client_ip)
        except BaseException:
            stats.errors += 1
            stats.observe(time.perf_counter() - started)
            raise
        if isinstance(response, PendingAnswer):
            return DeferredResponse(response, correlation_id, stats, started)
        stats.observe(time.perf_counter() - started)
        return response

    def _dispatch(self, frame, api_key: int, api_version: int, correlation_id: int, client_ip: str = ""):
        if api_key == apis.API_VERSIONS and not apis.is_supported(api_key, api_version):
            response = api_versions.unsupported_version_response()
            return encode_response(response, correlation_id, flexible_header=False)
        if control.is_control_api(api_key):
            # Controller-to-broker APIs: served, never advertised (kafka-python
            # infers a broker version from the advertised ranges).
            if control.VERSIONS[api_key] != api_version:
                raise FrameError(f"unsupported control api_key {api_key} version {api_version}")
            handler = CONTROL_HANDLERS[api_key]
        elif apis.is_supported(api_key, api_version):
            handler = HANDLERS[api_key]
        elif apis.is_refused(api_key, api_version):
            handler = unsupported_version.HANDLERS[api_key]
        else:
            raise FrameError(f"unsupported api_key {api_key} version {api_version}")
        header, request = decode_request(frame, api_key, api_version)
        if api_key in WITH_CLIENT_HOST and handler is HANDLERS.get(api_key):
            response = handler(self.services, header, request, client_host=f"/{client_ip}")
        else:
            response = handler(self.services, header, request)
        if response is None or isinstance(response, (SplicedResponse, PendingAnswer)):
            return response
        return encode_response(response, correlation_id)
