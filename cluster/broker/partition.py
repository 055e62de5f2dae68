"""One hosted partition: its role, ISR and high watermark under its lock.

A leader's high watermark is the smallest log end offset in its ISR and never
goes back. The leader changes its ISR itself, with a write of the partition
state znode conditional on its zkVersion (seed 000, discussion 3), made by
the ISR writer's thread (isr_writer.py): here the change is only proposed,
as the partition's pending ISR, and the ISR changes once the write went in.
While a change is pending the high watermark is computed over the maximal
ISR (the committed and the proposed one together, as Kafka does), so
whichever ZooKeeper ends up holding, every replica the controller may elect
has what the leader acknowledged; and a leader whose write meets a newer
leader epoch (or another leader) stops acting as leader at once.

Who calls what: the control thread (role_changes.py) `make_leader`,
`make_follower`, `stop`; request threads the appends, reads and follower
fetch records; the housekeeping thread `propose_shrink`; the ISR writer
`complete_isr_change` / `resolve_isr_change`; replica fetcher threads the
`follower_*` methods; the log dir mover `attach_future` / `replace_log`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker import isr as isr_rules
from kafkactl.cluster.broker.fetch_session import PartitionChanges
from kafkactl.cluster.broker.isr_writer import IsrProposal
from kafkactl.cluster.errors import KafkaError
from kafkactl.cluster.invariant import invariant
from kafkactl.cluster.log.errors import LogClosedError, LogDirFailedError, OffsetOutOfRangeError
from kafkactl.cluster.zk.codecs import PartitionState


HIGH_WATERMARK = -1   # DeleteRecords' offset meaning "up to the high watermark"


@dataclass(slots=True)
class AppendResult:
    error: ErrorCode
    base_offset: int = -1
    log_start_offset: int = -1
    message: str | None = None
    last_offset: int = -1
    record_errors: tuple = ()  # record_validation.RecordError: (record index, message)
    leader_epoch: int = -1     # the epoch the batches were appended under


@dataclass(slots=True)
class ReadResult:
    error: ErrorCode
    high_watermark: int = -1
    log_start_offset: int = -1
    region: object | None = None   # a file region of whole batches, or None
    size: int = 0
    # The fetcher has everything it may read here (a follower in the ISR at
    # the log end, a consumer at the high watermark): until the partition
    # changes, reading it again can only answer "nothing new".
    settled: bool = False


@dataclass(slots=True, eq=False)
class FollowerFetch:
    """A follower's fetch being served by the leader (see ReplicaManager.begin_follower_fetch)."""

    partition: Partition
    follower_id: int
    leader_epoch: int
    record: isr_rules.FetchRecord


def check_epoch(partition: Partition, current_leader_epoch: int) -> ErrorCode | None:
    """Fence requests made with another leader epoch (KIP-320); -1 means unchecked."""
    if not partition.is_leader:
        return ErrorCode.not_leader_or_follower
    if current_leader_epoch == -1 or current_leader_epoch == partition.leader_epoch:
        return None
    if current_leader_epoch < partition.leader_epoch:
        return ErrorCode.fenced_leader_epoch
    return ErrorCode.unknown_leader_epoch


class Partition:
    def __init__(self, topic: str, index: int, log_, broker_id: int) -> None:
        self.topic = topic
        self.index = index
        self.log = log_
        self.broker_id = broker_id
        self.lock = threading.Lock()
        # Serialises what changes the log's tail (follower appends,
        # truncation) with the log dir mover's copying and its swap, so a
        # future log never holds batches the current log no longer has.
        # Order: log_move_lock, then lock, then the logs' own locks.
        self.log_move_lock = threading.Lock()
        self.future_log = None                # the copy being made in another log dir, if any
        self.leader_id = -1
        self.leader_epoch = -1
        self.led_since_epoch = -1             # the epoch at which this broker last became leader
        self.controller_epoch = -1            # of the controller that decided the leadership
        self.zk_version = -1                  # the state znode's version (partition epoch)
        self.leader_recovery_state = 0
        self.isr: tuple[int, ...] = ()        # the committed ISR: what ZooKeeper holds
        self.replicas: tuple[int, ...] = ()
        self.high_watermark = 0
        self.leader_epoch_start_offset = isr_rules.UNKNOWN_OFFSET
        self.followers: dict[int, isr_rules.FollowerState] = {}   # leader only
        self.pending_isr: IsrProposal | None = None   # an ISR change not yet written (leader only)
        self.key = (topic, index)
        # Where what fetch sessions must look at again is noted (the replica
        # manager's); None: nobody tracks changes (a bare Partition in tests).
        self.changes: PartitionChanges | None = None
        # Where "became leader" / "stopped leading" go (role_changes.LeadershipEvents); None: nowhere.
        self.leadership = None

    def _note_change(self) -> None:
        """Under the lock, before the change is visible (see PartitionChanges)."""
        if self.changes is not None:
            self.changes.note(self.key)

    def _note_leadership(self, elected: bool) -> None:
        """Under the lock, so the events of one partition keep their order."""
        if self.leadership is not None:
            self.leadership.record(self.topic, self.index, self.leader_epoch, elected)

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.broker_id

    @property
    def maximal_isr(self) -> tuple[int, ...]:
        """The committed ISR with a pending change's new members (Kafka's maximalIsr)."""
        pending = self.pending_isr
        if pending is None:
            return self.isr
        return self.isr + tuple(r for r in pending.isr if r not in self.isr)

    def is_following(self, leader_id: int, leader_epoch: int) -> bool:
        return leader_id != self.broker_id and (self.leader_id, self.leader_epoch) == (leader_id, leader_epoch)

    # --- roles from the controller (role_changes.py, one control request at a time)

    def claim_for_controller(self, leader_epoch: int) -> bool:
        """Accept a LeaderAndIsr at `leader_epoch` only if it is newer: epochs never go back.
        Called by the control thread, the only writer of leader_epoch (one
        control request at a time), so the read needs no lock."""
        return leader_epoch > self.leader_epoch

    def make_leader(self, state, now_ms: int) -> None:
        """`state`: a role_changes.LeaderAndIsrState. The caller noted the
        change (one note for the whole request)."""
        with self.lock:
            is_new_leader = not self.is_leader
            self._take_state(state)
            self.leader_id = self.broker_id
            self._become_leader(now_ms, is_new_leader)
            if is_new_leader:
                self._note_leadership(elected=True)

    def make_follower(self, state) -> None:
        """The caller noted the change, as for make_leader."""
        with self.lock:
            was_leader = self.is_leader
            self._take_state(state)
            self.leader_id = state.leader
            self._become_follower()
            if was_leader:
                self._note_leadership(elected=False)

    def stop(self) -> None:
        """StopReplica: neither lead nor follow until a newer LeaderAndIsr says so."""
        with self.lock:
            self._note_change()
            was_leader = self.is_leader
            self.leader_id = -1
            self._become_follower()
            if was_leader:
                self._note_leadership(elected=False)

    def _take_state(self, state) -> None:
        invariant(state.leader_epoch > self.leader_epoch,
                  f"{self.topic}-{self.index}: leader epoch {state.leader_epoch} after {self.leader_epoch}")
        self.controller_epoch = state.controller_epoch
        self.leader_epoch = state.leader_epoch
        self.zk_version = state.partition_epoch
        self.leader_recovery_state = state.leader_recovery_state
        self.isr = tuple(state.isr)
        self.replicas = tuple(state.replicas)
        self.pending_isr = None  # a proposal still queued answers to an older state

    def _become_leader(self, now_ms: int, is_new_leader: bool) -> None:
        if is_new_leader:
            self.led_since_epoch = self.leader_epoch
        # Batches appended from now on carry this epoch; the cache maps it to
        # the next offset so followers can truncate by epoch.
        log_end_offset = self.log.log_end_offset
        self.leader_epoch_start_offset = log_end_offset
        self.log.maybe_assign_epoch_start_offset(self.leader_epoch, log_end_offset)
        self._reset_followers(now_ms, is_new_leader)
        # The HW stays where it was as a follower: what lies between it and
        # the LEO is committed only once every ISR member has it.
        self.high_watermark = min(self.high_watermark, log_end_offset)
        if not is_new_leader or len(self.isr) <= 1:
            # A new leader with other ISR members knows none of their log end
            # offsets yet (reset above): its HW cannot move before they fetch.
            self._maybe_advance_high_watermark()

    def _reset_followers(self, now_ms: int, is_new_leader: bool) -> None:
        followers = {}
        for replica in self.replicas:
            if replica == self.broker_id:
                continue
            in_isr = replica in self.isr
            previous = self.followers.get(replica)
            if is_new_leader or previous is None:
                followers[replica] = isr_rules.reset_on_become_leader(replica, in_isr, now_ms)
            else:
                followers[replica] = previous._replace(last_caught_up_time_ms=now_ms if in_isr else 0, clock=None)
        self.followers = followers

    def _become_follower(self) -> None:
        self.leader_epoch_start_offset = isr_rules.UNKNOWN_OFFSET
        self.followers = {}
        self.pending_isr = None
        self.high_watermark = min(self.high_watermark, self.log.log_end_offset)

    # --- the high watermark (leader)

    def _maybe_advance_high_watermark(self) -> bool:
        """Under the lock: move the HW up to the smallest LEO in the maximal ISR; True if it moved."""
        if not self.is_leader:
            return False
        candidate = isr_rules.high_watermark_candidate(
            self.broker_id, self.log.log_end_offset, self.maximal_isr, self.followers)
        new_high_watermark = isr_rules.next_high_watermark(self.high_watermark, candidate)
        invariant(new_high_watermark <= self.log.log_end_offset,
                  f"{self.topic}-{self.index}: high watermark {new_high_watermark} beyond the log end")
        moved = new_high_watermark != self.high_watermark
        if moved:
            self._note_change()
        self.high_watermark = new_high_watermark
        return moved

    # --- appends (leader)

    def append_as_leader(self, records: bytes, required_acks: int, min_insync_replicas: int) -> AppendResult:
        # Validated before the partition's lock: the record pass costs ~1 µs per
        # record, and followers' fetches and ISR changes wait on that lock.
        try:
            headers = self.log.check_produce(records)
        except KafkaError as error:
            return refused(error)
        with self.lock:
            if not self.is_leader:
                return AppendResult(ErrorCode.not_leader_or_follower)
            # The committed ISR, as Kafka: a pending expansion proves nothing yet.
            if required_acks == -1 and len(self.isr) < min_insync_replicas:
                return AppendResult(ErrorCode.not_enough_replicas)
            self._note_change()   # before the log end moves (a failed append only costs a look)
            try:
                info = self.log.append_as_leader(records, self.leader_epoch, headers)
            except KafkaError as error:
                return refused(error)
            self._maybe_advance_high_watermark()
            return AppendResult(ErrorCode.none, info.first_offset, self.log.log_start_offset,
                                last_offset=info.last_offset, leader_epoch=self.leader_epoch)

    def commit_state(self, last_offset: int, appended_epoch: int, min_insync_replicas: int) -> ErrorCode | None:
        """acks=-1: None while waiting, else the produce's outcome (Kafka's rules).

        `appended_epoch` (-1: unchecked) is the epoch the batch was appended
        under: if this broker stopped leading since, even if it leads again,
        the offset may now hold other records.
        """
        with self.lock:
            if not self.is_leader or 0 <= appended_epoch < self.led_since_epoch:
                return ErrorCode.not_leader_or_follower
            if self.high_watermark <= last_offset:
                return None
            # The maximal ISR, as Kafka: the HW that passed the batch was computed over it.
            if len(self.maximal_isr) < min_insync_replicas:
                return ErrorCode.not_enough_replicas_after_append
            return ErrorCode.none

    # --- reads (leader)

    def read(self, fetch_offset: int, max_bytes: int, current_leader_epoch: int, min_one_batch: bool,
             follower_id: int | None) -> ReadResult:
        """A consumer's read (`follower_id` None) up to the high watermark, a follower's up to the log end."""
        with self.lock:
            error = check_epoch(self, current_leader_epoch)
            if error is None and follower_id is not None and follower_id not in self.followers:
                error = ErrorCode.not_leader_or_follower  # not an assigned replica
            high_watermark = self.high_watermark
            log_ = self.log
            # A follower outside the ISR is looked at on every fetch until it joins.
            settled_here = follower_id is None or follower_id in self.isr
        if error is not None:
            return ReadResult(error)
        if fetch_offset < log_.log_start_offset or fetch_offset > log_.log_end_offset:
            return ReadResult(ErrorCode.offset_out_of_range, high_watermark, log_.log_start_offset)
        if follower_id is None and fetch_offset >= high_watermark:
            # Between the HW and the LEO there is nothing a consumer may see
            # yet: answer empty, not out of range (seed 000, discussion 7).
            return ReadResult(ErrorCode.none, high_watermark, log_.log_start_offset, settled=True)
        if fetch_offset == log_.log_end_offset:   # a caught-up follower: nothing to read
            return ReadResult(ErrorCode.none, high_watermark, log_.log_start_offset, settled=settled_here)
        max_offset = None if follower_id is not None else high_watermark
        try:
            data = log_.read(fetch_offset, max_bytes, max_offset, min_one_batch)
        except LogClosedError:
            if self.log is log_:
                # Closed under this read: deleted, or its log dir failed (dir_failures.py).
                return ReadResult(ErrorCode.kafka_storage_error)
            # A move between log dirs swapped the log under this read: read the new one.
            return self.read(fetch_offset, max_bytes, current_leader_epoch, min_one_batch, follower_id)
        except LogDirFailedError:
            return ReadResult(ErrorCode.kafka_storage_error)
        except OffsetOutOfRangeError:
            return ReadResult(ErrorCode.offset_out_of_range, high_watermark, log_.log_start_offset)
        region = getattr(data, "region", data) if data is not None else None
        size = region.length if region is not None else 0
        return ReadResult(ErrorCode.none, high_watermark, log_.log_start_offset, region if size else None, size)

    # --- DeleteRecords (leader; KIP-107)

    def delete_records_on_leader(self, offset: int) -> tuple[ErrorCode, int]:
        """(error, the offset asked): move the log start offset up to `offset`
        (HIGH_WATERMARK: the high watermark), as Kafka's deleteRecordsOnLeader:
        not beyond the high watermark (OFFSET_OUT_OF_RANGE), only where
        cleanup.policy includes delete (POLICY_VIOLATION). Under the lock: a
        leader's log is not truncated while it leads."""
        with self.lock:
            if not self.is_leader:
                return ErrorCode.not_leader_or_follower, -1
            if "delete" not in self.log.config.cleanup_policy:
                return ErrorCode.policy_violation, -1
            wanted = self.high_watermark if offset == HIGH_WATERMARK else offset
            if not 0 <= wanted <= self.high_watermark:
                return ErrorCode.offset_out_of_range, -1
            if self.log.maybe_increment_log_start_offset(wanted):
                self._note_change()     # fetch sessions answer the new log start offset
            return ErrorCode.none, wanted

    def low_watermark_if_leader(self, live_brokers) -> int | None:
        """The lowest log start offset among this leader's log, its future log
        and the followers on live brokers (Kafka's lowWatermarkIfLeader: what a
        DeleteRecords waits to see pass its offset); None if not leader."""
        with self.lock:
            if not self.is_leader:
                return None
            low = self.log.log_start_offset
            for broker_id, state in self.followers.items():
                if broker_id in live_brokers:
                    low = min(low, state.log_start_offset)
            if self.future_log is not None:
                low = min(low, self.future_log.log_start_offset)
            return low

    # --- follower fetches (leader)

    def record_follower_fetch(self, follower_id: int, fetch_offset: int, follower_log_start_offset: int,
                              current_leader_epoch: int, now_ms: int, pending_reads_enabled: bool,
                              clock: isr_rules.FollowerFetchClock | None = None, may_change_isr: bool = True):
        """(FollowerFetch, high watermark moved, ISR expansion proposed or None); None if not recordable.
        `clock`: the follower's fetch session's (see isr.FollowerState.clock).
        A proposal returned is this partition's pending ISR: submit it to the ISR writer."""
        with self.lock:
            if check_epoch(self, current_leader_epoch) is not None or follower_id not in self.followers:
                return None
            log_end_offset = self.log.log_end_offset
            if not self.log.log_start_offset <= fetch_offset <= log_end_offset:
                return None  # answered OFFSET_OUT_OF_RANGE by the read; proves nothing
            previous = self.followers[follower_id]
            record = isr_rules.record_fetch(previous, fetch_offset, follower_log_start_offset,
                                            log_end_offset, now_ms, pending_reads_enabled, clock)
            self.followers[follower_id] = record.state
            # Only a follower's log end offset moving can move the HW here.
            moved = fetch_offset != previous.log_end_offset and self._maybe_advance_high_watermark()
            proposal = None
            if (may_change_isr and follower_id not in self.isr and self.pending_isr is None
                    and isr_rules.can_join_isr(record.state, self.high_watermark,
                                               self.leader_epoch_start_offset)):
                proposal = self._propose_isr(self.isr + (follower_id,))
            return FollowerFetch(self, follower_id, self.leader_epoch, record), moved, proposal

    def leave_session(self, follower_id: int, clock: isr_rules.FollowerFetchClock) -> None:
        """The follower's session dropped this partition: its fetches no longer cover it."""
        with self.lock:
            state = self.followers.get(follower_id)
            if state is not None and state.clock is clock:
                self.followers[follower_id] = isr_rules.settle(state)

    def complete_follower_fetch(self, fetch: FollowerFetch, now_ms: int) -> None:
        with self.lock:
            state = self.followers.get(fetch.follower_id)
            if state is None or not self.is_leader or self.leader_epoch != fetch.leader_epoch:
                return
            self.followers[fetch.follower_id] = isr_rules.complete_fetch(state, fetch.record, now_ms)

    # --- ISR changes (leader; written by isr_writer.IsrWriter)

    def propose_shrink(self, now_ms: int, replica_lag_time_max_ms: int,
                       pending_reads_enabled: bool) -> IsrProposal | None:
        """Drop the out-of-sync followers: the proposal made (now the pending ISR), or None."""
        with self.lock:
            if not self.is_leader or self.pending_isr is not None:
                return None
            out = self._out_of_sync(now_ms, replica_lag_time_max_ms, pending_reads_enabled)
            if not out:
                return None
            return self._propose_isr(tuple(r for r in self.isr if r not in out))

    def _out_of_sync(self, now_ms: int, replica_lag_time_max_ms: int, pending_reads_enabled: bool):
        """Under the lock: the ISR members the ISR rules put out of sync now."""
        return isr_rules.out_of_sync_replicas(self.broker_id, self.isr, self.followers, self.log.log_end_offset,
                                              now_ms, replica_lag_time_max_ms, pending_reads_enabled)

    def propose_by_rules(self, now_ms: int, replica_lag_time_max_ms: int,
                         pending_reads_enabled: bool) -> IsrProposal | None:
        """Both rules at once (after a conflict settled): out-of-sync members
        out, followers that may join in; the proposal made, or None."""
        with self.lock:
            if not self.is_leader or self.pending_isr is not None:
                return None
            out = self._out_of_sync(now_ms, replica_lag_time_max_ms, pending_reads_enabled)
            joining = tuple(r for r, state in self.followers.items() if r not in self.isr and isr_rules.can_join_isr(
                state, self.high_watermark, self.leader_epoch_start_offset))
            if not out and not joining:
                return None
            return self._propose_isr(tuple(r for r in self.isr if r not in out) + joining)

    def _propose_isr(self, new_isr: tuple[int, ...]) -> IsrProposal:
        """Under the lock: the state to write, conditional on the committed zkVersion."""
        state = PartitionState(leader=self.broker_id, leader_epoch=self.leader_epoch, isr=list(new_isr),
                               controller_epoch=self.controller_epoch,
                               leader_recovery_state=self.leader_recovery_state)
        proposal = IsrProposal(self, tuple(new_isr), self.leader_epoch, state, self.zk_version)
        self.pending_isr = proposal
        return proposal

    def withdraw_isr_change(self, proposal: IsrProposal) -> None:
        """The writer refused it (full): the next fetch or tick proposes again."""
        with self.lock:
            if self.pending_isr is proposal:
                self.pending_isr = None

    def complete_isr_change(self, proposal: IsrProposal, new_zk_version: int) -> bool:
        """The write went in: the ISR changes now; False if the proposal is stale."""
        with self.lock:
            if self.pending_isr is not proposal:
                return False  # a LeaderAndIsr replaced the state meanwhile
            self._note_change()   # a follower that joined settles; one waiting to join tries again
            self.isr, self.zk_version, self.pending_isr = proposal.isr, new_zk_version, None
            self._maybe_advance_high_watermark()
            return True

    def resolve_isr_change(self, proposal: IsrProposal, current: PartitionState | None) -> str | None:
        """Settle a conflicting or unknown write from the znode's state `current`:
        "landed" (it holds our proposal), "adopted" (it holds another ISR of
        our leadership: taken), "superseded" (another leader or epoch: this
        broker stops acting as leader), or None when the proposal is stale."""
        with self.lock:
            if self.pending_isr is not proposal:
                return None
            self._note_change()
            self.pending_isr = None
            still_ours = (current is not None and current.leader == self.broker_id
                          and current.leader_epoch == proposal.leader_epoch)
            if still_ours:
                # The znode holds the truth, e.g. our write landed but its answer was lost.
                self.isr, self.zk_version = tuple(current.isr), current.zk_version
                self._maybe_advance_high_watermark()
                return "landed" if self.isr == proposal.isr else "adopted"
            self.leader_id = -1   # the leader epoch stays: the newer LeaderAndIsr must still apply
            self._become_follower()
            self._note_leadership(elected=False)
            return "superseded"

    # --- the follower side (replica fetcher thread)

    def follower_truncate_to(self, offset: int) -> None:
        with self.log_move_lock:
            self.log.truncate_to(offset)
            if self.future_log is not None and self.future_log.log_end_offset > self.log.log_end_offset:
                self.future_log.truncate_to(self.log.log_end_offset)
            with self.lock:
                self.high_watermark = min(self.high_watermark, self.log.log_end_offset)

    def follower_truncate_fully_and_start_at(self, offset: int) -> None:
        with self.log_move_lock:
            self.log.truncate_fully_and_start_at(offset)
            if self.future_log is not None:
                self.future_log.truncate_fully_and_start_at(offset)
            with self.lock:
                self.high_watermark = offset

    def follower_append(self, records: bytes):
        with self.log_move_lock:
            return self.log.append_as_follower(records)

    def follower_update(self, leader_high_watermark: int, leader_log_start_offset: int) -> None:
        """After a fetch: the HW and log start offset follow the leader's, within our log."""
        log_end_offset = self.log.log_end_offset
        if 0 <= leader_log_start_offset <= log_end_offset:
            self.log.maybe_increment_log_start_offset(leader_log_start_offset)
        with self.lock:
            if not self.is_leader and leader_high_watermark >= 0:
                self.high_watermark = min(leader_high_watermark, log_end_offset)

    # --- moves between log dirs (log_dir_mover.py)

    def attach_future(self, future_log) -> None:
        """Under log_move_lock: truncations reach `future_log` from now on."""
        self.future_log = future_log

    def replace_log(self, new_log) -> None:
        """Under log_move_lock and lock: the swapped-in log serves everything from now on."""
        self._note_change()
        self.log = new_log
        self.future_log = None


def refused(error: KafkaError) -> AppendResult:
    """A produce the log refused, with Kafka's error code (other errors propagate)."""
    return AppendResult(ErrorCode(error.error_code), message=str(error),
                        record_errors=tuple(getattr(error, "record_errors", ())))
