"""The steps of `topics alter --replication-factor` that differ between the
back ends (cli/replication_factor.py runs them in `reassign execute`'s order).

Through ZooKeeper (-z) they are cli/reassign_run.py's: the throttles and
/admin/reassign_partitions in one multi, checked against the topic znode's
version the plan was made from. Through the Admin API (-b) they are
cli/reassign_admin.py's, as Kafka's tool runs --bootstrap-server: the
throttles with IncrementalAlterConfigs, then AlterPartitionReassignments.
Nothing makes those conditional on the topic, so the topic's replicas (and
the running reassignments) are read again just before, and the start is
refused if they changed since the plan was made. The same reassignment could
still start between that read and AlterPartitionReassignments; the window is
a few requests, not the operator's time to confirm.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import typer

from kafkactl.cli.common import ZK_TIMEOUT_S, timeout_s
from kafkactl.cli.errors import CliError, CliUsageError


@dataclass(frozen=True)
class SeenTopic:
    """The topic as the plan is made from it."""
    topic: str
    partitions: dict[int, list[int]]        # partition -> replicas
    moving: list[int]                       # partitions with adding/removing replicas
    leaders: dict[int, int]                 # partition -> leader, where it has one
    zk_version: int | None = None           # the topic znode's version (-z only)


def steps_for(ctx: typer.Context, backend):
    from kafkactl.cluster.admin.backend import ZOOKEEPER

    return ZooKeeperSteps(ctx, backend) if backend.kind == ZOOKEEPER else AdminApiSteps(ctx, backend)


def not_found(topic: str) -> CliUsageError:
    return CliUsageError(f"topic {topic!r} does not exist (see `kafkactl topics list`)")


@dataclass
class ZooKeeperSteps:
    ctx: typer.Context
    backend: object                         # ZooKeeperBackend
    moving_source: str = "adding/removing replicas in its topic znode"
    writes: object = field(default=None, init=False)

    @property
    def client(self):
        return self.backend.client

    @property
    def zk_timeout_s(self) -> float:
        return timeout_s(self.ctx, ZK_TIMEOUT_S)

    def read_topic(self, topic: str) -> SeenTopic:
        from kafkactl.cluster.admin.topics import TopicNotFoundError, read_assignment

        try:
            assignment, zk_version = read_assignment(self.client, topic, self.zk_timeout_s)
        except TopicNotFoundError:
            raise not_found(topic) from None
        described = self.backend.describe_topics([topic])[topic] or ()
        return SeenTopic(topic, dict(assignment.partitions),
                         sorted(set(assignment.adding_replicas) | set(assignment.removing_replicas)),
                         {info.partition: info.leader for info in described if info.leader >= 0}, zk_version)

    def refuse_if_running(self) -> None:
        from kafkactl.cli.reassign_run import refuse_if_running

        refuse_if_running(self.client, self.zk_timeout_s)

    def replica_load(self) -> dict[int, int]:
        """Replicas per broker over every topic: only the topic znodes, read with multiRead
        (describe_topics would read every partition's state znode too)."""
        from kafkactl.cluster.admin.replication_factor import replica_load
        from kafkactl.cluster.admin.topics import list_topics, read_nodes
        from kafkactl.cluster.zk import codecs, layout

        names = list_topics(self.client, self.zk_timeout_s)
        nodes = read_nodes(self.client, [layout.topic(n) for n in names], self.zk_timeout_s)
        return replica_load(codecs.decode_topic(name, node[0]).partitions
                            for name, node in zip(names, nodes) if node is not None)   # None: deleted meanwhile

    def plan_throttles(self, current: dict, targets: dict, rate: int | None, live: set[int]) -> list[str]:
        from kafkactl.cli.reassign_run import throttle_writes

        self.writes = throttle_writes(self.client, current, targets, rate, self.zk_timeout_s)
        return [e.entity_path for e in self.writes.changes]

    def refuse_if_changed(self, seen: SeenTopic) -> None:
        """Nothing to do yet: start's multi checks the topic znode's version."""

    def start(self, targets: dict, seen: SeenTopic, rollback: Path) -> None:
        from kafkactl.cli.reassign_run import start
        from kafkactl.cluster.zk import layout

        start(self.client, targets, self.writes, self.zk_timeout_s,
              unchanged={layout.topic(seen.topic): seen.zk_version})

    def wait(self, targets: dict) -> list:
        from kafkactl.cli.reassign_run import WAIT_TIMEOUT_S, wait_with_progress

        return wait_with_progress(self.client, targets, timeout_s(self.ctx, WAIT_TIMEOUT_S), self.zk_timeout_s)

    def remove_throttles(self, topic: str) -> list[str]:
        from kafkactl.cli.reassign_run import remove_throttles

        return remove_throttles(self.client, {topic}, self.zk_timeout_s)


@dataclass
class AdminApiSteps:
    ctx: typer.Context
    backend: object                         # AdminApiBackend
    moving_source: str = "ListPartitionReassignments lists it"
    throttles: object = field(default=None, init=False)

    def read_topic(self, topic: str) -> SeenTopic:
        """Metadata's replicas; a partition being moved shows its full replica set and
        its adding/removing replicas (ListPartitionReassignments)."""
        views = self.backend.partition_views([topic])[topic]
        if views is None:
            raise not_found(topic)
        return SeenTopic(topic, {p: list(v.replicas) for p, v in views.items()},
                         sorted(p for p, v in views.items() if v.is_moving),
                         {p: v.leader for p, v in views.items() if v.leader >= 0})

    def refuse_if_running(self) -> None:
        from kafkactl.cli.reassign_admin import refuse_if_running

        refuse_if_running(self.backend.list_reassignments())

    def replica_load(self) -> dict[int, int]:
        """Replicas per broker over every topic, from Metadata (one request for all topics)."""
        from kafkactl.cluster.admin.replication_factor import replica_load

        described = self.backend.describe_topics(self.backend.topic_names())
        return replica_load({info.partition: info.replicas for info in parts}
                            for parts in described.values() if parts is not None)

    def plan_throttles(self, current: dict, targets: dict, rate: int | None, live: set[int]) -> list[str]:
        from kafkactl.cli.reassign_admin import plan_throttles

        self.throttles = plan_throttles(self.backend, current, targets, rate, live)
        return list(self.throttles.entities)

    def refuse_if_changed(self, seen: SeenTopic) -> None:
        """The Admin API's stand-in for the znode version check, before anything is written:
        no reassignment started meanwhile, and the topic's replicas are those planned from."""
        from kafkactl.cli.reassign_admin import look, refuse_if_running
        from kafkactl.cluster.admin.replication_factor import changed_since

        running, views = look(self.backend, {seen.topic})
        refuse_if_running(running)
        now = {p: list(v.replicas) for (t, p), v in views.items() if t == seen.topic} or None
        changed = changed_since(seen.topic, seen.partitions, now)
        if changed:
            raise CliError(f"{changed}: the plan was made from the topic as it was; nothing was changed, "
                           f"run the command again")

    def start(self, targets: dict, seen: SeenTopic, rollback: Path) -> None:
        from kafkactl.cli.reassign_admin import start_throttled, warn_not_live

        warn_not_live(self.throttles)
        start_throttled(self.backend, targets, self.throttles, rollback)

    def wait(self, targets: dict) -> list:
        from kafkactl.cli.reassign_admin import wait_with_progress

        return wait_with_progress(self.ctx, self.backend, targets)

    def remove_throttles(self, topic: str) -> list[str]:
        from kafkactl.cli.reassign_admin import remove_throttles

        return remove_throttles(self.backend, {topic})
