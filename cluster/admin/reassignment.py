"""Partition reassignment over ZooKeeper, the way ZooKeeper-mode Kafka's tools do it.

`/admin/reassign_partitions` holds what is asked (`{"version":1,"partitions":
[{"topic","partition","replicas"}]}`); the controller carries it out,
recording the full replica set and adding/removing replicas in the topic
znode while it works, and deletes the znode when every partition is done.

Throttles follow kafka-reassign-partitions.sh (KIP-73): for each partition
that moves, topic config `leader.replication.throttled.replicas` lists its
current replicas and `follower.replication.throttled.replicas` the replicas
being added ("partition:broker,..."); broker configs
`leader.replication.throttled.rate` and `follower.replication.throttled.rate`
bound every broker involved. They are written with the reassignment znode in
one multi, and removed once every partition is complete.

Log dirs (KIP-113), as kafka-reassign-partitions.sh does them: for every
replica whose plan names a log dir (not "any"), AlterReplicaLogDirs goes to
its broker before the znode is written. A broker that hosts the replica
starts moving it (DescribeLogDirs then shows a future replica in the wanted
dir); one that does not yet answers REPLICA_NOT_AVAILABLE and creates the
replica in that dir when the controller adds it, and is asked again once
it has. A partition is complete only once every named replica is in its dir.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from kazoo.exceptions import NodeExistsError, NoNodeError

from kafkactl.cluster.admin import configs
from kafkactl.cluster.admin.plan_file import PlanEntry
from kafkactl.cluster.protocol.list_offsets import DEBUGGING_REPLICA_ID, LATEST_TIMESTAMP
from kafkactl.cluster.zk import codecs, layout
from kafkactl.cluster.zk.client import wait

TopicPartition = tuple[str, int]
Replica = tuple[str, int, int]          # topic, partition, broker id

COMPLETE = "complete"
IN_PROGRESS = "in progress"
FAILED = "failed"
POLL_INTERVAL_S = 0.5


class ReassignmentRunning(RuntimeError):
    """/admin/reassign_partitions exists: one reassignment at a time."""


@dataclass(frozen=True, slots=True)
class PartitionView:
    """A partition as ZooKeeper shows it now."""
    topic: str
    partition: int
    replicas: tuple[int, ...]           # during a move: target + original (Kafka's RS)
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()
    leader: int = -1
    leader_epoch: int = -1
    isr: tuple[int, ...] = ()

    @property
    def key(self) -> TopicPartition:
        return self.topic, self.partition

    @property
    def original(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.adding)

    @property
    def is_moving(self) -> bool:
        return bool(self.adding or self.removing)


# --- reading

def read_running(client, timeout_s: float) -> dict[TopicPartition, list[int]] | None:
    """What /admin/reassign_partitions asks for, or None when nothing runs."""
    try:
        data, _ = wait(client.get_async(layout.REASSIGN_PARTITIONS), timeout_s)
    except NoNodeError:
        return None
    return codecs.decode_reassignment(data)


def read_partitions(client, topics: Iterable[str], timeout_s: float) -> dict[str, dict[int, PartitionView] | None]:
    """Per topic its partitions with assignment and leadership (None: no such
    topic); topic znodes, then all state znodes, as pipelined gets."""
    topic_results = {t: client.get_async(layout.topic(t)) for t in dict.fromkeys(topics)}
    assignments: dict[str, codecs.TopicAssignment | None] = {}
    for topic, result in topic_results.items():
        try:
            assignments[topic] = codecs.decode_topic(topic, wait(result, timeout_s)[0])
        except NoNodeError:
            assignments[topic] = None
    state_results = {(t, p): client.get_async(layout.partition_state(t, p))
                     for t, a in assignments.items() if a is not None for p in a.partitions}
    views: dict[str, dict[int, PartitionView] | None] = {}
    for topic, assignment in assignments.items():
        views[topic] = None if assignment is None else {
            p: _view(topic, p, assignment, state_results[(topic, p)], timeout_s)
            for p in sorted(assignment.partitions)
        }
    return views


def _view(topic: str, partition: int, assignment: codecs.TopicAssignment, result, timeout_s: float) -> PartitionView:
    base = dict(topic=topic, partition=partition, replicas=tuple(assignment.partitions[partition]),
                adding=tuple(assignment.adding_replicas.get(partition, ())),
                removing=tuple(assignment.removing_replicas.get(partition, ())))
    try:
        data, stat = wait(result, timeout_s)
    except NoNodeError:
        return PartitionView(**base)
    state = codecs.decode_partition_state(layout.partition_state(topic, partition), data, stat.version)
    return PartitionView(**base, leader=state.leader, leader_epoch=state.leader_epoch, isr=tuple(state.isr))


def flatten(views: Mapping[str, Mapping[int, PartitionView] | None]) -> dict[TopicPartition, PartitionView]:
    return {(t, p): v for t, parts in views.items() if parts for p, v in parts.items()}


def partition_numbers(views: Mapping[str, Mapping[int, PartitionView] | None]) -> dict[str, list[int] | None]:
    return {t: None if parts is None else sorted(parts) for t, parts in views.items()}


# --- generate

def propose(views: Mapping[str, Mapping[int, PartitionView]], brokers, rng=None) -> dict[TopicPartition, list[int]]:
    """Kafka's assignment of each topic's partitions over `brokers`
    (BrokerInfo, with racks), keeping each topic's replication factor (that
    of its first partition, as Kafka's --generate does)."""
    from kafkactl.cluster.admin.replica_assignment import assign_replicas

    proposed = {}
    for topic, partitions in sorted(views.items()):
        replication_factor = len(partitions[min(partitions)].original)
        assignment = assign_replicas(list(brokers), len(partitions), replication_factor, rng=rng)
        proposed.update({(topic, p): replicas for p, replicas in assignment.items()})
    return proposed


# --- throttles

@dataclass(frozen=True, slots=True)
class Throttles:
    leader_replicas: dict[str, str]      # topic -> "partition:broker,..." (current replicas)
    follower_replicas: dict[str, str]    # topic -> "partition:broker,..." (replicas being added)
    brokers: tuple[int, ...]             # every broker a moving partition has now or will have


def moving_partitions(current: Mapping[TopicPartition, Sequence[int]],
                      target: Mapping[TopicPartition, Sequence[int]]) -> list[TopicPartition]:
    """Partitions whose replica set changes (a reordering moves no data)."""
    return sorted(tp for tp, replicas in target.items() if set(replicas) != set(current[tp]))


def compute_throttles(current: Mapping[TopicPartition, Sequence[int]],
                      target: Mapping[TopicPartition, Sequence[int]]) -> Throttles:
    leader: dict[str, list[str]] = {}
    follower: dict[str, list[str]] = {}
    brokers: set[int] = set()
    for topic, partition in moving_partitions(current, target):
        now, then = list(current[(topic, partition)]), list(target[(topic, partition)])
        leader.setdefault(topic, []).extend(f"{partition}:{b}" for b in now)
        added = [b for b in then if b not in now]
        if added:
            follower.setdefault(topic, []).extend(f"{partition}:{b}" for b in added)
        brokers.update(now, then)
    return Throttles({t: ",".join(v) for t, v in leader.items()},
                     {t: ",".join(v) for t, v in follower.items()}, tuple(sorted(brokers)))


def throttle_entities(throttles: Throttles) -> list[configs.Entity]:
    """The entities `throttles` sets, in the order both back ends write and name them:
    the topics by name, then the brokers by id."""
    topics = sorted(set(throttles.leader_replicas) | set(throttles.follower_replicas))
    return [configs.topic_entity(t) for t in topics] + [configs.broker_entity(b) for b in throttles.brokers]


def throttled(entity: configs.Entity, config: Mapping[str, str], throttles: Throttles,
              rate_bytes_per_s: int) -> dict[str, str]:
    """`config` of `entity` with the throttle set: Kafka overwrites a topic's two
    throttled-replicas keys (one the move does not need is removed, so no stale list
    of an earlier move stays) and a broker's two rates; other keys stay."""
    after = dict(config)
    if entity.entity_type == configs.TOPICS:
        for key, values in ((configs.LEADER_THROTTLED_REPLICAS, throttles.leader_replicas),
                            (configs.FOLLOWER_THROTTLED_REPLICAS, throttles.follower_replicas)):
            if entity.name in values:
                after[key] = values[entity.name]
            else:
                after.pop(key, None)
    else:
        after[configs.LEADER_THROTTLED_RATE] = str(rate_bytes_per_s)
        after[configs.FOLLOWER_THROTTLED_RATE] = str(rate_bytes_per_s)
    return after


def cleared_keys(entity: configs.Entity) -> tuple[str, ...]:
    """What Kafka's --verify clears: a topic's throttled-replicas keys, a broker's
    throttle rates (the log dir rate too, as Kafka does)."""
    return configs.THROTTLED_REPLICAS_KEYS if entity.entity_type == configs.TOPICS else configs.THROTTLE_RATE_KEYS


def unthrottled(entity: configs.Entity, config: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in config.items() if k not in cleared_keys(entity)}


def removal_entities(topics: Iterable[str], broker_names: Iterable[str]) -> list[configs.Entity]:
    """What verify looks at once a reassignment is complete: `topics`, then every
    broker by name (not the cluster-wide default: that is the operator's own)."""
    return [configs.topic_entity(t) for t in sorted(set(topics))] + \
        [configs.Entity(configs.BROKERS, n) for n in sorted(broker_names) if n.isdigit()]


def throttle_writes(client, throttles: Throttles, rate_bytes_per_s: int, timeout_s: float) -> configs.ConfigWrites:
    """The config writes that set `throttles` at `rate_bytes_per_s` (see `throttled`)."""
    entities = throttle_entities(throttles)
    stored = configs.read_configs(client, entities, timeout_s)
    writes = configs.ConfigWrites()
    for entity in entities:
        writes.set(stored[entity], throttled(entity, stored[entity].config, throttles, rate_bytes_per_s))
    return writes


def throttle_removal(client, topics: Iterable[str], timeout_s: float) -> configs.ConfigWrites:
    """Writes that remove the throttles from `topics` and from every broker that has
    a config znode (what Kafka's --verify does once a reassignment is complete)."""
    try:
        names = wait(client.get_children_async("/config/brokers"), timeout_s)
    except NoNodeError:
        names = []
    stored = configs.read_configs(client, removal_entities(topics, names), timeout_s)
    writes = configs.ConfigWrites()
    for entity, current in stored.items():
        if current.zk_version is not None:
            writes.set(current, unthrottled(entity, current.config))
    return writes


def current_rate(client, timeout_s: float) -> int | None:
    """The leader throttle rate some broker has now, if any (for cancel)."""
    writes = throttle_removal(client, [], timeout_s)
    for stored, _ in writes.changes.values():
        value = stored.config.get(configs.LEADER_THROTTLED_RATE) or stored.config.get(configs.FOLLOWER_THROTTLED_RATE)
        if value and value.isdigit():
            return int(value)
    return None


# --- execute

def targets_of(entries: Iterable[PlanEntry]) -> dict[TopicPartition, list[int]]:
    return {e.key: list(e.replicas) for e in entries}


def start(client, targets: Mapping[TopicPartition, Sequence[int]], writes: configs.ConfigWrites,
          timeout_s: float, unchanged: Mapping[str, int] | None = None) -> None:
    """One multi: the config writes with their notifications, then the
    reassignment znode (created: it fails if another reassignment started).
    `unchanged`: znodes (path: version) the plan was made from, which must
    still be at that version (else ConcurrentChange, nothing written)."""
    configs.ensure_config_parents(client, timeout_s)
    wait(client.ensure_path_async("/admin"), timeout_s)
    transaction = client.transaction()
    for path, version in (unchanged or {}).items():
        transaction.check(path, version)
    writes.add_to(transaction)
    transaction.create(layout.REASSIGN_PARTITIONS,
                       codecs.encode_reassignment({tp: list(r) for tp, r in targets.items()}))
    try:
        configs.commit(client, transaction, timeout_s)
    except configs.ConcurrentChange as error:
        if error.results and isinstance(error.results[-1], NodeExistsError):
            raise ReassignmentRunning("another reassignment started meanwhile; nothing was written") from None
        raise


# --- progress

@dataclass(frozen=True, slots=True)
class PartitionProgress:
    topic: str
    partition: int
    target: tuple[int, ...]
    view: PartitionView
    status: str                 # COMPLETE, IN_PROGRESS or FAILED
    detail: str = ""
    log_dirs: tuple[ReplicaDir, ...] = ()   # the replicas the plan puts in named dirs

    def to_dict(self) -> dict:
        v = self.view
        return {"topic": self.topic, "partition": self.partition, "status": self.status,
                "target": list(self.target), "replicas": list(v.replicas), "adding": list(v.adding),
                "removing": list(v.removing), "leader": v.leader, "isr": list(v.isr), "detail": self.detail,
                "log_dirs": [d.to_dict() for d in self.log_dirs]}


def progress(targets: Mapping[TopicPartition, Sequence[int]], views: Mapping[TopicPartition, PartitionView],
             running: Mapping[TopicPartition, Sequence[int]] | None) -> list[PartitionProgress]:
    """Each target partition: complete (its assignment is the target), in
    progress (the controller is moving it), or failed (neither)."""
    running = running or {}
    result = []
    for tp, target in sorted(targets.items()):
        view = views[tp]
        target = tuple(target)
        if tp in running or view.is_moving:
            detail = "" if set(target) <= set(view.isr) else \
                f"waiting for {_ids(r for r in target if r not in view.isr)} to join the ISR"
            result.append(PartitionProgress(*tp, target, view, IN_PROGRESS, detail))
        elif view.replicas == target:
            result.append(PartitionProgress(*tp, target, view, COMPLETE))
        else:
            result.append(PartitionProgress(*tp, target, view, FAILED,
                                            f"replicas are {_ids(view.replicas)} and no reassignment is running"))
    return result


def wait_until_complete(client, targets: Mapping[TopicPartition, Sequence[int]], deadline: float,
                        on_progress: Callable[[int], None], timeout_s: float,
                        refine: Callable[[list[PartitionProgress]], list[PartitionProgress]] | None = None,
                        ) -> list[PartitionProgress]:
    """Poll until every partition is complete (or failed) or the deadline;
    `on_progress(done)` after each look. The last look is returned.
    `refine` may revise each look (the log dirs: see log_dir_progress)."""
    topics = sorted({t for t, _ in targets})
    while True:
        running = read_running(client, timeout_s)
        states = progress(targets, flatten(read_partitions(client, topics, timeout_s)), running)
        if refine is not None:
            states = refine(states)
        on_progress(sum(1 for s in states if s.status == COMPLETE))
        if all(s.status != IN_PROGRESS for s in states) or time.monotonic() >= deadline:
            return states
        time.sleep(POLL_INTERVAL_S)


def wait_until_idle(client, deadline: float, timeout_s: float) -> bool:
    """True once /admin/reassign_partitions is gone, False at the deadline."""
    while read_running(client, timeout_s) is not None:
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_INTERVAL_S)
    return True


# --- log dirs (KIP-113)

@dataclass(frozen=True, slots=True)
class ReplicaDir:
    """Where a replica the plan puts in a named dir is, as its broker says."""
    broker_id: int
    wanted: str
    current: str | None = None     # the dir holding the replica; None: not there (yet)
    future: str | None = None      # the dir it is being moved to, if a move runs
    behind: int | None = None      # offsets the moving copy is behind
    note: str = ""                 # why the broker's view is unknown

    @property
    def done(self) -> bool:
        return self.current == self.wanted

    def describe(self) -> str:
        if self.note:
            return f"broker {self.broker_id}: {self.note}"
        if self.done:
            return f"broker {self.broker_id}: in {self.wanted}"
        if self.future == self.wanted:
            return f"broker {self.broker_id}: moving {self.current} -> {self.wanted} ({self.behind} behind)"
        if self.current is None:
            return f"broker {self.broker_id}: no replica yet (will be created in {self.wanted})"
        return f"broker {self.broker_id}: in {self.current}, not {self.wanted}, and no move runs"

    def to_dict(self) -> dict:
        return {"broker": self.broker_id, "wanted": self.wanted, "current": self.current, "future": self.future,
                "behind": self.behind, "done": self.done, "note": self.note}


def wanted_log_dirs(entries: Iterable[PlanEntry]) -> dict[Replica, str]:
    """Every replica the plan puts in a named log dir ("any" leaves it to the broker)."""
    return {(e.topic, e.partition, broker): path for e in entries for broker, path in e.explicit_log_dirs().items()}


def describe_dirs(addresses: Mapping[int, object], broker_ids: Iterable[int], timeout_s: float) -> dict[int, object]:
    """DescribeLogDirs of each broker: a list of LogDirInfo, or a BrokerQueryError
    (also for a broker that is not registered)."""
    from kafkactl.cluster.admin import broker_queries as bq

    ids = set(broker_ids)
    answers = bq.ask_brokers([addresses[b] for b in ids if b in addresses], bq.describe_log_dirs, timeout_s)
    for broker_id in ids - set(addresses):
        answers[broker_id] = bq.BrokerQueryError(broker_id, "not registered")
    return answers


def check_log_dirs(entries: Sequence[PlanEntry], answers: Mapping[int, object], source: str = "plan") -> None:
    """Every named dir is a log dir of its broker: PlanError naming the entry,
    the broker and the dir if not; BrokerDirsUnknown if a broker did not say."""
    from kafkactl.cluster.admin import broker_queries as bq
    from kafkactl.cluster.admin.plan_file import PlanError

    for i, entry in enumerate(entries):
        for broker_id, path in entry.explicit_log_dirs().items():
            answer = answers.get(broker_id)
            if isinstance(answer, bq.BrokerQueryError) or answer is None:
                raise BrokerDirsUnknown(f"cannot check the log dirs of broker {broker_id}: {answer}")
            dirs = [d.path for d in answer]
            if path not in dirs:
                raise PlanError(f"{source}: partitions[{i}] (topic {entry.topic!r} partition {entry.partition}): "
                                f"\"log_dirs\": broker {broker_id} has no log dir {path} "
                                f"(its log dirs: {', '.join(dirs)})")


class BrokerDirsUnknown(RuntimeError):
    """A broker whose log dirs a plan names did not answer DescribeLogDirs."""


def alter_log_dirs(addresses: Mapping[int, object], wanted: Mapping[Replica, str],
                   timeout_s: float) -> dict[Replica, str | None]:
    """AlterReplicaLogDirs to each broker for its replicas: per replica None
    (moving, or in place) or Kafka's error name, e.g. "replica_not_available"
    (not hosted yet: the broker creates it in that dir), or why the broker
    did not answer."""
    from kafkactl.cluster.admin import broker_queries as bq

    by_broker: dict[int, dict[TopicPartition, str]] = {}
    for (topic, partition, broker_id), path in wanted.items():
        by_broker.setdefault(broker_id, {})[(topic, partition)] = path
    questions = {addresses[b]: bq.alter_replica_log_dirs(dirs) for b, dirs in by_broker.items() if b in addresses}
    answers = bq.ask_each(questions, timeout_s)
    results: dict[Replica, str | None] = {}
    for broker_id, dirs in by_broker.items():
        answer = answers.get(broker_id, f"broker {broker_id} is not registered")
        for tp in dirs:
            if isinstance(answer, dict):
                results[(*tp, broker_id)] = answer.get(tp, "no answer for this partition")
            else:
                results[(*tp, broker_id)] = str(answer)
    return results


def log_dir_progress(states: Sequence[PartitionProgress], wanted: Mapping[Replica, str],
                     answers: Mapping[int, object]) -> list[PartitionProgress]:
    """`states` with the log dirs taken into account: a partition whose replicas
    are in place but not all in their named dirs is in progress while a move
    runs (or its replica is yet to appear), failed when none runs."""
    result = []
    for state in states:
        dirs = tuple(_replica_dir(broker_id, path, (state.topic, state.partition), answers.get(broker_id))
                     for (topic, partition, broker_id), path in sorted(wanted.items())
                     if (topic, partition) == (state.topic, state.partition))
        if not dirs:
            result.append(state)
            continue
        state = dataclasses.replace(state, log_dirs=dirs)
        if state.status == COMPLETE and not all(d.done for d in dirs):
            stuck = [d for d in dirs if not d.done and d.current is not None and d.future != d.wanted and not d.note]
            status = FAILED if stuck else IN_PROGRESS
            state = dataclasses.replace(state, status=status, detail="; ".join(d.describe() for d in dirs))
        result.append(state)
    return result


def _replica_dir(broker_id: int, wanted: str, tp: TopicPartition, answer) -> ReplicaDir:
    if not isinstance(answer, list):
        return ReplicaDir(broker_id, wanted, note=f"log dirs unknown ({answer})")
    current = next((d.path for d in answer if tp in d.partition_sizes), None)
    moving = next((d for d in answer if tp in d.future_replicas), None)
    return ReplicaDir(broker_id, wanted, current, moving.path if moving else None,
                      moving.future_replicas[tp][1] if moving else None)


# --- cancel

def revert_targets(running: Mapping[TopicPartition, Sequence[int]], views: Mapping[TopicPartition, PartitionView],
                   rollback: Mapping[TopicPartition, Sequence[int]] | None) -> dict[TopicPartition, list[int]]:
    """For every partition the running reassignment changes, the replicas it
    had before: from the rollback file when it covers the partition (it keeps
    their order, hence the preferred leader), else the topic znode's original
    replicas (the full set minus those being added)."""
    reverted = {}
    for tp, target in sorted(running.items()):
        view = views.get(tp)
        if view is None:
            continue                      # topic deleted meanwhile: nothing to move back
        before = list(rollback[tp]) if rollback and tp in rollback else list(view.original)
        if before != list(target):
            reverted[tp] = before
    return reverted


# --- lag, from the brokers

@dataclass(frozen=True, slots=True)
class ReplicaLag:
    broker_id: int
    in_isr: bool
    offset: int | None = None           # the replica's log end offset, when its broker told
    leader_offset: int | None = None
    note: str = ""

    @property
    def lag(self) -> int | None:
        if self.offset is None or self.leader_offset is None:
            return None
        return max(0, self.leader_offset - self.offset)

    def describe(self) -> str:
        if self.lag is not None:
            return f"{self.broker_id}: {self.lag} behind"
        membership = "in ISR" if self.in_isr else "not in ISR"
        return f"{self.broker_id}: {membership}" + (f" ({self.note})" if self.note else "")

    def to_dict(self) -> dict:
        return {"broker": self.broker_id, "in_isr": self.in_isr, "offset": self.offset,
                "leader_offset": self.leader_offset, "lag": self.lag, "note": self.note}


def replica_lags(brokers: Mapping[int, codecs.BrokerRegistration], moving: Sequence[PartitionProgress],
                 timeout_s: float) -> dict[TopicPartition, list[ReplicaLag]]:
    """For each moving partition, how far each adding replica is behind its
    leader, from ListOffsets (latest) asked of the leader and of the replica's
    broker with the debugging replica id. Where a broker does not answer for a
    follower, the replica's ISR membership is shown instead, with the reason."""
    asked: dict[int, set[TopicPartition]] = {}
    for item in moving:
        view = item.view
        if view.leader >= 0:
            asked.setdefault(view.leader, set()).add(view.key)
        for replica in view.adding:
            asked.setdefault(replica, set()).add(view.key)
    answers = {b: _latest_offsets(brokers.get(b), tps, timeout_s) for b, tps in asked.items()}
    lags = {}
    for item in moving:
        view = item.view
        leader_answer = answers.get(view.leader, {}).get(view.key) if view.leader >= 0 else None
        leader_offset = leader_answer if isinstance(leader_answer, int) else None
        lags[view.key] = [_lag(b, view, answers.get(b, {}).get(view.key), leader_offset) for b in view.adding]
    return lags


def _lag(broker_id: int, view: PartitionView, answer, leader_offset: int | None) -> ReplicaLag:
    in_isr = broker_id in view.isr
    if isinstance(answer, int) and leader_offset is not None:
        return ReplicaLag(broker_id, in_isr, answer, leader_offset)
    note = answer if isinstance(answer, str) else "leader's offset not available"
    return ReplicaLag(broker_id, in_isr, note=f"offsets not available: {note}")


def _latest_offsets(registration, tps: set[TopicPartition], timeout_s: float) -> dict[TopicPartition, int | str]:
    """Per partition the broker's latest offset, or why there is none."""
    if registration is None:
        return {tp: "broker not registered" for tp in tps}
    from kio.schema.errors import ErrorCode
    from kio.schema.list_offsets.v5 import request as list_offsets_v5

    from kafkactl.cluster.broker.broker_client import BrokerClient, BrokerConnectionError

    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(tps):
        by_topic.setdefault(topic, []).append(partition)
    request = list_offsets_v5.ListOffsetsRequest(
        replica_id=DEBUGGING_REPLICA_ID, isolation_level=0,
        topics=tuple(list_offsets_v5.ListOffsetsTopic(name=t, partitions=tuple(
            list_offsets_v5.ListOffsetsPartition(partition_index=p, current_leader_epoch=-1,
                                                 timestamp=LATEST_TIMESTAMP)
            for p in parts)) for t, parts in by_topic.items()))
    client = BrokerClient(registration.host, registration.port, "kafkactl",
                          connect_timeout_s=timeout_s, request_timeout_s=timeout_s)
    try:
        response = client.request(request)
    except BrokerConnectionError as error:
        return {tp: f"broker {registration.broker_id} unreachable ({error})" for tp in tps}
    finally:
        client.close()
    answers: dict[TopicPartition, int | str] = {}
    for topic in response.topics:
        for part in topic.partitions:
            error = ErrorCode(part.error_code)
            answers[(topic.name, part.partition_index)] = (
                int(part.offset) if error == ErrorCode.none
                else f"broker {registration.broker_id} answered {error.name}")
    return answers


def _ids(values: Iterable[int]) -> str:
    return ",".join(str(v) for v in values)
