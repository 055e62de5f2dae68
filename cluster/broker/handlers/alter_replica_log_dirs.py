"""AlterReplicaLogDirs (API 34, v0-v2): put replicas of this broker in given log dirs (KIP-113).

Per partition, as Kafka's ReplicaManager.alterReplicaLogDirs answers:
- LOG_DIR_NOT_FOUND: the path is not one of this broker's log dirs;
- KAFKA_STORAGE_ERROR: the dir cannot be used, or the future log cannot be made;
- UNKNOWN_TOPIC_OR_PARTITION: neither hosted here nor known to the cluster
  (so bogus names are not remembered);
- REPLICA_NOT_AVAILABLE: not hosted here yet; the dir is remembered and the
  replica is created there when its LeaderAndIsr arrives (the reassignment
  tool asks again once it is);
- NONE: the replica is in that dir already (a move elsewhere is cancelled),
  or a move there is under way (started now, or before).
The copying itself is the log dir mover's (log_dir_mover.py).
"""

from __future__ import annotations

import datetime
import logging
import os

from kio.schema.errors import ErrorCode

from kafkactl.cluster.log.errors import LogError
from kafkactl.cluster.protocol.build import make, nested
from kafkactl.cluster.protocol.codec import response_class

API_KEY = 34

log = logging.getLogger(__name__)


def handle(services, header, request):
    cls = response_class(API_KEY, header.api_version)
    results: dict[str, dict[int, ErrorCode]] = {}
    for wanted in request.dirs:
        for topic in wanted.topics:
            for index in topic.partitions:
                results.setdefault(topic.name, {})[index] = alter_replica_log_dir(
                    services, wanted.path, topic.name, index)
    return make(cls, throttle_time=datetime.timedelta(0), results=tuple(
        nested(cls, "AlterReplicaLogDirTopicResult", topic_name=name, partitions=tuple(
            nested(cls, "AlterReplicaLogDirPartitionResult", partition_index=index, error_code=code)
            for index, code in sorted(codes.items())))
        for name, codes in sorted(results.items())))


def alter_replica_log_dir(services, path: str, topic: str, index: int) -> ErrorCode:
    replica_manager = services.replica_manager
    log_manager = replica_manager.log_manager
    dir_path = log_manager.configured_dir(path)
    if dir_path is None:
        return ErrorCode.log_dir_not_found
    if not log_manager.is_dir_online(dir_path) or not os.access(dir_path, os.W_OK | os.X_OK):
        return ErrorCode.kafka_storage_error
    if (topic, index) in replica_manager.offline_partitions:
        return ErrorCode.kafka_storage_error     # its current log's dir failed
    partition = replica_manager.get(topic, index)
    if partition is None:
        return _remember(services, log_manager, dir_path, topic, index)
    try:
        return _move(log_manager, partition, dir_path)
    except (LogError, OSError) as error:
        log.error("%s-%s: cannot start a move to %s: %s", topic, index, dir_path, error)
        return ErrorCode.kafka_storage_error


def _remember(services, log_manager, dir_path: str, topic: str, index: int) -> ErrorCode:
    known = services.metadata.snapshot.topics.get(topic)
    if known is None or index not in known.assignment.partitions:
        return ErrorCode.unknown_topic_or_partition
    if not log_manager.maybe_update_preferred_log_dir(topic, index, dir_path):
        return ErrorCode.kafka_storage_error   # too many remembered: refuse rather than grow
    return ErrorCode.replica_not_available


def _move(log_manager, partition, dir_path: str) -> ErrorCode:
    """Start (or keep, or cancel) the move of a hosted replica to `dir_path`."""
    topic, index = partition.topic, partition.index
    with partition.log_move_lock:
        if log_manager.dir_of(topic, index) == dir_path:
            if partition.future_log is not None:
                partition.attach_future(None)
                log_manager.delete_future_log(topic, index)
            return ErrorCode.none
        if partition.future_log is not None and log_manager.future_dir_of(topic, index) == dir_path:
            return ErrorCode.none
        partition.attach_future(None)   # a move to another dir is abandoned by create_future_log
        partition.attach_future(log_manager.create_future_log(topic, index, dir_path))
    return ErrorCode.none
