"""The cluster under a fault-injection test: a LocalCluster plus a ZooKeeper
client to watch it (support.zk_state) and poke it: kill, stop, pause and
restart brokers, create topics, wait for leaders, full ISRs and replicas
that agree, and collect the brokers' log lines when a test fails.

Everything is observed from outside the brokers: ZooKeeper in Kafka's
layout, and the segment files in the log dirs.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

from kafkactl.cluster.admin.topics import create_topic
from kafkactl.cluster.zk import layout
from kafkactl.cluster.zk.client import connect, wait
from support.log_dirs import partition_batches
from support.names import unique_topic
from support.waiting import wait_for
from support.zk_state import ZK_TIMEOUT_S, ZkStateReads

# Failures detected fast (4 s is ZooKeeper's minimum session here: 2 x tickTime),
# a follower that stops fetching leaves the ISR after 3 s.
BASE_OVERRIDES = {
    "zookeeper.session.timeout.ms": "4000",
    "replica.lag.time.max.ms": "3000",
}
REPLICATION_FACTOR = 3
MIN_INSYNC_REPLICAS = 2


def all_threads_stopped(pid: int) -> bool:
    """Every thread of the process is in the stopped state (T or t in /proc)."""
    states = []
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/stat") as stat:
                states.append(stat.read().rsplit(")", 1)[1].split()[0])
        except FileNotFoundError:
            continue                      # a thread that ended meanwhile
    return bool(states) and all(state in ("T", "t") for state in states)


class FaultCluster(ZkStateReads):
    """A LocalCluster plus a ZooKeeper client to watch and poke it."""

    def __init__(self, cluster, status) -> None:
        self.cluster = cluster
        self.status = status
        self.zk = connect(status.zookeeper_connect, session_timeout_ms=10000, connection_timeout_ms=10000)
        self.paused: set[int] = set()

    @property
    def bootstrap(self) -> str:
        return self.status.bootstrap_servers

    @property
    def broker_ids(self) -> list[int]:
        return [b.id for b in self.status.brokers]

    def close(self) -> None:
        for broker_id in list(self.paused):   # a stopped process ignores SIGTERM
            self.resume(broker_id)
        try:
            self.zk.stop()
            self.zk.close()
        except Exception as error:
            print(f"closing the ZooKeeper client failed: {error}")

    # -- faults

    def kill(self, broker_id: int) -> None:
        """kill -9, and wait until the process is gone."""
        self.cluster.kill_broker(broker_id)

    def stop(self, broker_id: int) -> None:
        """SIGTERM (controlled shutdown), and wait until the process is gone."""
        self.cluster.stop_broker(broker_id)

    def restart(self) -> None:
        """Start every broker that is down, with its data; wait until registered."""
        self.status = self.cluster.up()

    def start_only(self, broker_id: int, timeout_s: float = 30.0) -> None:
        """Start one broker that is down (up() would start all of them), record
        its pid where LocalCluster keeps it (so down() stops it), and wait
        until it registered anew in ZooKeeper."""
        from kafkactl.cluster.local import procs, state
        from kafkactl.cluster.local.brokers import broker_argv

        local = self.cluster
        stale = wait(self.zk.exists_async(layout.broker(broker_id)), ZK_TIMEOUT_S)
        with local._locked():
            spec = local.spec()
            broker = spec.broker(broker_id)
            argv = broker_argv(broker.config_file, local.python, local.broker_module)
            broker.pid = procs.spawn(argv, Path(broker.log_file), cwd=local.root).pid
            state.save(local.layout, spec)

        def registered() -> bool:
            stat = wait(self.zk.exists_async(layout.broker(broker_id)), ZK_TIMEOUT_S)
            return stat is not None and (stale is None or stat.czxid != stale.czxid)
        wait_for(registered, timeout_s, f"broker {broker_id} to register again")
        self.status = local.status(check_registration=False)

    def down(self) -> None:
        self.zk.stop()
        self.cluster.down()

    def up(self) -> None:
        self.status = self.cluster.up()
        self.zk.start(timeout=10)

    def pause(self, broker_id: int) -> None:
        """SIGSTOP the broker, returning once every thread of it has stopped:
        kill() returns before a busy process's threads all reach the stop (a
        fetcher thread was seen to send one more fetch under load)."""
        pid = self.pid(broker_id)
        os.kill(pid, signal.SIGSTOP)
        self.paused.add(broker_id)
        wait_for(lambda: all_threads_stopped(pid), 10, f"broker {broker_id}'s threads to stop", interval_s=0.01)

    def resume(self, broker_id: int) -> None:
        os.kill(self.pid(broker_id), signal.SIGCONT)
        self.paused.discard(broker_id)

    def pid(self, broker_id: int) -> int:
        pid = self.status.broker(broker_id).pid
        assert pid is not None, f"broker {broker_id} is not running"
        return pid

    # -- topics

    def create_topic(self, prefix: str, partitions: int,
                     assignment: dict[int, list[int]] | None = None,
                     config: dict[str, str] | None = None) -> str:
        """RF 3, min.insync.replicas=2; waits until every partition has its full
        ISR and a leader that answers metadata. Default assignment: partition p
        on brokers p+1, p+2, p+3 (mod the broker count), first = preferred."""
        topic = unique_topic(prefix)
        ids = self.broker_ids
        if assignment is None:
            assignment = {p: [ids[(p + i) % len(ids)] for i in range(REPLICATION_FACTOR)]
                          for p in range(partitions)}
        settings = {"min.insync.replicas": str(MIN_INSYNC_REPLICAS), **(config or {})}
        create_topic(self.zk, topic, assignment, settings)
        self.wait_full_isr(topic, timeout_s=20)
        return topic

    # -- waiting

    def wait_full_isr(self, topic: str, timeout_s: float = 20.0) -> None:
        """Every partition has a leader among its replicas and ISR = replicas."""
        def full() -> bool:
            assignment = self.assignment(topic)
            for p, replicas in assignment.partitions.items():
                s = self.state(topic, p)
                if s is None or s.leader not in replicas or sorted(s.isr) != sorted(replicas):
                    return False
            return True
        wait_for(full, timeout_s, f"the full ISR of every partition of {topic}",
                 diagnose=lambda: self.describe(topic))

    def wait_new_leader(self, topic: str, partition: int, old: int, timeout_s: float = 15.0) -> int:
        """A live leader other than `old`, written in ZooKeeper."""
        def elected():
            leader = self.leader(topic, partition)
            return leader if leader not in (-1, old) and leader in self.registered() else None
        return wait_for(elected, timeout_s, f"a new leader of {topic}-{partition} (old {old})",
                        diagnose=lambda: self.describe(topic))

    def wait_replicas_agree(self, topic: str, timeout_s: float = 20.0) -> dict[int, list[tuple]]:
        """Every assigned replica of every partition holds the same batches
        (base offset, last offset, partition leader epoch, CRC) on disk.
        Call when nothing is produced any more. Returns the leaders' batches."""
        def agreeing():
            agreed = {}
            for p, replicas in self.assignment(topic).partitions.items():
                logs = {b: partition_batches(self.status.broker(b).log_dirs, topic, p) for b in replicas}
                if len({tuple(batches) for batches in logs.values()}) != 1:
                    return None
                agreed[p] = logs[replicas[0]]
            return agreed

        def diagnose() -> str:
            lines = [self.describe(topic)]
            for p, replicas in self.assignment(topic).partitions.items():
                for b in replicas:
                    batches = partition_batches(self.status.broker(b).log_dirs, topic, p)
                    tail = batches[-3:]
                    lines.append(f"  {topic}-{p} on broker {b}: {len(batches)} batches, last {tail}")
            return "\n".join(lines)
        return wait_for(agreeing, timeout_s, f"the replicas of {topic} to hold the same batches",
                        interval_s=0.25, diagnose=diagnose)

    # -- diagnostics

    def log_file(self, broker_id: int) -> Path:
        return Path(self.status.broker(broker_id).log_file)

    def _broker_log_lines(self, keep) -> list[tuple[str, int]]:
        """(line, broker id) of every broker log line `keep` accepts, in time order
        (the lines start with their timestamp)."""
        found = []
        for broker in self.status.brokers:
            try:
                text = Path(broker.log_file).read_text(errors="replace")
            except OSError:
                continue
            found += [(line, broker.id) for line in text.splitlines() if keep(line)]
        return sorted(found)

    def controller_lines(self, limit: int = 60) -> list[str]:
        """What every controller decided and sent (from all broker logs), by time."""
        found = self._broker_log_lines(lambda line: "controller.controller: controller" in line)
        return [line for line, _ in found][-limit:]

    def warning_lines(self, limit: int = 40) -> list[str]:
        """WARNING and ERROR lines of every broker log, by time."""
        found = self._broker_log_lines(lambda line: " WARNING " in line or " ERROR " in line)
        return [f"[{broker_id}] {line}" for line, broker_id in found][-limit:]

    def diagnostics(self) -> str:
        return "\n".join([f"cluster dir: {self.cluster.root}", "controller log lines (last 60):",
                          *self.controller_lines(), "broker warnings (last 40):",
                          *self.warning_lines()])

