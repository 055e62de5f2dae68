"""Plans that move as little as possible: replace a broker, or empty some.

Kafka's `--generate` reassigns every partition of the named topics over the
given brokers, which moves most replicas even to take one broker out.
Operators decommissioning or replacing a broker want the opposite: only the
replicas on the brokers concerned move, everything else stays where it is,
including each partition's replica order (so preferred leaders stay put
where they can). Pure functions over the current assignment.

- `replace_brokers`: each replica on OLD goes to NEW, in the same position.
- `move_off_brokers`: each replica on an excluded broker goes to the
  remaining broker that holds the fewest replicas at that moment, preferring
  a rack the partition does not use yet, then the lower broker id; never a
  broker the partition already has.
Partitions with nothing on the brokers concerned are left out of the plan.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

TopicPartition = tuple[str, int]


class MoveError(ValueError):
    """A plan that cannot be made; the message names the option's problem."""


def parse_replacements(items: Sequence[str]) -> dict[int, int]:
    """--replace-broker OLD:NEW values as {OLD: NEW}."""
    replacements: dict[int, int] = {}
    for item in items:
        old, sep, new = item.partition(":")
        if not (sep and old.strip().isdigit() and new.strip().isdigit()):
            raise MoveError(f"--replace-broker {item!r}: expected OLD:NEW broker ids, e.g. 3:7")
        if int(old) in replacements:
            raise MoveError(f"--replace-broker: broker {int(old)} is replaced twice")
        replacements[int(old)] = int(new)
    return replacements


def replace_brokers(current: Mapping[TopicPartition, Sequence[int]], replacements: Mapping[int, int],
                    registered: set[int]) -> dict[TopicPartition, list[int]]:
    """Every replica on an OLD broker moved to its NEW one, in place."""
    for old, new in replacements.items():
        if new not in registered:
            raise MoveError(f"--replace-broker {old}:{new}: broker {new} is not registered")
        if old == new:
            raise MoveError(f"--replace-broker {old}:{new}: a broker cannot replace itself")
    plan = {}
    for tp, replicas in sorted(current.items()):
        if not any(r in replacements for r in replicas):
            continue
        moved = [replacements.get(r, r) for r in replicas]
        if len(set(moved)) != len(moved):
            raise MoveError(f"--replace-broker: topic {tp[0]!r} partition {tp[1]} would hold a broker twice "
                            f"({_ids(replicas)} -> {_ids(moved)})")
        plan[tp] = moved
    return plan


def move_off_brokers(current: Mapping[TopicPartition, Sequence[int]], excluded: set[int],
                     racks: Mapping[int, str | None]) -> dict[TopicPartition, list[int]]:
    """Every replica on an excluded broker moved to a remaining one (`racks`:
    every registered broker and its rack, None when it has none)."""
    remaining = sorted(b for b in racks if b not in excluded)
    load = {b: 0 for b in remaining}
    for replicas in current.values():
        for r in replicas:
            if r in load:
                load[r] += 1
    plan = {}
    for tp, replicas in sorted(current.items()):
        if not any(r in excluded for r in replicas):
            continue
        moved = list(replicas)
        for position, replica in enumerate(replicas):
            if replica in excluded:
                moved[position] = _destination(tp, moved, remaining, load, racks)
                load[moved[position]] += 1
        plan[tp] = moved
    return plan


def _destination(tp: TopicPartition, replicas: list[int], remaining: list[int], load: dict[int, int],
                 racks: Mapping[int, str | None]) -> int:
    used_racks = {racks.get(r) for r in replicas if r in load}
    candidates = [b for b in remaining if b not in replicas]
    if not candidates:
        raise MoveError(f"--exclude-brokers: topic {tp[0]!r} partition {tp[1]} has {len(replicas)} replicas "
                        f"and only {len(remaining)} brokers would remain")
    return min(candidates, key=lambda b: (racks.get(b) is not None and racks.get(b) in used_racks, load[b], b))


def _ids(values) -> str:
    return ",".join(str(v) for v in values)
