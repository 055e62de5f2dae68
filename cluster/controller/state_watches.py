"""Watches on the state znodes of partitions being reassigned.

Seed 002's ReassignedPartitionsIsrChangeListener (Kafka's
PartitionReassignmentIsrChangeHandler): the controller watches
`/brokers/topics/<t>/partitions/<p>/state` of every partition that is moving,
so it sees the moment the target replicas are in the ISR. ISR change
notifications are not enough: they are the leaders' best effort (a leader
killed between its state write and its notification never writes one), and a
state the controller takes in otherwise (read back after a lost conditional
write, then written over) brings none; without the watch such a reassignment
waited, target in the ISR, for some later ISR change (issue 12.2).

Used by the controller and by the seeded simulation alike, so the simulation
exercises this bookkeeping and these watches against its fake ZooKeeper.

Rules:
1. After every step (`after_step`), each partition that started moving (a
   reassignment not yet completing) and has no watch gets one: a
   WatchReassigningStates event reads its state with the watch.
2. A watch that fires (`fired`, on ZooKeeper's thread) only notes the path;
   the first noted path queues one PartitionReassignmentIsrChange for all
   of them (a reassignment's epoch bumps fire many watches together, and one
   event reads them all).
3. That event takes the noted paths (`take_fired`): their watches are gone,
   so they count as unwatched until read again. If the read fails, they are
   noted again (`restore`) for the event's retry.
4. A read (`read`) covers only partitions still being reassigned, and leaves
   the watch on each.
5. A new controllership starts with nothing watched and nothing noted
   (`reset`): the previous term's watches belong to its reads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from kafkactl.cluster.controller import events as ev
from kafkactl.cluster.controller.context import ControllerContext
from kafkactl.cluster.controller.model import TopicPartition
from kafkactl.cluster.zk import codecs, layout
from kafkactl.cluster.zk.codecs import PartitionState


class ReassigningStateWatches:
    """The event thread owns `_watched`; `_fired` is shared with the thread
    that delivers watches, hence its lock. `queue` puts an event on the
    controller's queue (and does nothing else)."""

    def __init__(self, queue: Callable[[ev.ControllerEvent], None]) -> None:
        self._queue = queue
        self._watched: set[TopicPartition] = set()
        self._fired: set[str] = set()
        self._fired_lock = threading.Lock()

    def reset(self) -> None:
        self._watched.clear()
        with self._fired_lock:
            self._fired.clear()

    def after_step(self, ctx: ControllerContext) -> None:
        """Rule 1."""
        moving = {tp for tp, r in ctx.reassignments.items() if not r.completing}
        self._watched &= moving
        new = sorted(moving - self._watched)
        if new:
            self._watched.update(new)
            self._queue(ev.WatchReassigningStates(tuple(new)))

    def fired(self, watched_event) -> None:
        """Rule 2 (the watch callback: ZooKeeper's thread)."""
        with self._fired_lock:
            first = not self._fired
            self._fired.add(watched_event.path)
        if first:
            self._queue(ev.PartitionReassignmentIsrChange())

    def take_fired(self) -> tuple[list[TopicPartition], set[str]]:
        """Rule 3: the partitions whose watch fired, and their paths (for `restore`)."""
        with self._fired_lock:
            paths, self._fired = self._fired, set()
        partitions = [_partition_of(path) for path in sorted(paths)]
        self._watched.difference_update(partitions)
        return partitions, paths

    def restore(self, paths: Iterable[str]) -> None:
        with self._fired_lock:
            self._fired.update(paths)

    def read(self, ctx: ControllerContext, partitions: Iterable[TopicPartition],
             store) -> dict[TopicPartition, PartitionState | None]:
        """Rule 4: the states (None: no znode) of those still moving, watched."""
        moving = [tp for tp in partitions if ctx.is_being_reassigned(tp)]
        if not moving:
            return {}
        paths = {tp: layout.partition_state(tp.topic, tp.partition) for tp in moving}
        nodes = store.get_many(list(paths.values()), watch=self.fired)
        self._watched.update(moving)
        return {tp: None if nodes[path] is None else
                codecs.decode_partition_state(path, nodes[path][0], nodes[path][1].version)
                for tp, path in paths.items()}


def _partition_of(path: str) -> TopicPartition:
    parts = path.strip("/").split("/")     # brokers/topics/<t>/partitions/<p>/state
    return TopicPartition(parts[2], int(parts[4]))
