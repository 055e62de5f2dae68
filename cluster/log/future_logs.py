"""Moves between log dirs (AlterReplicaLogDirs, KIP-113): a future log's life on disk, and its crash rules.

A move copies the partition's log into a future log,
`<topic>-<partition>.<id>-future/` in the wanted dir, then swaps them
(swap_in_future). The current log stays authoritative until the swap
renames the current dir away. The swap, in this order, each step durable
before the next:
  1. "mark-complete": fsync the future log, write its `future-complete` marker;
  2. "retire-current": rename the current dir to `<topic>-<partition>.<id>-delete`;
  3. "promote-future": rename the future dir to `<topic>-<partition>`.

At start-up, before any log is loaded (settle_future_dirs), each future
dir is judged by what a crash may have left:
- its current log exists (a crash before step 2, or a copy under way): the
  future is resumed; the mover copies on from its end;
- its current log is gone and it carries the marker (a crash between steps
  2 and 3): it is promoted, so the swap completes;
- its current log is gone and it has no marker: it is discarded (step 2
  never runs before step 1 is durable, so nothing lives only here);
- a second future of the same partition is discarded.
The marker means "complete" only for the swap that wrote it: it is removed
when a future dir is loaded or promoted.

The LogManager holds its lock across the swap and updates its maps around
it; these functions touch only the disk and the two logs.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable, Iterable

from kafkactl.cluster.log.checkpoint import TopicPartition
from kafkactl.cluster.log.durable import create_marker, remove_if_present, rename_durably
from kafkactl.cluster.log.layout import (
    FUTURE_COMPLETE_MARKER,
    deleted_dir_path,
    parse_future_dir_name,
    parse_partition_dir_name,
    partition_dir_name,
)
from kafkactl.cluster.log.log import Log

# Called after each step of the swap with its name; tests raise in it to simulate a crash.
Fault = Callable[[str], None]

logger = logging.getLogger(__name__)


def swap_in_future(current: Log, future: Log, fault: Fault | None = None) -> str:
    """Steps 1-3: the caught-up `future` log replaces `current` on disk.

    The caller must have stopped every append and truncation of both logs,
    and checked that the future log ends where the current one does.
    `current` is closed; `future` stays open under its new name (no reopen,
    so no rescan of the active segment while appends wait). Returns the
    retired dir, for deletion after file.delete.delay.ms.
    """
    # 1. The future log, then its marker, durable: from here on it may replace the current log.
    future.flush()
    create_marker(os.path.join(future.dir_path, FUTURE_COMPLETE_MARKER))
    _step(fault, "mark-complete")
    # 2. The current dir renamed away: from here on start-up takes the future log.
    current.close()     # before the rename: closing writes by path; fetches keep their files
    retired_path = deleted_dir_path(current.dir_path)
    rename_durably(current.dir_path, retired_path)
    _step(fault, "retire-current")
    # 3. The future dir takes the partition's name.
    log_path = os.path.join(os.path.dirname(future.dir_path), partition_dir_name(future.topic, future.partition))
    rename_durably(future.dir_path, log_path)
    _step(fault, "promote-future")
    forget_completion(log_path)
    future.relocate(log_path)
    return retired_path


def forget_completion(log_path: str) -> None:
    """Remove the marker from a dir about to be loaded: complete only for the swap that wrote it."""
    remove_if_present(os.path.join(log_path, FUTURE_COMPLETE_MARKER))


def settle_future_dirs(log_dirs: Iterable[str]) -> dict[str, TopicPartition]:
    """Decide the fate of every future log dir before anything is loaded.

    Returns the future dirs to load, resumed (path -> partition); promotes
    or discards the others (see the module's rules).
    """
    current: set[TopicPartition] = set()
    futures: dict[TopicPartition, list[str]] = {}
    for log_dir in log_dirs:
        for name in sorted(os.listdir(log_dir)):
            if not os.path.isdir(os.path.join(log_dir, name)):
                continue
            if (tp := parse_partition_dir_name(name)) is not None:
                current.add(tp)
            elif (tp := parse_future_dir_name(name)) is not None:
                futures.setdefault(tp, []).append(os.path.join(log_dir, name))
    kept: dict[str, TopicPartition] = {}
    for tp, paths in futures.items():
        first, extra = paths[0], paths[1:]
        for path in extra:
            logger.warning("discarding extra future log %s of %s-%d", path, *tp)
            discard_dir(path)
        complete = os.path.exists(os.path.join(first, FUTURE_COMPLETE_MARKER))
        if tp in current:
            kept[first] = tp          # resumed: the current log is authoritative
        elif complete:
            _promote_future_dir(first, tp)
        else:
            logger.warning("discarding incomplete future log %s: its current log is gone", first)
            discard_dir(first)
    return kept


def _promote_future_dir(path: str, tp: TopicPartition) -> None:
    """Step 3 of a swap a crash cut short; the marker goes when the log is loaded."""
    target = os.path.join(os.path.dirname(path), partition_dir_name(*tp))
    logger.warning("%s-%d: finishing an interrupted move: %s becomes the current log", *tp, path)
    rename_durably(path, target)


def discard_dir(path: str) -> None:
    """Rename a log dir out of the way (durably), then remove it."""
    deleted = deleted_dir_path(path)
    rename_durably(path, deleted)
    shutil.rmtree(deleted, ignore_errors=True)


def _step(fault: Fault | None, name: str) -> None:
    if fault is not None:
        fault(name)
