"""Named small snapshots, one situation each, for tests, docs and demos.

`write_fixture(name, directory)` writes the three JSON Lines files;
`python -m kafkactl.planner.fixtures NAME DIR` does the same from a shell.
Each fixture also carries the `kafkactl plan` options it is meant for
(`args`). Log dirs' used bytes are the sizes of the replicas they hold.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

GB = 10**9
MB = 10**6
NETWORK_BYTES_PER_S = 125 * MB  # 1 Gbit/s
SSD, HDD = "/data/ssd0", "/data/hdd0"


@dataclass(frozen=True)
class Fixture:
    name: str
    description: str
    brokers: list[dict]
    log_dirs: list[dict]
    partitions: list[dict]
    args: tuple[str, ...] = field(default=())   # the `kafkactl plan` options it is meant for
    feasible: bool = True


def _brokers(racks: dict[int, str | None]) -> list[dict]:
    return [{"broker_id": b, "rack": rack, "network_in_capacity_bytes_per_s": NETWORK_BYTES_PER_S,
             "network_out_capacity_bytes_per_s": NETWORK_BYTES_PER_S} for b, rack in sorted(racks.items())]


def _partition(topic: str, partition: int, replicas: list[int], dirs: list[str], size_bytes: int,
               bytes_in_per_s: float, bytes_out_per_s: float) -> dict:
    return {"topic": topic, "partition": partition, "replicas": replicas, "leader": replicas[0],
            "log_dirs": dirs, "size_bytes": size_bytes, "bytes_in_per_s": float(bytes_in_per_s),
            "bytes_out_per_s": float(bytes_out_per_s)}


def _log_dirs(capacities: dict[int, tuple[int, int]], partitions: list[dict]) -> list[dict]:
    """An SSD and an HDD dir per broker (capacities in that order; a capacity
    of 0: no such dir), used = the replicas they hold."""
    used: dict[tuple[int, str], int] = {}
    for p in partitions:
        for broker, path in zip(p["replicas"], p["log_dirs"]):
            used[(broker, path)] = used.get((broker, path), 0) + p["size_bytes"]
    return [{"broker_id": b, "path": path, "media": media, "capacity_bytes": capacity,
             "used_bytes": used.get((b, path), 0)}
            for b, (ssd, hdd) in sorted(capacities.items())
            for path, media, capacity in ((SSD, "ssd", ssd), (HDD, "hdd", hdd)) if capacity]


def _fixture(name, description, racks, capacities, partitions, args=(), feasible=True) -> Fixture:
    return Fixture(name, description, _brokers(racks), _log_dirs(capacities, partitions), partitions,
                   tuple(args), feasible)


def unbalanced_two_racks() -> Fixture:
    partitions = [_partition(topic, p, [1, 4] if p % 2 == 0 else [4, 1], [SSD, SSD], size, 1 * MB, 2 * MB)
                  for topic, size in (("orders", 2 * GB), ("clicks", 1 * GB)) for p in range(6)]
    return _fixture("unbalanced_two_racks",
                    "6 brokers in racks r1 (1-3) and r2 (4-6); every replica on brokers 1 and 4",
                    {1: "r1", 2: "r1", 3: "r1", 4: "r2", 5: "r2", 6: "r2"},
                    {b: (100 * GB, 200 * GB) for b in range(1, 7)}, partitions)


def hot_partitions_on_hdd() -> Fixture:
    pairs = ([1, 3], [3, 2], [2, 4], [4, 1])
    partitions = ([_partition("hot", p, pairs[p], [HDD, HDD], 1 * GB, 5 * MB, 10 * MB) for p in range(4)]
                  + [_partition("archive", p, pairs[p], [SSD, SSD], 20 * GB, 0.01 * MB, 0.01 * MB)
                     for p in range(4)])
    return _fixture("hot_partitions_on_hdd",
                    "4 brokers, 2 racks: a hot topic on HDD dirs while a cold archive fills the SSDs",
                    {1: "r1", 2: "r1", 3: "r2", 4: "r2"}, {b: (60 * GB, 500 * GB) for b in range(1, 5)},
                    partitions)


def full_disk() -> Fixture:
    partitions = [_partition("logs", p, [1, 2] if p % 2 == 0 else [2, 1], [SSD, SSD], 10 * GB, 1 * MB, 1 * MB)
                  for p in range(9)]
    return _fixture("full_disk",
                    "4 brokers without racks; the SSD dirs of brokers 1 and 2 are 90 % full (threshold 80 %)",
                    {b: None for b in range(1, 5)}, {b: (100 * GB, 100 * GB) for b in range(1, 5)}, partitions)


def add_two_brokers() -> Fixture:
    pairs = ([1, 2], [2, 3], [3, 4], [4, 1])
    partitions = [_partition("events", p, pairs[p % 4], [SSD, HDD] if p % 2 else [HDD, SSD], 4 * GB, 2 * MB,
                             4 * MB) for p in range(8)]
    return _fixture("add_two_brokers",
                    "brokers 1-4 hold every replica; brokers 5 and 6 are new and empty (--add-brokers 5,6)",
                    {1: "r1", 2: "r2", 3: "r1", 4: "r2", 5: "r1", 6: "r2"},
                    {b: (100 * GB, 100 * GB) for b in range(1, 7)}, partitions, ("--add-brokers", "5,6"))


def decommission_one() -> Fixture:
    partitions = [_partition("payments", p, [(p + k) % 5 + 1 for k in range(3)], [SSD, HDD, SSD], 3 * GB, 1 * MB,
                             3 * MB) for p in range(10)]
    return _fixture("decommission_one",
                    "5 brokers without racks, RF 3; broker 5 is to be emptied (--exclude-brokers 5)",
                    {b: None for b in range(1, 6)}, {b: (100 * GB, 100 * GB) for b in range(1, 6)}, partitions,
                    ("--exclude-brokers", "5"))


def rack_constraint_unsatisfiable() -> Fixture:
    partitions = [_partition("metrics", p, [1 + p % 3, 1 + (p + 1) % 3], [SSD, SSD], 5 * GB, 1 * MB, 1 * MB)
                  for p in range(6)]
    return _fixture("rack_constraint_unsatisfiable",
                    "RF 2 over racks r1 (3 brokers) and r2 (broker 4 alone, 2 x 10 GB): every partition needs a "
                    "replica on broker 4, which cannot hold 30 GB",
                    {1: "r1", 2: "r1", 3: "r1", 4: "r2"},
                    {1: (100 * GB, 100 * GB), 2: (100 * GB, 100 * GB), 3: (100 * GB, 100 * GB),
                     4: (10 * GB, 10 * GB)}, partitions, feasible=False)


UNEQUAL_RACKS = {b: "r1" if b <= 5 else "r2" if b <= 9 else "r3" for b in range(1, 13)}


def unequal_racks() -> Fixture:
    # every partition has one replica per rack: rack r3's 3 brokers carry a third of the bytes
    partitions = [_partition("events", p, [1 + p % 2, 6 + p % 2, 10], [SSD, SSD, SSD], 1 * GB, 1 * MB, 2 * MB)
                  for p in range(30)]
    return _fixture("unequal_racks",
                    "RF 3 over racks of 5, 4 and 3 brokers (SSD only): the 3-broker rack carries 4/3 of the mean "
                    "whatever the plan; broker 10 holds every replica of its rack",
                    UNEQUAL_RACKS, {b: (100 * GB, 0) for b in range(1, 13)}, partitions)


def skewed() -> Fixture:
    # racks of 5, 4 and 3; brokers 4 and 5 have HDD only; 11 and 12 are new and empty;
    # the hot topic sits on HDD dirs, a cold archive fills SSDs
    holders = {"r1": [1, 2, 3, 4, 5], "r2": [6, 7, 8, 9], "r3": [10]}
    partitions = []
    for topic, count, size, rate_in, rate_out in (("hot", 6, 1 * GB, 4 * MB, 8 * MB),
                                                   ("archive", 12, 8 * GB, 0.05 * MB, 0.05 * MB),
                                                   ("events", 18, 3 * GB, 1 * MB, 2 * MB)):
        for p in range(count):
            replicas = [holders[r][(p + i) % len(holders[r])] for i, r in enumerate(("r1", "r2", "r3"))]
            media = HDD if topic == "hot" else SSD if topic == "archive" else HDD if p % 2 else SSD
            dirs = [HDD if b in (4, 5) else media for b in replicas]
            partitions.append(_partition(topic, p, replicas, dirs, size, rate_in, rate_out))
    capacities = {b: (0, 400 * GB) if b in (4, 5) else (150 * GB, 300 * GB) for b in range(1, 13)}
    return _fixture("skewed",
                    "racks of 5, 4 and 3 brokers, RF 3; brokers 4 and 5 HDD only; 11 and 12 new and empty "
                    "(--add-brokers 11,12); hot data on HDD while a cold archive fills SSDs",
                    UNEQUAL_RACKS, capacities, partitions, ("--add-brokers", "11,12"))


FIXTURES = {f.__name__: f for f in (unbalanced_two_racks, hot_partitions_on_hdd, full_disk, add_two_brokers,
                                    decommission_one, rack_constraint_unsatisfiable, unequal_racks, skewed)}


# --- a larger skewed snapshot, for the benchmark

TB = 10**12
SKEWED_RACKS = (5, 4, 3)          # brokers per rack, in proportion
TOPIC_SIZES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32)


def write_skewed(directory, partitions: int, brokers: int, seed: int = 0, disk_fill: float = 0.4,
                 network_fill: float = 0.3) -> tuple[int, ...]:
    """A skewed snapshot as JSON Lines in `directory`; returns the new, empty
    brokers (for --add-brokers).

    Racks in the proportion 5:4:3 and RF 3, so each rack holds a replica of
    every partition and the smallest rack's brokers carry the most; every
    fourth broker has HDD dirs only (3 x 4 TB; the others one 3 TB SSD and two
    4 TB HDDs); every sixth is new and empty; 5 % of the topics are hot (30x
    the rate, short retention) and sit on HDD dirs. Sizes and rates are
    lognormal per topic; replicas by Kafka's rack-aware assignment over the
    brokers holding data, dirs by fewest partitions as Kafka picks them;
    sizes scaled to `disk_fill` of the holders' capacity (less if a dir
    would be over 92 % full), rates to `network_fill` of their inbound
    capacity. The same arguments give the
    same files."""
    import random

    import numpy as np

    from kafkactl.cluster.admin.replica_assignment import BrokerInfo, assign_replicas

    rng = np.random.default_rng(seed)
    racks = _skewed_racks(brokers)
    new = tuple(b for b in range(1, brokers + 1) if b % 6 == 0)
    hdd_only = {b for b in range(1, brokers + 1) if b % 4 == 0 and b not in new}
    broker_rows = [{"broker_id": b, "rack": racks[b],
                    "network_in_capacity_bytes_per_s": 1_250_000_000 // (2 if b % 5 == 0 else 1),
                    "network_out_capacity_bytes_per_s": 1_250_000_000 // (2 if b % 5 == 0 else 1)}
                   for b in range(1, brokers + 1)]
    dirs = {b: ([("/data/hdd0", "hdd"), ("/data/hdd1", "hdd"), ("/data/hdd2", "hdd")] if b in hdd_only
                else [("/data/ssd0", "ssd"), ("/data/hdd0", "hdd"), ("/data/hdd1", "hdd")]) for b in racks}
    capacity = {"ssd": 3 * TB, "hdd": 4 * TB}
    holders = [BrokerInfo(b, racks[b]) for b in sorted(racks) if b not in new]
    rows, held = [], {(b, path): 0 for b in dirs for path, _ in dirs[b]}
    topic = 0
    while len(rows) < partitions:
        count = min(partitions - len(rows), int(rng.choice(TOPIC_SIZES)))
        hot = rng.random() < 0.05
        rate = rng.lognormal(np.log(2e5), 1.2) * (30 if hot else 1)
        retention = 3600 if hot else int(rng.choice((6 * 3600, 86400, 3 * 86400, 7 * 86400)))
        fanout = int(rng.integers(1, 5))
        name = f"{'hot' if hot else 'topic'}-{topic:05d}"
        for p, replicas in sorted(assign_replicas(holders, count, 3, rng=random.Random(seed * 7919 + topic)).items()):
            rate_in = rate * rng.lognormal(0.0, 0.5)
            paths = [_skewed_dir(dirs[b], b, held, hot) for b in replicas]
            rows.append({"topic": name, "partition": p, "replicas": replicas, "leader": replicas[0],
                         "log_dirs": paths, "size_bytes": rate_in * retention, "bytes_in_per_s": rate_in,
                         "bytes_out_per_s": rate_in * fanout})
        topic += 1
    room = sum(capacity[m] for b in dirs if b not in new for _, m in dirs[b])
    inbound = sum(r["network_in_capacity_bytes_per_s"] for r in broker_rows if r["broker_id"] not in new)
    size_scale = disk_fill * room / (3 * sum(r["size_bytes"] for r in rows))
    rate_scale = network_fill * inbound / (3 * sum(r["bytes_in_per_s"] for r in rows))
    used: dict[tuple[int, str], float] = {}
    for r in rows:
        for b, path in zip(r["replicas"], r["log_dirs"]):
            used[(b, path)] = used.get((b, path), 0) + r["size_bytes"] * size_scale
    media = {(b, path): m for b in dirs for path, m in dirs[b]}
    # Kafka is blind to sizes: a dir may come out over full; shrink all so the fullest is at 92 %
    size_scale *= min(1.0, 0.92 / max(v / capacity[media[k]] for k, v in used.items()))
    used = {}
    for r in rows:
        r["size_bytes"] = int(r["size_bytes"] * size_scale)
        r["bytes_in_per_s"] = round(r["bytes_in_per_s"] * rate_scale, 1)
        r["bytes_out_per_s"] = round(r["bytes_out_per_s"] * rate_scale, 1)
        for b, path in zip(r["replicas"], r["log_dirs"]):
            used[(b, path)] = used.get((b, path), 0) + r["size_bytes"]
    dir_rows = [{"broker_id": b, "path": path, "media": media, "capacity_bytes": capacity[media],
                 "used_bytes": used.get((b, path), 0)} for b in sorted(dirs) for path, media in dirs[b]]
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for table, table_rows in (("brokers", broker_rows), ("log_dirs", dir_rows), ("partitions", rows)):
        write_jsonl(directory / f"{table}.jsonl", table_rows)
    return new


def _skewed_racks(brokers: int) -> dict[int, str]:
    """Brokers 1..n in contiguous racks r1, r2, r3 in the proportion 5:4:3."""
    sizes = [brokers * share // sum(SKEWED_RACKS) for share in SKEWED_RACKS[:2]]
    sizes.append(brokers - sum(sizes))
    racks, broker = {}, 1
    for index, size in enumerate(sizes):
        for _ in range(size):
            racks[broker] = f"r{index + 1}"
            broker += 1
    return racks


def _skewed_dir(paths: list[tuple[str, str]], broker: int, held: dict, hot: bool) -> str:
    """Kafka's pick (fewest partitions); a hot partition's replica on the HDD dir with fewest."""
    eligible = [p for p, m in paths if m == "hdd"] if hot else [p for p, _ in paths]
    path = min(eligible, key=lambda p: (held[(broker, p)], p))
    held[(broker, path)] += 1
    return path


def fixture(name: str) -> Fixture:
    try:
        return FIXTURES[name]()
    except KeyError:
        raise KeyError(f"no fixture {name!r} (known: {', '.join(FIXTURES)})") from None


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def write_fixture(name: str, directory) -> Fixture:
    """Write fixture `name` as a snapshot directory (created if needed)."""
    found = fixture(name)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for table in ("brokers", "log_dirs", "partitions"):
        write_jsonl(directory / f"{table}.jsonl", getattr(found, table))
    return found


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2 or argv[0] not in FIXTURES:
        print("usage: python -m kafkactl.planner.fixtures NAME DIR\n" + "\n".join(
            f"  {name}: {make().description}" for name, make in FIXTURES.items()), file=sys.stderr)
        return 2
    found = write_fixture(argv[0], argv[1])
    print(f"{argv[1]}: {found.description}" + (f" (plan with {' '.join(found.args)})" if found.args else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
