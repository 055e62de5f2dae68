"""What every `kafkactl groups` command needs: the brokers, a GroupAdmin on
them, and partitions' offsets from their leaders.

Through ZooKeeper (-z) the brokers are those registered in /brokers/ids (as
Kafka's ZooKeeper-mode tools find them) and partition leaders come from the
partition state znodes; through the Admin API (-b) both come from Metadata.
Everything runs under the command's deadline (--timeout, default 30 s): a
`GroupQueryError` (no answer in time) becomes a one-line CliError.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

import typer

from kafkactl.cli.common import cluster_backend, timeout_s
from kafkactl.cli.errors import CliError

GROUP_TIMEOUT_S = 30.0
ZK_CALL_TIMEOUT_S = 10.0         # one ZooKeeper call (the deadline above bounds the command)
# A leader that moved or is still starting: its partitions are asked again,
# the leaders read again from ZooKeeper, this many times.
LEADER_ATTEMPTS = 3
LEADER_RETRY_S = 0.3
LEADER_ERRORS = frozenset({"not_leader_or_follower", "leader_not_available", "leader_not_reachable",
                           "unknown_leader_epoch", "fenced_leader_epoch", "offset_not_available", "no_leader"})

TopicPartition = tuple[str, int]


@dataclass
class GroupCluster:
    backend: object                 # the ClusterBackend, open for the command
    admin: object                   # GroupAdmin
    brokers: dict                   # broker id -> BrokerAddress
    deadline_s: float


@contextmanager
def group_cluster(ctx: typer.Context) -> Iterator[GroupCluster]:
    """The cluster (either back end) and a GroupAdmin on its brokers, for one command."""
    from kafkactl.cluster.admin.broker_queries import BrokerAddress
    from kafkactl.cluster.admin.group_queries import GroupAdmin, GroupQueryError

    deadline_s = timeout_s(ctx, GROUP_TIMEOUT_S)
    with cluster_backend(ctx, min(deadline_s, ZK_CALL_TIMEOUT_S)) as backend:
        registrations = backend.brokers()
        if not registrations:
            raise CliError("no broker is registered in ZooKeeper (/brokers/ids is empty): is the cluster up?")
        brokers = {r.broker_id: BrokerAddress(r.broker_id, r.host, r.port) for r in registrations}
        admin = GroupAdmin(brokers.values(), deadline_s)
        try:
            yield GroupCluster(backend, admin, brokers, deadline_s)
        except GroupQueryError as error:
            raise CliError(str(error)) from None
        finally:
            admin.close()


def partition_counts(cluster: GroupCluster, topics: Iterable[str]) -> dict[str, int | None]:
    """Per topic its number of partitions, None for a topic that does not exist."""
    described = cluster.backend.describe_topics(sorted(set(topics)))
    return {t: None if parts is None else len(parts) for t, parts in described.items()}


def log_offsets(cluster: GroupCluster, timestamps: Mapping[TopicPartition, int]) \
        -> dict[TopicPartition, int | None]:
    """Each partition's offset at its timestamp (-2 earliest, -1 latest, else a
    time in ms) from its leader; None where no leader answered. -1 stays -1:
    no record at or after that time."""
    answers: dict[TopicPartition, int | None] = {tp: None for tp in timestamps}
    pending = dict(timestamps)
    for attempt in range(LEADER_ATTEMPTS):
        leaders = _leaders(cluster, pending)
        asked = {tp: ts for tp, ts in pending.items() if tp in leaders}
        if asked:
            for tp, (offset, error) in cluster.admin.list_offsets(leaders, asked).items():
                if error is None:
                    answers[tp] = offset
                    pending.pop(tp, None)
                elif error not in LEADER_ERRORS:
                    pending.pop(tp, None)      # e.g. unknown_topic_or_partition: asking again will not help
        if not pending or attempt == LEADER_ATTEMPTS - 1:
            break
        time.sleep(LEADER_RETRY_S)
    return answers


def _leaders(cluster: GroupCluster, partitions: Iterable[TopicPartition]) -> dict:
    wanted = set(partitions)
    described = cluster.backend.describe_topics(sorted({t for t, _ in wanted}))
    leaders = {}
    for parts in described.values():
        for info in parts or ():
            tp = (info.topic, info.partition)
            if tp in wanted and info.leader in cluster.brokers:
                leaders[tp] = cluster.brokers[info.leader]
    return leaders


def require_known(description, group: str) -> None:
    """A DescribeGroups error for the group as a one-line CliError."""
    if description.error is not None:
        raise CliError(f"group {group!r}: DescribeGroups failed: {description.error.upper()}")
