"""A leader's ISR changes, written to ZooKeeper by one thread, off the request path.

Kafka moved ISR writes off the fetch and produce paths with KIP-497's
AlterPartitionManager; this is the ZooKeeper-era form of it (Kafka's
ZkIsrManager, batched). A follower's fetch that proves it caught up, or the
housekeeping tick that finds one out of sync, only *proposes* the new ISR:
the partition records it as its pending ISR (partition.py) and hands it to
`IsrWriter.submit`, which never blocks. The writer's thread takes what is
due, writes the state znodes conditionally on their zkVersion in one
pipelined batch, and only then changes the partitions' ISRs, and after that
announces them under /isr_change_notification (the controller's cue), as the
synchronous writes did.

While a proposal is pending the leader computes its high watermark over the
*maximal* ISR (the committed ISR and the proposed one together, Kafka's
"maximal ISR"): whichever of the two ZooKeeper ends up holding, every replica
the controller may elect has everything below the high watermark. The
split-brain guard of seed 000 (discussion 3) therefore needs no frozen high
watermark: a leader paused past its session cannot commit what the replicas
it is dropping lack, and its conditional write then meets the newer leader
epoch and it stops acting as leader.

Outcomes of a write, per partition:
- written: the partition takes the new ISR and zkVersion (if the proposal is
  still its pending one: a LeaderAndIsr meanwhile makes it stale);
- conflict (BadVersion): the znode is read back; another leader or epoch
  there means this broker stops acting as leader; otherwise the partition
  adopts the znode's ISR and zkVersion and the ISR rules are applied again,
  a new proposal retried after a backoff, at most MAX_CONFLICT_RETRIES times
  in a row (then the next fetch or housekeeping tick proposes again);
- unknown (a timeout, a lost connection): the proposal stays pending (the
  high watermark keeps using the maximal ISR) and the znode is read back
  after a backoff that doubles up to RETRY_BACKOFF_MAX_MS, until it settles.

Threads: request threads and the housekeeping thread submit into `_inbox`
(under `_lock`); only the writer thread owns `_pending` (what waits for its
turn or its backoff) and talks to the store. A newer proposal for a
partition replaces the one waiting for it in either.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import Callable

from kafkactl.cluster import fatal
from kafkactl.cluster.zk.codecs import PartitionState

log = logging.getLogger(__name__)

# At most this many partitions wait for a write: one proposal per partition,
# so only a broker leading more than this many partitions, all changing their
# ISR at once, sees a proposal refused (the next fetch or tick proposes again).
MAX_PENDING_PROPOSALS = 100_000
# Written in one pipelined batch: a rejoining follower proves thousands of
# ISRs in one fetch, and ZooKeeper answers a pipelined batch in ~one round trip.
MAX_BATCH_PROPOSALS = 5_000
MAX_CONFLICT_RETRIES = 5
RETRY_BACKOFF_MS = 100
RETRY_BACKOFF_MAX_MS = 5_000
# The writer looks at its retries at least this often, whatever the clock says
# (the injected clock of a test does not move by itself).
IDLE_WAIT_S = 0.1


class PartitionStateConflict(Exception):
    """The partition state znode is not at the expected zkVersion (ZooKeeper's BadVersion)."""


@dataclass(frozen=True, slots=True)
class PartitionStateStore:
    """The ZooKeeper calls a leader needs to change its ISR (provided by the zk-agent).

    - write_partition_state(topic, partition, new_state, expected_zk_version):
      setData of /brokers/topics/<t>/partitions/<p>/state with
      codecs.encode_partition_state(new_state), conditional on
      expected_zk_version (and on the controller epoch znode, if the agent
      wants); returns the znode's new version. Raises PartitionStateConflict
      on BadVersion (or NoNode); any other exception means "outcome unknown".
    - read_partition_state(topic, partition): the current state, with
      `zk_version` set to the znode's version; None if the znode is absent.
    - notify_isr_change(topic, partition): announce the change under
      /isr_change_notification (batched as the agent likes); best effort.
    - write_partition_states / notify_isr_changes (optional): the same for
      many partitions at once, pipelined; one result per write (the new
      version, or the exception the single write would raise). A broker
      that rejoins takes back thousands of ISRs in one fetch.
    Each call must be bounded by a timeout. Only the ISR writer's thread calls them.
    """

    write_partition_state: Callable[[str, int, PartitionState, int], int]
    read_partition_state: Callable[[str, int], PartitionState | None]
    notify_isr_change: Callable[[str, int], None]
    write_partition_states: Callable[[list[tuple[str, int, PartitionState, int]]], list] | None = None
    notify_isr_changes: Callable[[list[tuple[str, int]]], None] | None = None

    def write_many(self, writes: list[tuple[str, int, PartitionState, int]]) -> list:
        if self.write_partition_states is not None:
            return self.write_partition_states(writes)
        results = []
        for write in writes:
            try:
                results.append(self.write_partition_state(*write))
            except Exception as error:  # reported per write, as the batched call does
                fatal.halt_if_fatal(error, "ISR write")
                results.append(error)
        return results

    def notify_many(self, partitions: list[tuple[str, int]]) -> None:
        if self.notify_isr_changes is not None:
            self.notify_isr_changes(partitions)
            return
        for topic, partition in partitions:
            self.notify_isr_change(topic, partition)


@dataclass(slots=True, eq=False)
class IsrProposal:
    """A leader's proposed ISR (Kafka's PendingExpandIsr/PendingShrinkIsr),
    made under the partition's lock; compared by identity: the partition
    takes the outcome only if this is still its pending ISR."""

    partition: object                 # partition.Partition
    isr: tuple[int, ...]
    leader_epoch: int
    state: PartitionState             # what is written
    expected_zk_version: int
    unknown: bool = False             # a write's outcome is unknown: read the znode back
    attempts: int = 0                 # conflicts (or unknown outcomes) in a row
    not_before_ms: int = 0            # the writer's clock: a retry waits for its backoff
    key: tuple[str, int] = field(init=False)

    def __post_init__(self) -> None:
        self.key = (self.partition.topic, self.partition.index)


def retry_backoff_ms(attempts: int) -> int:
    """Doubling from RETRY_BACKOFF_MS, bounded by RETRY_BACKOFF_MAX_MS."""
    return min(RETRY_BACKOFF_MS << min(max(attempts - 1, 0), 16), RETRY_BACKOFF_MAX_MS)


class IsrWriter:
    """One thread writing the leaders' ISR proposals (see the module doc).

    `store`: the ZooKeeper port (None until the zk-agent is wired: proposals
    then wait). `clock_ms`: the broker's clock, for backoffs. `reapply(partition,
    now_ms)`: after a conflict settled in the partition's favour, the ISR rules
    again: a new proposal (already the partition's pending ISR) or None.
    `on_changed(partitions)`: after ISRs changed or leaders stepped down (wake
    waiters). Both are called on the writer thread, outside any lock of it.
    """

    def __init__(self, store: PartitionStateStore | None, clock_ms: Callable[[], int],
                 reapply: Callable[[object, int], IsrProposal | None],
                 on_changed: Callable[[list], None],
                 max_pending: int = MAX_PENDING_PROPOSALS, max_batch: int = MAX_BATCH_PROPOSALS) -> None:
        self.store = store
        self.clock_ms = clock_ms
        self._reapply = reapply
        self._on_changed = on_changed
        self._max_pending = max_pending
        self._max_batch = max_batch
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._inbox: dict[tuple[str, int], IsrProposal] = {}   # under _lock
        self._pending: dict[tuple[str, int], IsrProposal] = {}  # the writer thread's
        self._pending_count = 0   # len(_pending), published under _lock for the bound
        self._flush_requested = 0  # under _lock: flush() asks for a round ...
        self._flush_done = 0       # ... and waits until a round that began after it found nothing due
        self._stopping = False
        self._thread: threading.Thread | None = None

    # --- any thread

    def start(self) -> None:
        with self._lock:
            if self._thread is not None:
                return
            self._thread = threading.Thread(target=self._run, name="isr-writer", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop writing; proposals not yet written are dropped (the partitions'
        committed ISRs stay what ZooKeeper last confirmed)."""
        with self._lock:
            self._stopping = True
            self._wake.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)

    def set_store(self, store: PartitionStateStore) -> None:
        """Wire the ZooKeeper port (the zk-agent is built after the replica manager)."""
        with self._lock:
            self.store = store
            self._wake.notify_all()

    def submit(self, proposal: IsrProposal) -> bool:
        """Queue a proposal, replacing one waiting for the same partition.
        False (nothing queued) when MAX_PENDING_PROPOSALS already wait."""
        with self._lock:
            if (proposal.key not in self._inbox
                    and len(self._inbox) + self._pending_count >= self._max_pending):
                return False
            self._inbox[proposal.key] = proposal
            self._wake.notify_all()
            return True

    def flush(self, timeout_s: float = 10.0) -> bool:
        """Wait until every proposal that is due has been written (tests, and
        tools that need the outcome); False at the timeout."""
        with self._lock:
            self._flush_requested += 1
            wanted = self._flush_requested
            self._wake.notify_all()
            return self._wake.wait_for(lambda: self._flush_done >= wanted or self._stopping, timeout_s)

    def pending_count(self) -> int:
        with self._lock:
            return len(self._inbox) + self._pending_count

    # --- the writer thread

    def _run(self) -> None:
        while True:
            batch = self._next_batch()
            if batch is None:
                return
            try:
                self._write(batch)
            except Exception as error:   # a bug: keep the thread; the proposals retry after a backoff
                fatal.halt_if_fatal(error, "ISR writer")
                log.exception("ISR writer failed on %d proposals; retrying", len(batch))
                now_ms = self.clock_ms()
                for proposal in batch:
                    self._retry_later(proposal, now_ms)

    def _next_batch(self) -> list[IsrProposal] | None:
        """Wait for due proposals (None when stopping): fresh ones and retries
        whose backoff has passed, oldest first, at most max_batch."""
        with self._lock:
            while not self._stopping:
                flush = self._flush_requested
                self._pending.update(self._inbox)   # a newer proposal replaces an older one
                self._inbox.clear()
                now_ms = self.clock_ms()
                due = [p for p in self._pending.values() if p.not_before_ms <= now_ms][:self._max_batch]
                for proposal in due:
                    del self._pending[proposal.key]
                self._pending_count = len(self._pending)
                if due and self.store is not None:
                    return due
                for proposal in due:   # no store yet: they wait for it
                    self._pending[proposal.key] = proposal
                self._pending_count = len(self._pending)
                self._flush_done = flush
                self._wake.notify_all()
                if not self._inbox and self._flush_requested == flush:
                    self._wake.wait(self._idle_wait_s(now_ms))
            return None

    def _idle_wait_s(self, now_ms: int) -> float:
        if not self._pending or self.store is None:   # set_store wakes the thread
            return IDLE_WAIT_S * 10
        soonest = min(p.not_before_ms for p in self._pending.values())
        return min(max(soonest - now_ms, 1) / 1000, IDLE_WAIT_S)

    def _write(self, batch: list[IsrProposal]) -> None:
        live = [p for p in batch if p.partition.pending_isr is p]   # a LeaderAndIsr made the rest stale
        reads = [p for p in live if p.unknown]
        writes = [p for p in live if not p.unknown]
        changed: list = []   # new ISRs, announced
        settled: list = []   # ISRs taken from the znode, or leaders stepping down
        if writes:
            try:
                results = self.store.write_many(
                    [(p.partition.topic, p.partition.index, p.state, p.expected_zk_version) for p in writes])
            except Exception as error:   # the whole batch failed before any answer: every outcome unknown
                fatal.halt_if_fatal(error, "ISR writes")
                results = [error] * len(writes)
            for proposal, result in zip(writes, results):
                partition = proposal.partition
                if isinstance(result, PartitionStateConflict):
                    log.warning("%s-%s: partition state changed under us (expected zkVersion %s); re-reading",
                                partition.topic, partition.index, proposal.expected_zk_version)
                    reads.append(proposal)
                elif isinstance(result, Exception):   # the agent's ZooKeeper errors vary: outcome unknown
                    log.warning("%s-%s: ISR write failed, outcome unknown (high watermark over the maximal "
                                "ISR until read back): %s", partition.topic, partition.index, result)
                    proposal.unknown = True
                    self._retry_later(proposal, self.clock_ms())
                elif partition.complete_isr_change(proposal, result):
                    changed.append(partition)
        for proposal in reads:
            self._read_back(proposal, changed, settled)
        if changed:
            self._announce(changed)
        if changed or settled:
            self._on_changed(changed + settled)

    def _read_back(self, proposal: IsrProposal, changed: list, settled: list) -> None:
        """Settle a conflicting or unknown write from the znode's state."""
        partition = proposal.partition
        try:
            current = self.store.read_partition_state(partition.topic, partition.index)
        except Exception as error:   # retried after a backoff; the proposal stays pending
            fatal.halt_if_fatal(error, "ISR writer's state read")
            log.warning("%s-%s: cannot read the partition state: %s", partition.topic, partition.index, error)
            proposal.unknown = True
            self._retry_later(proposal, self.clock_ms())
            return
        outcome = partition.resolve_isr_change(proposal, current)
        if outcome is None:
            return   # no longer the pending ISR
        if outcome == "superseded":
            log.warning("%s-%s: superseded (leader %s, epoch %s): no longer acting as leader at epoch %s",
                        partition.topic, partition.index, getattr(current, "leader", None),
                        getattr(current, "leader_epoch", None), proposal.leader_epoch)
            settled.append(partition)
            return
        if outcome == "landed":   # our write had gone in, its answer was lost
            changed.append(partition)
            return
        settled.append(partition)
        if proposal.attempts < MAX_CONFLICT_RETRIES:   # bounded: then the next fetch or tick proposes
            now_ms = self.clock_ms()
            again = self._reapply(partition, now_ms)
            if again is not None:
                again.attempts = proposal.attempts + 1
                again.not_before_ms = now_ms + retry_backoff_ms(again.attempts)
                self._pending.setdefault(again.key, again)   # a fresher one from a fetch wins

    def _retry_later(self, proposal: IsrProposal, now_ms: int) -> None:
        proposal.attempts += 1
        proposal.not_before_ms = now_ms + retry_backoff_ms(proposal.attempts)
        self._pending.setdefault(proposal.key, proposal)

    def _announce(self, partitions: list) -> None:
        try:
            self.store.notify_many([(p.topic, p.index) for p in partitions])
        except Exception as error:  # best effort: the controller also reads the state znodes
            fatal.halt_if_fatal(error, "ISR change notification")
            log.warning("ISR change notification of %d partitions failed: %s", len(partitions), error)
