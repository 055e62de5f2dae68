"""Replacing a group of segments with the log cleaner's copy of them, and what a crash leaves.

Kafka's scheme. The cleaner writes the group's surviving batches as one new
segment, `<base>.log.cleaned` with `.index.cleaned` and `.timeindex.cleaned`
(`<base>` is the group's first base offset), every file fsynced. Then
(swap_in_cleaned), each step durable before the next:
  1. "swap": the new files renamed `.cleaned` -> `.swap`, the `.log` last;
  2. "retire": every old segment of the group renamed `.deleted` (a fetch
     holding one of their files keeps reading it; they are unlinked after
     file.delete.delay.ms);
  3. "install": the `.swap` files renamed to the segment's own names.
Durable here means the directory is fsynced after the step's renames, so
no later rename can reach the disk before them.

At load, before anything else in a partition dir is read (settle_swaps):
- a `<b>.log.cleaned`: its clean never reached step 1; the old segments
  are whole. Every `.cleaned` file goes, and every `.swap` file of a base
  offset at or above the smallest such b (Kafka's rule);
- a `<b>.log.swap`: step 1 was made durable. The old segments it replaces
  are the ones with base offsets in [b, the swap's next offset): a cleaned
  segment ends where its group ended (compaction.py, rule 6), and the
  segment after the group starts at or after that. Those still present
  are deleted, then the `.swap` files get their own names (an index file
  missing is rebuilt by the loader);
- `.swap` index files without their `.log.swap` are a step 1 cut short:
  removed.
So a crash at any point leaves either every old segment or the new one,
never both (a duplicate) nor neither (a loss).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence

from kafkactl.cluster.log.durable import fsync_dir, remove_if_present
from kafkactl.cluster.log.recovery import scan_log_file
from kafkactl.cluster.log.segment import (
    CLEANED_SUFFIX,
    LOG_SUFFIX,
    SEGMENT_SUFFIXES,
    SWAP_SUFFIX,
    LogSegment,
    parse_segment_file_name,
    segment_file_name,
)

# Called after each step with its name ("swap", "retire:<base>" per old
# segment and "retire", "install"); tests raise in it to simulate a crash.
Fault = Callable[[str], None]

logger = logging.getLogger(__name__)


def swap_in_cleaned(dir_path: str, old: Sequence[LogSegment], cleaned: LogSegment,
                    fault: Fault | None = None) -> None:
    """Steps 1-3 for a fsynced `cleaned` segment replacing the group `old`.
    The caller holds the log's lock and has checked the group is still its
    segments; it schedules the retired segments' unlinking."""
    cleaned.change_file_suffix(SWAP_SUFFIX)
    fsync_dir(dir_path)
    _step(fault, "swap")
    for segment in old:
        segment.rename_for_deletion()
        _step(fault, f"retire:{segment.base_offset}")
    fsync_dir(dir_path)
    _step(fault, "retire")
    cleaned.change_file_suffix("")
    fsync_dir(dir_path)
    _step(fault, "install")


def settle_swaps(dir_path: str) -> None:
    """Finish or undo what a crash left of a swap (the module's rules)."""
    names = os.listdir(dir_path)
    cleaned = _bases(names, CLEANED_SUFFIX)
    swaps = _bases(names, SWAP_SUFFIX)
    changed = False
    if cleaned:
        first = min(cleaned)
        for name in names:
            base = _base_of(name)
            if name.endswith(CLEANED_SUFFIX) or (name.endswith(SWAP_SUFFIX) and base is not None and base >= first):
                logger.info("%s: removing %s, left by a clean a crash cut short", dir_path, name)
                os.unlink(os.path.join(dir_path, name))
                changed = True
        swaps = [b for b in swaps if b < first]
    for base in sorted(swaps):
        _complete_swap(dir_path, base)
        changed = True
    for name in os.listdir(dir_path):   # index files of a step 1 cut short
        if name.endswith(SWAP_SUFFIX):
            logger.info("%s: removing %s: its .log never became a swap file", dir_path, name)
            os.unlink(os.path.join(dir_path, name))
            changed = True
    if changed:
        fsync_dir(dir_path)


def _complete_swap(dir_path: str, base: int) -> None:
    swap_log = os.path.join(dir_path, segment_file_name(base, LOG_SUFFIX) + SWAP_SUFFIX)
    scan = scan_log_file(swap_log, base)
    if scan.stop_reason is not None:
        # It was fsynced before step 1; a bad tail now is the disk's doing, and the loader cuts it.
        logger.warning("%s: swap segment %d: %s", dir_path, base, scan.stop_reason)
    replaced = sorted(b for b in _bases(os.listdir(dir_path), "") if base <= b < scan.next_offset)
    logger.warning("%s: finishing an interrupted clean: segment %d replaces %s", dir_path, base, replaced or "nothing")
    for old_base in replaced:
        for suffix in SEGMENT_SUFFIXES:
            remove_if_present(os.path.join(dir_path, segment_file_name(old_base, suffix)))
    fsync_dir(dir_path)   # the old segments gone before the swap takes their name
    for suffix in SEGMENT_SUFFIXES[1:] + SEGMENT_SUFFIXES[:1]:   # the .log last, as in step 3
        path = os.path.join(dir_path, segment_file_name(base, suffix))
        if os.path.exists(path + SWAP_SUFFIX):
            os.rename(path + SWAP_SUFFIX, path)


def _base_of(name: str) -> int | None:
    """The base offset of any segment file name, whatever its extra suffix."""
    for suffix in SEGMENT_SUFFIXES:
        for extra in ("", CLEANED_SUFFIX, SWAP_SUFFIX):
            if name.endswith(suffix + extra):
                return parse_segment_file_name(name[:len(name) - len(extra)], suffix)
    return None


def _bases(names: Sequence[str], extra: str) -> list[int]:
    """Base offsets of the `.log` files carrying the extra suffix `extra`."""
    found = []
    for name in names:
        if name.endswith(LOG_SUFFIX + extra):
            base = parse_segment_file_name(name[:len(name) - len(extra)] if extra else name)
            if base is not None:
                found.append(base)
    return found


def _step(fault: Fault | None, name: str) -> None:
    if fault is not None:
        fault(name)
