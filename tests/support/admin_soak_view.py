"""What the admin soak reads and waits for: ZooKeeper in Kafka's layout, seen
from outside the cluster, and the obligations each step leaves.

An obligation is something the controller must do because of a znode the
soak wrote (act on /admin/reassign_partitions, delete a topic, give new
partitions a leader, take a dead broker out of every ISR). Its clock starts
when the controller *can* do it: a controller is up and the brokers the
operation needs are up (a reassignment onto a broker that is down waits for
it, as in Kafka). From then on it must be done within its bound.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from kazoo.exceptions import NoNodeError

from kafkactl.cluster.zk import codecs, layout
from kafkactl.cluster.zk.client import wait

ZK_TIMEOUT_S = 10.0
POLL_S = 0.1


class SoakFailure(AssertionError):
    """A step's obligation was not met in time (or a check failed)."""

    def __init__(self, step: int, message: str) -> None:
        super().__init__(f"step {step}: {message}")
        self.step = step
        self.detail = message


class ZkView:
    """Bounded reads of the cluster's ZooKeeper state."""

    def __init__(self, zk) -> None:
        self.zk = zk

    def exists(self, path: str) -> bool:
        return wait(self.zk.exists_async(path), ZK_TIMEOUT_S) is not None

    def children(self, path: str) -> list[str]:
        try:
            return sorted(wait(self.zk.get_children_async(path), ZK_TIMEOUT_S))
        except NoNodeError:
            return []

    def get(self, path: str) -> tuple[bytes, object] | None:
        try:
            return wait(self.zk.get_async(path), ZK_TIMEOUT_S)
        except NoNodeError:
            return None

    def topics(self) -> list[str]:
        return self.children(layout.BROKER_TOPICS)

    def assignment(self, topic: str) -> codecs.TopicAssignment | None:
        node = self.get(layout.topic(topic))
        return None if node is None else codecs.decode_topic(topic, node[0])

    def assignment_and_version(self, topic: str) -> tuple[codecs.TopicAssignment, int] | None:
        node = self.get(layout.topic(topic))
        return None if node is None else (codecs.decode_topic(topic, node[0]), node[1].version)

    def states(self, topic: str, partitions) -> dict[int, codecs.PartitionState | None]:
        futures = {p: self.zk.get_async(layout.partition_state(topic, p)) for p in partitions}
        states = {}
        for p, future in futures.items():
            try:
                data, stat = wait(future, ZK_TIMEOUT_S)
                states[p] = codecs.decode_partition_state(layout.partition_state(topic, p), data, stat.version)
            except NoNodeError:
                states[p] = None
        return states

    def state(self, topic: str, partition: int) -> codecs.PartitionState | None:
        return self.states(topic, [partition])[partition]

    def registered(self) -> set[int]:
        return {int(c) for c in self.children(layout.BROKER_IDS) if c.isdigit()}

    def controller(self) -> int | None:
        node = self.get(layout.CONTROLLER)
        return None if node is None else codecs.decode_controller(node[0])

    def describe(self, topics) -> str:
        """Assignment, adding/removing and leader/ISR of the topics' partitions."""
        lines = [f"controller {self.controller()}, registered {sorted(self.registered())}, "
                 f"reassign znode {self.get(layout.REASSIGN_PARTITIONS)}, "
                 f"preferred znode {self.get(layout.PREFERRED_REPLICA_ELECTION)}, "
                 f"delete_topics {self.children(layout.DELETE_TOPICS)}, "
                 f"isr_change_notification {self.children(layout.ISR_CHANGE_NOTIFICATION)}"]
        for topic in sorted(set(topics)):
            assignment = self.assignment(topic)
            if assignment is None:
                lines.append(f"  {topic}: no topic znode")
                continue
            lines.append(f"  {topic}: adding {assignment.adding_replicas} removing {assignment.removing_replicas}")
            states = self.states(topic, sorted(assignment.partitions))
            for p, replicas in sorted(assignment.partitions.items()):
                s = states[p]
                lines.append(f"    {topic}-{p} replicas {replicas} " + (
                    f"leader {s.leader} epoch {s.leader_epoch} isr {s.isr} zkVersion {s.zk_version}"
                    if s else "no state"))
        return "\n".join(lines)

    # --- the whole-cluster check after every step

    def isr_problems(self, down: set[int]) -> list[str]:
        """Partitions whose leader or ISR names a broker that is not
        registered, or that have no leader while a live ISR member could lead.
        A partition without a leader keeps its last ISR (Kafka never empties
        it), so dead members are allowed there."""
        registered = self.registered() - down
        problems = []
        for topic in self.topics():
            if self.exists(layout.delete_topic(topic)):
                continue                      # being deleted: no longer elected
            assignment = self.assignment(topic)
            if assignment is None:
                continue
            for p, s in self.states(topic, sorted(assignment.partitions)).items():
                if s is None:
                    continue
                if s.leader == -1:
                    if any(r in registered for r in s.isr):
                        problems.append(f"{topic}-{p}: no leader although ISR {s.isr} has a live broker")
                elif s.leader not in registered or not set(s.isr) <= registered:
                    problems.append(f"{topic}-{p}: leader {s.leader} ISR {s.isr}, live {sorted(registered)}")
        return problems


@dataclass
class Obligation:
    what: str                                   # for messages
    kind: str                                   # for latency statistics
    done: Callable[[], bool]
    bound_s: float
    ready: Callable[[], bool]                   # can the controller do it now?
    topics: tuple[str, ...] = ()                # described when it fails
    written_at: float = field(default_factory=time.monotonic)
    ready_since: float | None = None
    step: int = -1

    def deadline(self) -> float | None:
        return None if self.ready_since is None else self.ready_since + self.bound_s


@dataclass
class Latencies:
    by_kind: dict[str, list[float]] = field(default_factory=dict)

    def add(self, kind: str, seconds: float) -> None:
        self.by_kind.setdefault(kind, []).append(seconds)

    def summary(self) -> str:
        parts = []
        for kind, values in sorted(self.by_kind.items()):
            ordered = sorted(values)
            median = ordered[len(ordered) // 2]
            parts.append(f"{kind}: {len(ordered)} x, median {median:.2f} s, max {ordered[-1]:.2f} s")
        return "; ".join(parts)


def settle(obligations: list[Obligation], step: int, view: ZkView, latencies: Latencies,
           log: Callable[[str], None]) -> None:
    """Wait until every obligation the controller can act on is done, each
    within its bound from when it became actionable. Those it cannot act on
    yet (a broker they need is down) stay in the list for later steps."""
    while True:
        now = time.monotonic()
        waiting = False
        for obligation in list(obligations):
            if obligation.done():
                obligations.remove(obligation)
                start = obligation.ready_since if obligation.ready_since is not None else now
                latencies.add(obligation.kind, max(0.0, time.monotonic() - start))
                continue
            if not obligation.ready():
                obligation.ready_since = None
                continue
            if obligation.ready_since is None:
                obligation.ready_since = now
            waiting = True
            if now > obligation.deadline():
                detail = view.describe(obligation.topics) if obligation.topics else view.describe([])
                raise SoakFailure(step, f"{obligation.what} (written at step {obligation.step}) not done "
                                        f"{now - obligation.ready_since:.1f} s after the controller could "
                                        f"act on it (bound {obligation.bound_s:g} s)\n{detail}")
        if not waiting:
            return
        time.sleep(POLL_S)
