"""Leader elections asked of a ZooKeeper-mode controller, the way Kafka's tools ask.

Preferred: `/admin/preferred_replica_election` lists the partitions
(`{"version":1,"partitions":[{"topic","partition"}]}`); the controller moves
leadership to each partition's first replica when it is alive and in the ISR,
then deletes the znode.

Unclean: ZooKeeper mode has no trigger znode for it. Kafka's controller
elects a leader outside the ISR for a topic's offline partitions when the
topic's `unclean.leader.election.enable` becomes true, so that is the path:
enable it for the topics concerned (config + change notification, one
multi), wait for the election, then restore each topic's previous setting.

The classification functions are pure: what can be elected, and why not.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from kazoo.exceptions import NodeExistsError

from kafkactl.cluster.admin import configs
from kafkactl.cluster.admin.reassignment import PartitionView, TopicPartition
from kafkactl.cluster.zk import codecs, layout
from kafkactl.cluster.zk.client import wait

ELECTED = "elected"
NOT_NEEDED = "not needed"
FAILED = "failed"
REQUESTED = "requested"
POLL_INTERVAL_S = 0.3


class ElectionRunning(RuntimeError):
    """/admin/preferred_replica_election exists: the controller has not finished the last one."""


@dataclass(frozen=True, slots=True)
class Outcome:
    topic: str
    partition: int
    status: str                  # ELECTED, NOT_NEEDED, FAILED or REQUESTED (--no-wait)
    old_leader: int
    new_leader: int
    leader_epoch: int
    reason: str = ""

    def to_dict(self) -> dict:
        return {"topic": self.topic, "partition": self.partition, "status": self.status,
                "old_leader": self.old_leader, "new_leader": self.new_leader,
                "leader_epoch": self.leader_epoch, "reason": self.reason}


def _outcome(view: PartitionView, status: str, reason: str = "") -> Outcome:
    return Outcome(view.topic, view.partition, status, view.leader, view.leader, view.leader_epoch, reason)


# --- what can be elected

def preferred_obstacle(view: PartitionView, live: set[int]) -> tuple[str, str] | None:
    """(status, reason) when a preferred election cannot or need not happen."""
    if not view.replicas:
        return FAILED, "partition has no replicas"
    preferred = view.replicas[0]
    if view.is_moving:
        return FAILED, "partition is being reassigned"
    if view.leader == preferred:
        return NOT_NEEDED, f"preferred replica {preferred} already leads"
    if preferred not in live:
        return FAILED, f"preferred replica {preferred} is not alive"
    if preferred not in view.isr:
        return FAILED, f"preferred replica {preferred} is not in the ISR {_ids(view.isr)}"
    return None


def unclean_obstacle(view: PartitionView, live: set[int]) -> tuple[str, str] | None:
    if view.leader >= 0 and view.leader in live:
        return NOT_NEEDED, f"leader {view.leader} is alive"
    if not any(r in live for r in view.replicas):
        return FAILED, f"no live replica (replicas {_ids(view.replicas)} are all down)"
    return None


def split(views: Mapping[TopicPartition, PartitionView], asked: Iterable[TopicPartition], live: set[int],
          obstacle: Callable[[PartitionView, set[int]], tuple[str, str] | None]):
    """(partitions to elect, outcomes of those that cannot or need not be)."""
    eligible, settled = [], []
    for tp in asked:
        reason = obstacle(views[tp], live)
        if reason is None:
            eligible.append(tp)
        else:
            settled.append(_outcome(views[tp], *reason))
    return eligible, settled


def preferred_achieved(view: PartitionView, live: set[int]) -> bool:
    return bool(view.replicas) and view.leader == view.replicas[0]


def unclean_achieved(view: PartitionView, live: set[int]) -> bool:
    return view.leader >= 0 and view.leader in live


def results(before: Mapping[TopicPartition, PartitionView], after: Mapping[TopicPartition, PartitionView],
            tps: Iterable[TopicPartition], live: set[int],
            obstacle: Callable[[PartitionView, set[int]], tuple[str, str] | None],
            achieved: Callable[[PartitionView, set[int]], bool]) -> list[Outcome]:
    """What happened to each partition that was asked to elect: elected when
    its leadership changed to what was wanted, else failed with the reason
    its state now gives."""
    outcomes = []
    for tp in tps:
        old, new = before[tp], after.get(tp)
        if new is None:
            outcomes.append(_outcome(old, FAILED, "topic was deleted meanwhile"))
        elif achieved(new, live) and (new.leader, new.leader_epoch) != (old.leader, old.leader_epoch):
            outcomes.append(Outcome(*tp, ELECTED, old.leader, new.leader, new.leader_epoch))
        else:
            reason = obstacle(new, live)
            why = reason[1] if reason and reason[0] == FAILED else "the controller did not elect it before the deadline"
            outcomes.append(Outcome(*tp, FAILED, old.leader, new.leader, new.leader_epoch, why))
    return outcomes


# --- preferred

def preferred_running(client, timeout_s: float) -> bool:
    return wait(client.exists_async(layout.PREFERRED_REPLICA_ELECTION), timeout_s) is not None


def start_preferred(client, tps: Iterable[TopicPartition], timeout_s: float) -> None:
    wait(client.ensure_path_async("/admin"), timeout_s)
    try:
        wait(client.create_async(layout.PREFERRED_REPLICA_ELECTION, codecs.encode_partition_list(sorted(tps))),
             timeout_s)
    except NodeExistsError:
        raise ElectionRunning("a preferred replica election is in progress "
                              "(/admin/preferred_replica_election exists)") from None


def wait_for(condition: Callable[[], bool], deadline: float) -> bool:
    while not condition():
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_INTERVAL_S)
    return True


# --- unclean

def enable_unclean(client, topics: Iterable[str], timeout_s: float) -> dict[configs.Entity, configs.StoredConfig]:
    """Set unclean.leader.election.enable=true on `topics` (one multi); their configs before."""
    entities = [configs.topic_entity(t) for t in sorted(set(topics))]
    before = configs.read_configs(client, entities, timeout_s)
    writes = configs.ConfigWrites()
    for stored in before.values():
        writes.set(stored, {**stored.config, configs.UNCLEAN_LEADER_ELECTION: "true"})
    if writes:
        configs.ensure_config_parents(client, timeout_s)
        transaction = client.transaction()
        writes.add_to(transaction)
        configs.commit(client, transaction, timeout_s)
    return before


def restore_unclean(client, before: Mapping[configs.Entity, configs.StoredConfig], timeout_s: float) -> list[str]:
    """Put each topic's previous setting back (one multi); topics whose setting
    someone else changed meanwhile are left alone and named in the result."""
    now = configs.read_configs(client, before, timeout_s)
    writes, skipped = configs.ConfigWrites(), []
    for entity, old in before.items():
        current = now[entity]
        if current.config.get(configs.UNCLEAN_LEADER_ELECTION) != "true":
            skipped.append(entity.name)
            continue
        config = {k: v for k, v in current.config.items() if k != configs.UNCLEAN_LEADER_ELECTION}
        if configs.UNCLEAN_LEADER_ELECTION in old.config:
            config[configs.UNCLEAN_LEADER_ELECTION] = old.config[configs.UNCLEAN_LEADER_ELECTION]
        writes.set(current, config)
    if writes:
        transaction = client.transaction()
        writes.add_to(transaction)
        configs.commit(client, transaction, timeout_s)
    return skipped


def other_offline(views: Mapping[TopicPartition, PartitionView], topics: Iterable[str],
                  asked: Iterable[TopicPartition], live: set[int]) -> list[TopicPartition]:
    """Offline partitions of `topics` that were not asked for: enabling unclean
    election on a topic elects all of them."""
    wanted, asked = set(topics), set(asked)
    return sorted(tp for tp, v in views.items()
                  if tp[0] in wanted and tp not in asked and unclean_obstacle(v, live) is None)


def _ids(values: Iterable[int]) -> str:
    return ",".join(str(v) for v in values) or "(empty)"
