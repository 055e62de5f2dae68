"""A topic's new replication factor, as a reassignment that moves as little as possible (pure).

Kafka's scripts cannot change a topic's replication factor: operators write
a reassignment JSON by hand. `propose_replication_factor` writes it, with
the rules operators expect, partition by partition in partition order:

Increasing keeps every current replica where it is, in its position, so the
first replica (the preferred leader) and the leader stay and only the new
replicas receive data. Each new replica goes to a registered broker the
partition does not have yet, choosing by, in order:
  1. the rack the partition uses least (a rack it does not use yet first;
     a broker without a rack counts as using none, as in replica_moves),
  2. the fewest replicas in the cluster at that moment (`load`, counted up
     as replicas are placed, so consecutive partitions spread out),
  3. the fewest replicas of this topic,
  4. the first broker after the partition's first replica in broker id
     order (Kafka's round robin), so that equal brokers take turns.

Decreasing never removes the first replica (the preferred leader); the
others keep their order. Replicas are removed one at a time, choosing by:
  1. a broker that is not registered (its replica serves nobody),
  2. a replica that is not the partition's current leader (`leaders`: when
     the leader is not the preferred one, removing it would force an
     election and interrupt its clients),
  3. a replica whose rack another remaining replica of the partition shares,
  4. the broker with the most replicas in the cluster (counted down as
     replicas are removed),
  5. the replica nearest the end of the list.

Partitions that have the wanted factor already are left out; an empty plan
means there is nothing to do. Refused with ReplicationFactorError (one
line): a factor below 1 or above the number of registered brokers, and a
plan that keeps a replica on a broker that is not registered, because the
controller completes a reassignment only once every target replica is in
the ISR, which a missing broker never joins. Deterministic: same input,
same plan.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence


class ReplicationFactorError(ValueError):
    """The wanted replication factor cannot be had; the message says why, in one line."""


def propose_replication_factor(topic: str, current: Mapping[int, Sequence[int]], replication_factor: int,
                               brokers: Mapping[int, str | None],
                               load: Mapping[int, int],
                               leaders: Mapping[int, int] | None = None) -> dict[int, list[int]]:
    """The new replicas of every partition of `topic` (`current`: partition ->
    replicas) whose replica count is not `replication_factor`. `brokers`: every
    registered broker and its rack (None without one); `load`: replicas per
    broker over the whole cluster, this topic included; `leaders`: partition ->
    its current leader, where known."""
    if replication_factor < 1:
        raise ReplicationFactorError(f"replication factor must be at least 1, not {replication_factor}")
    changing = {p: list(r) for p, r in sorted(current.items()) if len(r) != replication_factor}
    if not changing:
        return {}
    if replication_factor > len(brokers):
        raise ReplicationFactorError(f"replication factor: {replication_factor} larger than available brokers: "
                                     f"{len(brokers)}")
    load = {b: load.get(b, 0) for b in set(load) | set(brokers)}
    topic_load = {b: 0 for b in load}
    for replicas in current.values():
        for b in replicas:
            topic_load[b] = topic_load.get(b, 0) + 1
    ordered = sorted(brokers)
    plan = {}
    for partition, replicas in changing.items():
        while len(replicas) < replication_factor:
            chosen = _new_replica(replicas, ordered, brokers, load, topic_load)
            replicas.append(chosen)
            load[chosen] += 1
            topic_load[chosen] += 1
        while len(replicas) > replication_factor:
            dropped = _replica_to_drop(replicas, brokers, load, (leaders or {}).get(partition))
            replicas.remove(dropped)
            load[dropped] = load.get(dropped, 0) - 1
        missing = [b for b in replicas if b not in brokers]
        if missing:
            raise ReplicationFactorError(
                f"topic {topic!r} partition {partition} would keep its replica on broker {missing[0]}, which is "
                f"not registered, and the reassignment could not complete; start the broker, or move its "
                f"replicas first (`kafkactl reassign generate --replace-broker {missing[0]}:NEW`)")
        plan[partition] = replicas
    return plan


def _new_replica(replicas: list[int], ordered: list[int], brokers: Mapping[int, str | None],
                 load: Mapping[int, int], topic_load: Mapping[int, int]) -> int:
    rack_use: dict[str, int] = {}
    for b in replicas:
        if brokers.get(b) is not None:
            rack_use[brokers[b]] = rack_use.get(brokers[b], 0) + 1
    after = bisect_right(ordered, replicas[0])      # round robin from the first replica
    index = {b: i for i, b in enumerate(ordered)}

    def preference(broker_id: int):
        rack = brokers[broker_id]
        turn = (index[broker_id] - after) % len(ordered)
        return rack_use.get(rack, 0) if rack is not None else 0, load[broker_id], topic_load[broker_id], turn

    # Enough brokers exist (checked by the caller): a candidate is always left.
    return min((b for b in ordered if b not in replicas), key=preference)


def _replica_to_drop(replicas: list[int], brokers: Mapping[int, str | None], load: Mapping[int, int],
                     leader: int | None) -> int:
    def preference(position: int):
        broker_id = replicas[position]
        rack = brokers.get(broker_id)
        shares_rack = rack is not None and any(brokers.get(o) == rack for o in replicas if o != broker_id)
        return broker_id not in brokers, broker_id != leader, shares_rack, load.get(broker_id, 0), position

    # Position 0, the preferred leader, is never a candidate.
    return replicas[max(range(1, len(replicas)), key=preference)]


def replica_load(assignments: Iterable[Mapping[int, Sequence[int]]]) -> dict[int, int]:
    """Replicas per broker over the given topics' assignments (partition ->
    replicas): the `load` of propose_replication_factor, whichever back end
    listed them."""
    load: dict[int, int] = {}
    for assignment in assignments:
        for replicas in assignment.values():
            for broker_id in replicas:
                load[broker_id] = load.get(broker_id, 0) + 1
    return load


def changed_since(topic: str, planned: Mapping[int, Sequence[int]],
                  now: Mapping[int, Sequence[int]] | None) -> str | None:
    """How the topic's replicas now differ from those a plan was made from, in
    one line, or None when they do not. Through the Admin API nothing makes
    AlterPartitionReassignments conditional on the topic (as the ZooKeeper
    multi's version check does), so they are compared just before starting."""
    if now is None:
        return f"topic {topic!r} was deleted"
    if sorted(now) != sorted(planned):
        return f"topic {topic!r} has {len(now)} partitions now, {len(planned)} when the plan was made"
    for partition in sorted(planned):
        if list(now[partition]) != list(planned[partition]):
            return (f"topic {topic!r} partition {partition} has replicas {list(now[partition])} now, "
                    f"{list(planned[partition])} when the plan was made")
    return None
