"""A 3-broker local cluster for the replication benchmarks, with a kazoo client and pipelined
reads of partition states; waits for a steady state, preferred elections, restarts."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from replication_support.wire import list_offsets

ZK_TIMEOUT_S = 30.0
NOT_LEADER_OR_FOLLOWER = 6

# Kept off in every cluster here: a rebalance timer firing mid-run would move
# leaders at a random moment. Leaderships go back by explicit preferred election.
BASE_OVERRIDES = {"auto.leader.rebalance.enable": "false"}


def setup_timeout_s(n: int) -> float:
    """How long creating (or restoring) a topic of n partitions may take."""
    return max(120.0, n * 0.2)    # 10,000 partitions took ~550 s to create here


@dataclass
class State:
    leader: int
    leader_epoch: int
    isr: list[int]
    version: int
    mtime_s: float          # ZooKeeper's clock (the server's wall clock), seconds


class BenchCluster:
    """A 3-broker LocalCluster, a kazoo client, and pipelined reads of partition states."""

    def __init__(self, root: Path, overrides: dict[str, str], timeout_s: float = 180.0) -> None:
        from kafkactl.cluster.local import LocalCluster

        self.cluster = LocalCluster(root)
        self.zk = None
        self.status = self.cluster.up(brokers=3, overrides={**BASE_OVERRIDES, **overrides},
                                      timeout_s=timeout_s)
        from kafkactl.cluster.zk import client as zk_client

        self.zk = zk_client.connect(self.status.zookeeper_connect, session_timeout_ms=10_000,
                                    connection_timeout_ms=int(ZK_TIMEOUT_S * 1000))

    def close(self) -> None:
        from kafkactl.cluster.zk import client as zk_client

        try:
            if self.zk is not None:
                zk_client.close(self.zk)
        finally:
            self.cluster.down(purge=True)

    def refresh(self) -> None:
        self.status = self.cluster.status(check_registration=False)

    def broker(self, broker_id: int):
        return self.status.broker(broker_id)

    def controller_id(self) -> int:
        data, _ = self.zk.get("/controller")
        return json.loads(data)["brokerid"]

    def roles(self) -> tuple[int, int, int]:
        """(leader, follower, controller): the two brokers that are not the controller first."""
        controller = self.controller_id()
        others = sorted(b.id for b in self.status.brokers if b.id != controller)
        return others[0], others[1], controller

    def create_topic(self, topic: str, assignment: dict[int, list[int]], config: dict[str, str]) -> None:
        from kafkactl.cluster.admin.topics import create_topic

        create_topic(self.zk, topic, assignment, config, timeout_s=ZK_TIMEOUT_S)

    def new_topic(self, topic: str, assignment: dict[int, list[int]], config: dict[str, str], what: str,
                  timeout_s: float) -> tuple[dict[int, State], float]:
        """Create a topic and wait until every partition is led by its first replica with every
        replica in the ISR, and every broker has applied that: (the states, seconds until
        ZooKeeper had them)."""
        t0 = time.monotonic()
        self.create_topic(topic, assignment, config)
        states = self.wait_states(topic, assignment, lambda p: assignment[p][0], what, timeout_s)
        in_zk_s = time.monotonic() - t0
        self.wait_applied(topic, assignment, what, timeout_s)
        return states, in_zk_s

    def states(self, topic: str, partitions, watch_factory=None) -> dict[int, State | None]:
        """Pipelined reads; with watch_factory(p), each read also sets a data watch."""
        results = {p: self.zk.get_async(f"/brokers/topics/{topic}/partitions/{p}/state",
                                        watch=watch_factory(p) if watch_factory else None)
                   for p in partitions}
        states = {}
        for p, result in results.items():
            try:
                data, stat = result.get(timeout=ZK_TIMEOUT_S)
            except Exception:  # no node yet
                states[p] = None
                continue
            value = json.loads(data)
            states[p] = State(value["leader"], value["leader_epoch"], value["isr"], stat.version,
                              stat.mtime / 1000)
        return states

    def wait_states(self, topic: str, assignment: dict[int, list[int]], leader_of, what: str,
                    timeout_s: float) -> dict[int, State]:
        """Until every partition is led by leader_of(p) with every replica in the ISR."""
        deadline = time.monotonic() + timeout_s
        pending = dict(assignment)
        done: dict[int, State] = {}
        while True:
            states = self.states(topic, pending)
            for p, state in states.items():
                if (state is not None and state.leader == leader_of(p)
                        and sorted(state.isr) == sorted(assignment[p])):
                    done[p] = state
                    del pending[p]
            if not pending:
                return done
            if time.monotonic() > deadline:
                sample = {p: states[p] for p in list(pending)[:3]}
                raise RuntimeError(f"{what}: {len(pending)} of {len(assignment)} partitions not ready "
                                   f"after {timeout_s:.0f} s, e.g. {sample}")
            time.sleep(0.25 if len(pending) < 2000 else 1.0)

    def wait_applied(self, topic: str, assignment: dict[int, list[int]], what: str,
                     timeout_s: float) -> None:
        """Until every replica has applied the leader epoch now in ZooKeeper: the leader answers
        ListOffsets at that epoch, each follower NOT_LEADER_OR_FOLLOWER at that epoch. (The
        controller writes ZooKeeper before it sends LeaderAndIsr; a broker still working
        through a big one would delay the next measurement.)"""
        deadline = time.monotonic() + timeout_s
        states = self.states(topic, assignment)
        pending = {b: sorted(p for p, r in assignment.items() if b in r)
                   for b in {b for r in assignment.values() for b in r}}
        while True:
            for broker_id, parts in list(pending.items()):
                broker = self.broker(broker_id)
                # A spread sample first: asking about thousands of partitions every
                # poll would load a broker that is still busy creating them.
                sample = parts[::max(len(parts) // 16, 1)] + parts[-1:]
                if len(parts) > 64 and not self._applied(broker, topic, sample, states):
                    continue
                answers = list_offsets(broker.host, broker.port, topic, parts)
                left = []
                for p in parts:
                    error, _, epoch = answers[p]
                    expected = 0 if states[p].leader == broker_id else NOT_LEADER_OR_FOLLOWER
                    if error != expected or epoch != states[p].leader_epoch:
                        left.append(p)
                if left:
                    pending[broker_id] = left
                else:
                    del pending[broker_id]
            if not pending:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what}: brokers have not applied the leader epochs of "
                                   f"{ {b: len(p) for b, p in pending.items()} } partitions")
            time.sleep(0.25 if len(assignment) <= 1000 else 1.0)

    def _applied(self, broker, topic: str, parts: list[int], states: dict[int, State]) -> bool:
        answers = list_offsets(broker.host, broker.port, topic, parts)
        return all(answers[p][0] == (0 if states[p].leader == broker.id else NOT_LEADER_OR_FOLLOWER)
                   and answers[p][2] == states[p].leader_epoch for p in parts)

    def wait_quiet(self, topic: str, assignment: dict[int, list[int]], timeout_s: float) -> None:
        """Every partition led by its first replica with every replica in the ISR, applied by every
        broker, no ISR change notification waiting for the controller, and nothing changing for a
        few seconds. (After creating thousands of partitions the brokers are busy long enough for
        followers to drop out of ISRs and come back, and the controller works through one
        notification per change.)"""
        deadline = time.monotonic() + timeout_s
        settle_s = min(max(len(assignment) / 1000, 1.0), 10.0)
        while True:
            self.wait_states(topic, assignment, lambda p: assignment[p][0], "steady state", timeout_s)
            self.wait_applied(topic, assignment, "steady state", timeout_s)
            while self.zk.get_children("/isr_change_notification"):
                if time.monotonic() > deadline:
                    raise RuntimeError("steady state: ISR change notifications are not being consumed")
                time.sleep(0.5)
            versions = {p: s.version for p, s in self.states(topic, assignment).items()}
            time.sleep(settle_s)
            again = self.states(topic, assignment)
            if all(again[p].version == v for p, v in versions.items()):
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"steady state: partition states still changing after {timeout_s:.0f} s")

    def elect_preferred(self, topic: str, assignment: dict[int, list[int]], timeout_s: float) -> int:
        """Preferred replica election until every partition is led by its first replica; returns how
        many elections that took. The controller elects from its own view of the ISRs, which lags
        ZooKeeper while it works through ISR change notifications: a partition whose preferred
        replica it does not see in the ISR yet is skipped and the trigger deleted, so ask again."""
        deadline = time.monotonic() + timeout_s
        for attempt in range(1, 31):
            states = self.states(topic, assignment)
            moving = [p for p, r in assignment.items() if states[p].leader != r[0]]
            if not moving:
                return attempt - 1
            self.preferred_election(topic, moving)
            while self.zk.exists("/admin/preferred_replica_election") is not None:
                if time.monotonic() > deadline:
                    raise RuntimeError("preferred election: the controller did not finish in time")
                time.sleep(0.25)
        raise RuntimeError(f"preferred election: {len(moving)} partitions still not led by their first replica")

    def preferred_election(self, topic: str, partitions) -> None:
        from kafkactl.cluster.zk import codecs

        path = "/admin/preferred_replica_election"
        deadline = time.monotonic() + ZK_TIMEOUT_S
        while self.zk.exists(path) is not None:     # an earlier one still running
            if time.monotonic() > deadline:
                raise RuntimeError(f"{path} was not removed by the controller")
            time.sleep(0.1)
        self.zk.create(path, codecs.encode_partition_list([(topic, p) for p in partitions]))

    def restore_leader(self, topic: str, assignment: dict[int, list[int]], timeout_s: float) -> dict:
        """Restart what is down, wait for full ISRs, give every partition back to its first replica."""
        t0 = time.monotonic()
        self.status = self.cluster.up(timeout_s=timeout_s)
        t_up = time.monotonic()
        states = self.states(topic, assignment)
        current = {p: s.leader for p, s in states.items()}
        self.wait_states(topic, assignment, lambda p: current[p], "ISR expansion after restart", timeout_s)
        t_isr = time.monotonic()
        elections = self.elect_preferred(topic, assignment, timeout_s)
        self.wait_applied(topic, assignment, "preferred election", timeout_s)
        t_led = time.monotonic()
        return {"restart_s": t_up - t0, "isr_full_s": t_isr - t_up, "preferred_s": t_led - t_isr,
                "preferred_elections": elections}

    def end_offsets(self, topic: str, partitions) -> dict[int, int]:
        """Log end offsets (ListOffsets latest) from each partition's leader."""
        states = self.states(topic, partitions)
        by_leader: dict[int, list[int]] = {}
        for p, state in states.items():
            by_leader.setdefault(state.leader, []).append(p)
        offsets = {}
        for leader, parts in by_leader.items():
            broker = self.broker(leader)
            answers = list_offsets(broker.host, broker.port, topic, parts)
            for p, (error, offset, _) in answers.items():
                if error:
                    raise RuntimeError(f"ListOffsets {topic}-{p} at broker {leader}: error {error}")
                offsets[p] = offset
        return offsets

