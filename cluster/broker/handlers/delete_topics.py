"""DeleteTopics (API 20, v0-v6): mark topics for deletion
(/admin/delete_topics/<t>, which the controller acts on), on the active
controller only (NOT_CONTROLLER elsewhere).

The rules are admin/topic_requests.plan_deletions; the markers are
written on the admin-work thread (a topic already marked counts as marked
now, as Kafka swallows TopicAlreadyMarkedForDeletion), and the answer waits
until the topic is gone from this broker's metadata, or REQUEST_TIMED_OUT
(admin_answers.py).

Versions: v0 has no throttle time; v5 adds the error message; v6 names a
topic by name or by id (answered with both where the id resolves).
"""

from __future__ import annotations

import logging

from kazoo.exceptions import NodeExistsError, RolledBackError
from kio.schema.errors import ErrorCode

from kafkactl.cluster.admin import topics as admin_topics
from kafkactl.cluster.admin.topic_requests import Deletion, plan_deletions
from kafkactl.cluster.broker.handlers.admin_answers import NO_THROTTLE, MetadataAnswer, submit, timeout_ms
from kafkactl.cluster.broker.handlers.services import is_controller
from kafkactl.cluster.protocol.build import make, nested
from kafkactl.cluster.protocol.codec import response_class
from kafkactl.cluster.zk import codecs

log = logging.getLogger(__name__)

API_KEY = 20
ZK_CALL_TIMEOUT_S = 10.0


def handle(services, header, request):
    version = header.api_version
    entries = _entries(request)
    if not is_controller(services):
        return _response(version, [Deletion(n, i, ErrorCode.not_controller) for n, i in entries])
    snapshot = services.metadata.snapshot
    ids = {name: topic.assignment.topic_id for name, topic in snapshot.topics.items()}
    plan = plan_deletions(entries, ids, version, services.config.delete_topic_enable)
    to_mark = list(dict.fromkeys(d.name for d in plan if d.error is None))
    if not to_mark:
        return _response(version, plan)

    def work(zk):
        return mark(zk.client, to_mark)

    def shown(refused, snap) -> bool:
        return all(name not in snap.topics for name in to_mark if name not in refused)

    def build(refused, snap):
        return _response(version, [_settled(d, refused, snap) for d in plan])

    def on_failure(error):
        return _response(version, [d if d.error is not None else Deletion(d.name, d.topic_id, error) for d in plan])

    return MetadataAnswer(submit(services, work), services.metadata, timeout_ms(request) / 1000,
                          shown, build, on_failure)


def _entries(request) -> list[tuple[str | None, str | None]]:
    if hasattr(request, "topics"):   # v6: a name or an id each
        return [(t.name, codecs.topic_id_to_string(t.topic_id) if t.topic_id else None) for t in request.topics]
    return [(name, None) for name in request.topic_names]


def mark(client, topics: list[str]) -> dict[str, ErrorCode]:
    """Runs on the admin-work thread: marks the topics still in ZooKeeper;
    the refused ones and their errors (Kafka's AdminZkClient.deleteTopic)."""
    for attempt in range(2):
        existing = set(admin_topics.list_topics(client, ZK_CALL_TIMEOUT_S))
        marked = set(admin_topics.marked_for_deletion(client, ZK_CALL_TIMEOUT_S))
        refused = {t: ErrorCode.unknown_topic_or_partition for t in topics if t not in existing}
        try:
            admin_topics.mark_for_deletion(client, [t for t in topics if t in existing and t not in marked],
                                           ZK_CALL_TIMEOUT_S)
            return refused
        except (NodeExistsError, RolledBackError):
            # Another writer marked one meanwhile (the multi names its first
            # failure, maybe a rolled-back part): nothing was written; read again.
            if attempt:
                raise
    raise AssertionError("unreachable")


def _settled(deletion: Deletion, refused: dict[str, ErrorCode], snapshot) -> Deletion:
    if deletion.error is not None:
        return deletion
    error = refused.get(deletion.name)
    if error is None and (snapshot is None or deletion.name in snapshot.topics):
        error = ErrorCode.request_timed_out
    return Deletion(deletion.name, deletion.topic_id, error or ErrorCode.none)


def _response(version: int, deletions: list[Deletion]):
    cls = response_class(API_KEY, version)
    return make(cls, throttle_time=NO_THROTTLE, responses=tuple(
        nested(cls, "DeletableTopicResult", name=d.name,
               topic_id=codecs.topic_id_from_string(d.topic_id) if d.topic_id else None,
               error_code=d.error, error_message=None)
        for d in deletions))
