"""Which log dir a new log goes to, and how full each dir is.

Rules (a log AlterReplicaLogDirs asked a dir for goes there instead; the
LogManager sees to that):
- a new log never goes to an offline dir (dir_failures.py);
- a new log goes to a dir of the media class asked for (media.py: "ssd" or
  "hdd"); with no dir of that class, or none asked for, any dir qualifies;
- among those, to the dir with the fewest bytes of logs, ties broken by
  fewer partitions, then by the order of `log.dirs`;
- sizes are read (every log's, under the manager's lock) at most once per
  PLACEMENT_USAGE_MAX_AGE_MS; each log placed meanwhile counts one more
  partition in its dir, so a LeaderAndIsr creating thousands of logs
  spreads them by count instead of reading every size thousands of times.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Sequence
from typing import NamedTuple

PLACEMENT_USAGE_MAX_AGE_MS = 1000

DirBytes = tuple[str, int, int]   # (path, bytes of logs, partition count)


class DirUsage(NamedTuple):
    path: str
    media: str
    capacity_bytes: int
    used_bytes: int       # bytes of the logs in the dir
    partition_count: int


def dir_usage(path: str, media: str, used_bytes: int, partition_count: int) -> DirUsage:
    stats = os.statvfs(path)
    return DirUsage(path, media, stats.f_blocks * stats.f_frsize, used_bytes, partition_count)


class Placement:
    """Chooses dirs; called under the manager's lock."""

    def __init__(self, dirs: Sequence[tuple[str, str]]) -> None:
        """`dirs`: (path, media class) of each log dir, in `log.dirs` order."""
        self._media = dict(dirs)
        self._order = {path: i for i, (path, _) in enumerate(dirs)}
        self._usage: dict[str, list[int]] = {}   # path -> [used bytes, partitions]
        self._usage_ms = 0

    def choose(self, preferred_media: str | None, now: int, read_usage: Callable[[], list[DirBytes]],
               offline: Collection[str] = ()) -> str | None:
        """The dir for a new log; `read_usage` reads every dir's log bytes when
        due. Never one of the `offline` dirs: None when every dir is."""
        online = [path for path in self._order if path not in offline]
        candidates = [path for path in online if self._media[path] == preferred_media] or online
        if not candidates:
            return None
        if len(candidates) == 1:
            return candidates[0]
        if not self._usage or now - self._usage_ms >= PLACEMENT_USAGE_MAX_AGE_MS:
            self._usage = {path: [used, count] for path, used, count in read_usage()}
            self._usage_ms = now
        usage, order = self._usage, self._order
        chosen = min(candidates, key=lambda path: (usage[path][0], usage[path][1], order[path]))
        usage[chosen][1] += 1
        return chosen
