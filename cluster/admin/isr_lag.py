"""How far each replica outside the ISR is behind its leader, and since when.

The cluster back end (ZooKeeper or the Admin API: backend.py) says who leads
and who is in the ISR, and which brokers are live. Only ZooKeeper says when
leader or ISR last changed (the state znode's mtime); Metadata does not, so
through the Admin API that time is None, never guessed. The brokers say
where each log ends: the leader and every out-of-ISR follower are asked with
ListOffsets (replica_id -2, see broker_queries), and the lag is the leader's
log end offset minus the follower's. A broker that is not registered or does
not answer is reported per replica, with the reason.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from kafkactl.cluster.admin import broker_queries
from kafkactl.cluster.admin.backend import ZOOKEEPER
from kafkactl.cluster.admin.inspect import NO_LEADER, partition_health
from kafkactl.cluster.admin.topics import PartitionInfo


@dataclass(frozen=True, slots=True)
class ReplicaLag:
    broker_id: int
    log_end_offset: int | None
    lag: int | None              # offsets behind the leader's log end; None: unknown (see problem)
    problem: str | None = None


def out_of_isr(partition: PartitionInfo) -> list[int]:
    return [r for r in partition.replicas if r not in partition.isr]


def offset_questions(partitions: list[PartitionInfo]) -> dict[int, set[tuple[str, int]]]:
    """Per broker, the partitions whose log end offset it must tell: the
    leaders and the out-of-ISR replicas of partitions with such replicas."""
    questions: dict[int, set[tuple[str, int]]] = {}
    for p in partitions:
        lagging = out_of_isr(p)
        if not lagging:
            continue
        for broker_id in ([p.leader] if p.leader != NO_LEADER else []) + lagging:
            questions.setdefault(broker_id, set()).add((p.topic, p.partition))
    return questions


def replica_lags(partition: PartitionInfo, answers: dict[int, object]) -> list[ReplicaLag]:
    """The out-of-ISR replicas of `partition` with their lag, from the brokers' answers
    (per broker id: {(topic, partition): OffsetAnswer}, or a BrokerQueryError)."""
    key = (partition.topic, partition.partition)
    leader_offset, leader_problem = _offset(partition.leader, key, answers)
    if partition.leader == NO_LEADER:
        leader_problem = "no leader"
    lags = []
    for broker_id in out_of_isr(partition):
        offset, problem = _offset(broker_id, key, answers)
        if problem is None and leader_problem is not None:
            problem = f"leader: {leader_problem}"
        lag = leader_offset - offset if problem is None else None
        lags.append(ReplicaLag(broker_id, offset, max(lag, 0) if lag is not None else None, problem))
    return lags


def _offset(broker_id: int, key: tuple[str, int], answers: dict[int, object]) -> tuple[int | None, str | None]:
    answer = answers.get(broker_id)
    if answer is None:
        return None, f"broker {broker_id} is not registered (down?)"
    if isinstance(answer, broker_queries.BrokerQueryError):
        return None, str(answer)
    offset = answer.get(key)
    if offset is None:
        return None, f"broker {broker_id} did not answer for this partition"
    if offset.error is not None:
        return None, f"broker {broker_id}: {offset.error}"
    return offset.offset, None


def isr_rows(partitions: list[PartitionInfo], answers: dict[int, object], live: set[int],
             min_isr: dict[str, int], change_times: bool = True) -> list[dict]:
    """One row per partition; `change_times` False: the back end does not know
    when each ISR changed (isr_changed_ms None)."""
    rows = []
    for p in partitions:
        health = partition_health(p, live, min_isr[p.topic])
        rows.append({**p.to_dict(), "isr_changed_ms": p.isr_changed_ms if change_times else None,
                     "min_insync_replicas": min_isr[p.topic],
                     "under_replicated": health.under_replicated, "under_min_isr": health.under_min_isr,
                     "offline": health.unavailable,
                     "out_of_isr": [asdict(lag) for lag in replica_lags(p, answers)]})
    return rows


def summary(rows: list[dict]) -> dict[str, int]:
    return {
        "partitions": len(rows),
        "under_replicated": sum(r["under_replicated"] for r in rows),
        "under_min_isr": sum(r["under_min_isr"] for r in rows),
        "offline": sum(r["offline"] for r in rows),
    }


def isr_report(backend, topics: list[str] | None, timeout_s: float) -> tuple[list[dict], list[str]]:
    """Rows for every partition of `topics` (all when None), and the topics that do
    not exist. `backend`: a ClusterBackend; `timeout_s` bounds the brokers' ListOffsets."""
    names = topics or backend.topic_names()
    described = backend.describe_topics(names)
    missing = [t for t, parts in described.items() if parts is None]
    partitions = [p for parts in described.values() if parts for p in parts]
    registrations = {b.broker_id: b for b in backend.brokers()}
    min_isr = backend.min_insync_replicas([t for t in names if t not in missing])
    questions = offset_questions(partitions)
    addresses = [broker_queries.BrokerAddress(b, registrations[b].host, registrations[b].port)
                 for b in questions if b in registrations]
    answers = broker_queries.ask_each(
        {a: broker_queries.log_end_offsets(questions[a.broker_id]) for a in addresses}, timeout_s)
    return isr_rows(partitions, answers, set(registrations), min_isr, backend.kind == ZOOKEEPER), missing
