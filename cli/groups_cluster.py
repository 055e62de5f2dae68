"""What every `kafkactl groups` command needs: the brokers from ZooKeeper, a
GroupAdmin on them, and partitions' offsets from their leaders.

The brokers are those registered in /brokers/ids (as Kafka's ZooKeeper-mode
tools find them); partition leaders come from the partition state znodes.
Everything runs under the command's deadline (--timeout, default 30 s): a
`GroupQueryError` (no answer in time) becomes a one-line CliError.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

import typer

from kafkactl.cli.common import ZK_TIMEOUT_S, timeout_s, zookeeper
from kafkactl.cli.errors import CliError

GROUP_TIMEOUT_S = 30.0
# A leader that moved or is still starting: its partitions are asked again,
# the leaders read again from ZooKeeper, this many times.
LEADER_ATTEMPTS = 3
LEADER_RETRY_S = 0.3
LEADER_ERRORS = frozenset({"not_leader_or_follower", "leader_not_available", "leader_not_reachable",
                           "unknown_leader_epoch", "fenced_leader_epoch", "offset_not_available", "no_leader"})

TopicPartition = tuple[str, int]


@dataclass
class GroupCluster:
    zk: object                      # the kazoo client, open for the command
    admin: object                   # GroupAdmin
    brokers: dict                   # broker id -> BrokerAddress
    deadline_s: float


@contextmanager
def group_cluster(ctx: typer.Context) -> Iterator[GroupCluster]:
    """ZooKeeper and a GroupAdmin on the registered brokers, for one command."""
    from kafkactl.cluster.admin.broker_queries import BrokerAddress
    from kafkactl.cluster.admin.group_queries import GroupAdmin, GroupQueryError
    from kafkactl.cluster.admin.topics import live_brokers

    deadline_s = timeout_s(ctx, GROUP_TIMEOUT_S)
    with zookeeper(ctx) as client:
        registrations = live_brokers(client, min(deadline_s, ZK_TIMEOUT_S))
        if not registrations:
            raise CliError("no broker is registered in ZooKeeper (/brokers/ids is empty): is the cluster up?")
        brokers = {r.broker_id: BrokerAddress(r.broker_id, r.host, r.port) for r in registrations}
        admin = GroupAdmin(brokers.values(), deadline_s)
        try:
            yield GroupCluster(client, admin, brokers, deadline_s)
        except GroupQueryError as error:
            raise CliError(str(error)) from None
        finally:
            admin.close()


def partition_counts(cluster: GroupCluster, topics: Iterable[str]) -> dict[str, int | None]:
    """Per topic its number of partitions, None for a topic that does not exist."""
    from kafkactl.cluster.admin.topics import describe_topics

    described = describe_topics(cluster.zk, sorted(set(topics)), min(cluster.deadline_s, ZK_TIMEOUT_S))
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
    from kafkactl.cluster.admin.topics import describe_topics

    wanted = set(partitions)
    described = describe_topics(cluster.zk, sorted({t for t, _ in wanted}), min(cluster.deadline_s, ZK_TIMEOUT_S))
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
