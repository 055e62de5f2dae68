"""Where a follower truncates before fetching at a new leader epoch (pure; KIP-101, KIP-279).

The replica fetcher asks the leader, with OffsetForLeaderEpoch, where the
follower's latest epoch ends on the leader; `truncation_for` turns the answer
and the follower's own epoch cache into an offset, and says whether the
follower must ask again about a smaller epoch.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafkactl.cluster.log.leader_epoch import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET


@dataclass(frozen=True, slots=True)
class Truncation:
    offset: int
    complete: bool   # False: truncate, then ask the leader again about a smaller epoch


def truncation_for(leader_epoch: int, leader_end_offset: int,
                   local_epoch: int, local_end_offset: int,
                   log_end_offset: int, high_watermark: int) -> Truncation:
    """Where to truncate, from the leader's OffsetForLeaderEpoch answer.

    `leader_epoch`, `leader_end_offset`: the leader's answer for the epoch we
    asked about. `local_epoch`, `local_end_offset`: this log's own
    end_offset_for_epoch(leader_epoch).
    """
    if leader_end_offset == UNDEFINED_EPOCH_OFFSET or leader_epoch == UNDEFINED_EPOCH:
        # The leader knows nothing of the epoch: only the HW is known to be safe.
        return Truncation(min(high_watermark, log_end_offset), True)
    if local_epoch == UNDEFINED_EPOCH or local_end_offset == UNDEFINED_EPOCH_OFFSET:
        # No local epoch at or below the leader's: everything up to the
        # leader's end offset was copied from a leader of that lineage.
        return Truncation(min(leader_end_offset, log_end_offset), True)
    if local_epoch != leader_epoch:
        # We never saw the leader's epoch: cut what we wrote in later epochs
        # and ask again about the largest epoch we have left.
        return Truncation(min(local_end_offset, log_end_offset), False)
    return Truncation(min(leader_end_offset, local_end_offset, log_end_offset), True)
