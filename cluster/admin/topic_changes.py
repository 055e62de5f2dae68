"""Validating topic changes before anything is written (pure, no ZooKeeper).

Kafka's rules, as kafka-topics.sh / AdminZkClient apply them:
- an explicit assignment ("1:2:3,2:3:1", partition 0 first) gives every
  partition the same number of replicas, distinct brokers, all registered;
- a new topic whose name equals an existing one once '.' and '_' are
  swapped is refused (their metric names would collide);
- partitions are only ever added; new ones continue the existing
  assignment: Kafka's addPartitions starts the round robin at the first
  registered broker >= partition 0's first replica (the first broker when
  there is none), and uses that index for the follower shift too, from the
  first new partition id on.
"""

from __future__ import annotations

from kafkactl.cluster.admin.replica_assignment import AssignmentError, BrokerInfo, assign_replicas
from kafkactl.cluster.admin.topic_names import collision_key

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


class InvalidChange(ValueError):
    """The requested change breaks a rule; the message names the field."""


def parse_replica_assignment(text: str, option: str = "--replica-assignment") -> list[list[int]]:
    """"1:2:3,2:3:1" -> [[1, 2, 3], [2, 3, 1]] (partition order)."""
    partitions = []
    for index, item in enumerate(text.split(",")):
        try:
            replicas = [int(b) for b in item.strip().split(":")]
        except ValueError:
            raise InvalidChange(f"{option}: partition {index} {item.strip()!r} is not broker ids "
                                f"joined by ':' (e.g. 1:2:3,2:3:1)") from None
        partitions.append(replicas)
    return partitions


def validate_assignment(partitions: list[list[int]], registered: set[int], replication_factor: int | None = None,
                        first_partition: int = 0, option: str = "--replica-assignment") -> None:
    """Same replica count everywhere (`replication_factor` if given), distinct, registered brokers."""
    expected = replication_factor if replication_factor is not None else len(partitions[0])
    for offset, replicas in enumerate(partitions):
        partition = first_partition + offset
        if len(set(replicas)) != len(replicas):
            raise InvalidChange(f"{option}: partition {partition} lists a broker twice: {_ids(replicas)}")
        if len(replicas) != expected:
            raise InvalidChange(f"{option}: partition {partition} has {len(replicas)} replicas where the "
                                f"others have {expected}; every partition needs the same replication factor")
        unknown = sorted(set(replicas) - registered)
        if unknown:
            raise InvalidChange(f"{option}: partition {partition}: broker {unknown[0]} is not registered "
                                f"(registered: {_ids(sorted(registered)) or 'none'})")


def check_name_collision(name: str, existing: list[str]) -> None:
    """Refuse a new name that collides with another topic once '.' and '_' are swapped."""
    key = collision_key(name)
    for other in existing:
        if other != name and collision_key(other) == key:
            raise InvalidChange(f"topic {name!r} collides with existing topic {other!r} "
                                f"('.' and '_' are the same in metric names)")


def may_collide(name: str) -> bool:
    return "." in name or "_" in name


def new_partitions_assignment(existing: dict[int, list[int]], new_count: int, brokers: list[BrokerInfo],
                              explicit: list[list[int]] | None = None) -> dict[int, list[int]]:
    """Replicas for partitions len(existing) .. new_count-1 (see the module doc)."""
    current = len(existing)
    if new_count <= current:
        raise InvalidChange(f"--partitions: the topic has {current} partitions; give more than that "
                            f"(partitions can only be added)")
    replication_factor = len(existing[0])
    registered = {b.broker_id for b in brokers}
    if explicit is not None:
        return _explicit_new(explicit, current, new_count, replication_factor, registered)
    try:
        return continued_assignment(existing, new_count, brokers)
    except AssignmentError as error:
        raise InvalidChange(f"--partitions: {error}") from None


def continued_assignment(existing: dict[int, list[int]], new_count: int,
                         brokers: list[BrokerInfo]) -> dict[int, list[int]]:
    """Kafka's replicas for partitions len(existing) .. new_count-1 (the
    module doc's rule; no broker id at or above partition 0's first replica:
    index 0, as Kafka's max(0, indexWhere(...))); AssignmentError if the
    brokers cannot hold them."""
    current = len(existing)
    ids = sorted(b.broker_id for b in brokers)
    start_index = next((i for i, b in enumerate(ids) if b >= existing[0][0]), 0)
    return assign_replicas(brokers, new_count - current, len(existing[0]), start_partition=current,
                           rng=_FixedStart(start_index))


def _explicit_new(explicit, current, new_count, replication_factor, registered) -> dict[int, list[int]]:
    # Kafka's alter takes the whole topic's assignment and drops the existing
    # partitions; a list of only the new ones is accepted too.
    if len(explicit) == new_count:
        explicit = explicit[current:]
    if len(explicit) != new_count - current:
        raise InvalidChange(f"--replica-assignment: {len(explicit)} partitions given; list the "
                            f"{new_count - current} new ones (or all {new_count})")
    validate_assignment(explicit, registered, replication_factor, first_partition=current)
    return {current + i: replicas for i, replicas in enumerate(explicit)}


class _FixedStart:
    """Stands in for the random source: Kafka's addPartitions fixes both the
    start index and the first follower shift to the same index."""

    def __init__(self, index: int) -> None:
        self.index = index

    def randrange(self, _count: int) -> int:
        return self.index


def _ids(values) -> str:
    return ",".join(str(v) for v in values)
