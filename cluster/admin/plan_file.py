"""Reading and checking the JSON files operators hand to kafkactl.

Two formats, both Apache Kafka's:

- a reassignment plan, as `kafka-reassign-partitions.sh --generate` prints it
  and `--execute` reads it: `{"version":1,"partitions":[{"topic":"t",
  "partition":0,"replicas":[1,2,3],"log_dirs":["any","any","any"]}]}`;
  `log_dirs` may be absent, and keys this module does not know (the
  planner's, say) are ignored, as Kafka's JSON reader ignores them;
- an election plan, as `kafka-leader-election.sh --path-to-json-file` reads
  it: `{"partitions":[{"topic":"t","partition":0}]}`.

Parsing is pure. Every problem raises `PlanError` with one line that names
the entry (its index, and its topic and partition when they could be read)
and the key, so an operator can find it in a file of thousands of entries.
`check_against_cluster` then checks a parsed plan against what ZooKeeper
holds (topics, partitions, registered brokers).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

ANY_LOG_DIR = "any"
PLAN_VERSION = 1


class PlanError(ValueError):
    """A plan file is not valid; the message names the entry and the key."""


@dataclass(frozen=True, slots=True)
class PlanEntry:
    topic: str
    partition: int
    replicas: tuple[int, ...]
    log_dirs: tuple[str, ...] | None = None   # None: the plan had no log_dirs

    @property
    def key(self) -> tuple[str, int]:
        return self.topic, self.partition

    def explicit_log_dirs(self) -> dict[int, str]:
        """Broker id -> the log dir asked for, for the replicas not left to `any`."""
        if self.log_dirs is None:
            return {}
        return {b: d for b, d in zip(self.replicas, self.log_dirs) if d != ANY_LOG_DIR}


def load_json(text: str, source: str) -> dict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise PlanError(f"{source}: not JSON ({error})") from None
    if not isinstance(value, dict):
        raise PlanError(f"{source}: expected a JSON object with a \"partitions\" list")
    return value


def parse_reassignment_plan(text: str, source: str = "plan") -> list[PlanEntry]:
    """The entries of a reassignment plan, in file order (PlanError if invalid)."""
    value = load_json(text, source)
    # Kafka's tool reads a plan without "version" as version 1.
    version = value.get("version", PLAN_VERSION)
    if not _is_int(version) or version != PLAN_VERSION:
        raise PlanError(f"{source}: \"version\" is {json.dumps(version)}; only version 1 is supported")
    items = _partitions_list(value, source)
    entries = [_reassignment_entry(item, i, source) for i, item in enumerate(items)]
    _refuse_duplicates(entries, source)
    return entries


def parse_election_plan(text: str, source: str = "plan") -> list[tuple[str, int]]:
    """The (topic, partition) pairs of an election plan, in file order."""
    value = load_json(text, source)
    items = _partitions_list(value, source)
    pairs = []
    for i, item in enumerate(items):
        where = f"{source}: partitions[{i}]"
        if not isinstance(item, dict):
            raise PlanError(f"{where}: expected an object with \"topic\" and \"partition\"")
        pairs.append((_topic(item, where), _partition(item, where)))
    seen: set[tuple[str, int]] = set()
    for i, pair in enumerate(pairs):
        if pair in seen:
            raise PlanError(f"{source}: partitions[{i}] ({_name(*pair)}): listed twice")
        seen.add(pair)
    return pairs


def _partitions_list(value: dict, source: str) -> list:
    if "partitions" not in value:
        raise PlanError(f"{source}: missing key \"partitions\"")
    items = value["partitions"]
    if not isinstance(items, list):
        raise PlanError(f"{source}: \"partitions\" must be a list")
    if not items:
        raise PlanError(f"{source}: \"partitions\" is empty: nothing to do")
    return items


def _reassignment_entry(item, index: int, source: str) -> PlanEntry:
    where = f"{source}: partitions[{index}]"
    if not isinstance(item, dict):
        raise PlanError(f"{where}: expected an object with \"topic\", \"partition\" and \"replicas\"")
    topic, partition = _topic(item, where), _partition(item, where)
    where = f"{where} ({_name(topic, partition)})"
    replicas = _replicas(item, where)
    return PlanEntry(topic, partition, replicas, _log_dirs(item, replicas, where))


def _topic(item: dict, where: str) -> str:
    if "topic" not in item:
        raise PlanError(f"{where}: missing key \"topic\"")
    topic = item["topic"]
    if not isinstance(topic, str) or not topic:
        raise PlanError(f"{where}: \"topic\" must be a non-empty string")
    return topic


def _partition(item: dict, where: str) -> int:
    if "partition" not in item:
        raise PlanError(f"{where}: missing key \"partition\"")
    partition = item["partition"]
    if not _is_int(partition) or partition < 0:
        raise PlanError(f"{where}: \"partition\" must be a partition number (an integer >= 0)")
    return partition


def _replicas(item: dict, where: str) -> tuple[int, ...]:
    if "replicas" not in item:
        raise PlanError(f"{where}: missing key \"replicas\"")
    replicas = item["replicas"]
    if not isinstance(replicas, list) or not all(_is_int(r) and r >= 0 for r in replicas):
        raise PlanError(f"{where}: \"replicas\" must be a list of broker ids (integers >= 0)")
    if not replicas:
        raise PlanError(f"{where}: \"replicas\" is empty: a partition needs at least one replica")
    repeated = sorted({r for r in replicas if replicas.count(r) > 1})
    if repeated:
        raise PlanError(f"{where}: \"replicas\" lists broker {_ids(repeated)} more than once")
    return tuple(replicas)


def _log_dirs(item: dict, replicas: tuple[int, ...], where: str) -> tuple[str, ...] | None:
    if "log_dirs" not in item:
        return None
    log_dirs = item["log_dirs"]
    if not isinstance(log_dirs, list) or not all(isinstance(d, str) for d in log_dirs):
        raise PlanError(f"{where}: \"log_dirs\" must be a list of strings (\"any\" or absolute paths)")
    if len(log_dirs) != len(replicas):
        raise PlanError(f"{where}: \"log_dirs\" has {len(log_dirs)} entries for {len(replicas)} replicas; "
                        f"give one per replica, in the same order")
    bad = [d for d in log_dirs if d != ANY_LOG_DIR and not d.startswith("/")]
    if bad:
        raise PlanError(f"{where}: \"log_dirs\" entry {bad[0]!r} is neither \"any\" nor an absolute path")
    return tuple(log_dirs)


def _refuse_duplicates(entries: list[PlanEntry], source: str) -> None:
    first: dict[tuple[str, int], int] = {}
    for i, entry in enumerate(entries):
        if entry.key in first:
            raise PlanError(f"{source}: partitions[{i}] ({_name(*entry.key)}): listed twice "
                            f"(also partitions[{first[entry.key]}])")
        first[entry.key] = i


def check_against_cluster(entries: list[PlanEntry], partitions: Mapping[str, Iterable[int] | None],
                          broker_ids: Iterable[int], source: str = "plan") -> None:
    """Every topic and partition exists and every replica is a registered broker.

    `partitions` maps each topic of the plan to its partition numbers (None
    when the topic does not exist)."""
    registered = set(broker_ids)
    for i, entry in enumerate(entries):
        where = f"{source}: partitions[{i}] ({_name(*entry.key)})"
        existing = partitions.get(entry.topic)
        if existing is None:
            raise PlanError(f"{where}: \"topic\": topic {entry.topic!r} does not exist")
        if entry.partition not in set(existing):
            raise PlanError(f"{where}: \"partition\": topic {entry.topic!r} has no partition {entry.partition}")
        unknown = [r for r in entry.replicas if r not in registered]
        if unknown:
            raise PlanError(f"{where}: \"replicas\": broker {_ids(unknown)} is not registered "
                            f"(registered: {_ids(sorted(registered)) or 'none'})")


def check_election_partitions(pairs: list[tuple[str, int]], partitions: Mapping[str, Iterable[int] | None],
                              source: str = "plan") -> None:
    for i, (topic, partition) in enumerate(pairs):
        where = f"{source}: partitions[{i}] ({_name(topic, partition)})"
        existing = partitions.get(topic)
        if existing is None:
            raise PlanError(f"{where}: \"topic\": topic {topic!r} does not exist")
        if partition not in set(existing):
            raise PlanError(f"{where}: \"partition\": topic {topic!r} has no partition {partition}")


def format_reassignment(assignment: Mapping[tuple[str, int], Iterable[int]]) -> dict:
    """Kafka's reassignment JSON (as plain data), `any` log dir for each replica."""
    entries = []
    for (topic, partition), replicas in sorted(assignment.items()):
        replicas = list(replicas)
        entries.append({"topic": topic, "partition": partition, "replicas": replicas,
                        "log_dirs": [ANY_LOG_DIR] * len(replicas)})
    return {"version": PLAN_VERSION, "partitions": entries}


def format_election(pairs: Iterable[tuple[str, int]]) -> dict:
    return {"partitions": [{"topic": t, "partition": p} for t, p in sorted(pairs)]}


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _name(topic: str, partition: int) -> str:
    return f"topic {topic!r} partition {partition}"


def _ids(values: Iterable[int]) -> str:
    return ", ".join(str(v) for v in values)
