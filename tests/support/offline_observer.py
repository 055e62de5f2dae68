"""Watches a topic's partitions from its own thread and records every moment
one is offline (used by the rolling-restart and rebalance fault tests)."""

from __future__ import annotations

import threading
import time
from collections import Counter

from kafkactl.cluster.zk import codecs, layout
from kafkactl.cluster.zk.client import wait
from support.zk_state import ZK_TIMEOUT_S


class OfflineObserver:
    """Watches ZooKeeper from a thread of its own, on the FaultCluster's
    session, and records every moment a partition of `topic` is offline: its
    leader is -1, a broker not registered under /brokers/ids, or a broker
    whose process the test has marked as exited (`down`).

    One round, every `interval_s`, pipelines on the one session: children of
    /brokers/ids, the state znode of every partition, children of
    /brokers/ids again. A session's requests are served in order, so when
    both children reads have the same cversion the registered set did not
    change while the states were read and each state is judged against it
    exactly. A round in which a broker (de)registered is judged only where it
    is unambiguous (leader -1 or in neither set) and repeated at once.
    """

    def __init__(self, cluster, topic: str, partitions: int, interval_s: float = 0.025) -> None:
        self.zk = cluster.zk
        self.topic = topic
        self.paths = {p: layout.partition_state(topic, p) for p in range(partitions)}
        self.interval_s = interval_s
        self.down: set[int] = set()
        self.rounds = 0            # rounds judged against an unchanging registered set
        self.state_reads = 0
        self.repeated = 0          # rounds during which /brokers/ids changed
        self.offline: list[str] = []
        self.offline_count = 0
        self.errors: list[str] = []
        self.leaders_seen: Counter = Counter()
        self._seen_offline: set[tuple] = set()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="offline-observer", daemon=True)

    def start(self) -> "OfflineObserver":
        self._thread.start()
        return self

    def stop(self) -> "OfflineObserver":
        self._stopping.set()
        self._thread.join(10)
        return self

    def summary(self) -> str:
        return (f"observer: {self.rounds} rounds ({self.state_reads} partition-state reads), "
                f"{self.repeated} rounds repeated because /brokers/ids changed, "
                f"leaders seen {dict(sorted(self.leaders_seen.items()))}, "
                f"{self.offline_count} offline observations, {len(self.errors)} read errors"
                + (f" (first: {self.errors[0]})" if self.errors else ""))

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                consistent = self._round()
            except Exception as error:   # a ZooKeeper hiccup: note it, go on
                self.errors.append(f"{time.strftime('%H:%M:%S')} {type(error).__name__}: {error}")
                consistent = True
            if consistent:
                self._stopping.wait(self.interval_s)

    def _round(self) -> bool:
        down = set(self.down)   # exited before any of this round's reads
        before = self.zk.get_children_async(layout.BROKER_IDS, include_data=True)
        reads = {p: self.zk.get_async(path) for p, path in self.paths.items()}
        after = self.zk.get_children_async(layout.BROKER_IDS, include_data=True)
        ids_before, stat_before = wait(before, ZK_TIMEOUT_S)
        states = {p: wait(r, ZK_TIMEOUT_S) for p, r in reads.items()}
        ids_after, stat_after = wait(after, ZK_TIMEOUT_S)
        registered_before = {int(c) for c in ids_before if c.isdigit()}
        registered_after = {int(c) for c in ids_after if c.isdigit()}
        consistent = stat_before.cversion == stat_after.cversion
        for p, (data, stat) in states.items():
            state = codecs.decode_partition_state(self.paths[p], data, stat.version)
            self.leaders_seen[state.leader] += 1
            if state.leader == -1:
                reason = "no leader"
            elif state.leader in down:
                reason = f"leader {state.leader}'s process has exited"
            elif state.leader not in registered_before and (consistent or state.leader not in registered_after):
                reason = f"leader {state.leader} is not registered"
            else:
                continue
            self.offline_count += 1
            key = (p, state.leader, state.leader_epoch, stat.version)
            if key not in self._seen_offline and len(self.offline) < 50:
                self._seen_offline.add(key)
                self.offline.append(
                    f"{time.strftime('%H:%M:%S')} {self.topic}-{p}: {reason} (leader epoch "
                    f"{state.leader_epoch}, isr {state.isr}, zkVersion {stat.version}, registered "
                    f"{sorted(registered_before)}/{sorted(registered_after)}, exited {sorted(down)})")
        self.state_reads += len(states)
        if consistent:
            self.rounds += 1
        else:
            self.repeated += 1
        return consistent


def assert_never_offline(observer: OfflineObserver, min_rounds: int) -> None:
    """The observer ran (at least `min_rounds` rounds) and saw no partition offline."""
    assert observer.rounds > min_rounds, f"the observer hardly ran: {observer.summary()}"
    assert not observer.offline, "\n".join([observer.summary(), *observer.offline])

