"""The snapshot generator: deterministic, consistent, skewed, readable by Spark."""

import json

from kafkactl.planner.generate import generate


def lines(path, name):
    return [json.loads(line) for line in open(path / f"{name}.jsonl")]


def test_same_seed_same_files_other_seed_other_files(tmp_path):
    a = generate(tmp_path / "a", partitions=500, brokers=6, seed=5)
    b = generate(tmp_path / "b", partitions=500, brokers=6, seed=5)
    c = generate(tmp_path / "c", partitions=500, brokers=6, seed=6)
    for name in ("brokers", "log_dirs", "partitions"):
        assert (a.path / f"{name}.jsonl").read_bytes() == (b.path / f"{name}.jsonl").read_bytes()
    assert (a.path / "partitions.jsonl").read_bytes() != (c.path / "partitions.jsonl").read_bytes()


def test_snapshot_is_consistent_and_skewed(tmp_path):
    made = generate(tmp_path, partitions=2000, brokers=9, seed=7, added_brokers=2)
    brokers, dirs, partitions = (lines(made.path, n) for n in ("brokers", "log_dirs", "partitions"))
    assert len(partitions) == 2000 and len(brokers) == 11 and made.added_brokers == (10, 11)
    paths = {(d["broker_id"], d["path"]): d for d in dirs}
    racks = {b["broker_id"]: b["rack"] for b in brokers}
    used = {k: 0 for k in paths}
    for p in partitions:
        assert len(set(p["replicas"])) == 3 and p["leader"] == p["replicas"][0]
        assert len({racks[b] for b in p["replicas"]}) == 3          # Kafka's rack-aware assignment
        assert not set(p["replicas"]) & {10, 11}                      # added brokers are empty
        for key in zip(p["replicas"], p["log_dirs"]):
            used[key] += p["size_bytes"]
    assert all(used[k] == paths[k]["used_bytes"] for k in paths)
    assert {d["media"] for d in dirs} == {"ssd", "hdd"}
    sizes = sorted(p["size_bytes"] for p in partitions)
    heats = sorted((p["bytes_in_per_s"] + p["bytes_out_per_s"]) / p["size_bytes"] for p in partitions)
    assert sizes[-1] > 20 * sizes[len(sizes) // 2]                    # heavy tail
    assert heats[-20] > 5 * heats[len(heats) // 2]                    # a few very hot
    utilization = [paths[k]["used_bytes"] / paths[k]["capacity_bytes"] for k in paths
                   if k[0] <= 9]
    assert max(utilization) <= 0.92 and max(utilization) > 1.3 * sum(utilization) / len(utilization)


def test_parquet_holds_the_same_rows(spark, tmp_path):
    generate(tmp_path / "j", partitions=300, brokers=6, seed=8)
    generate(tmp_path / "p", partitions=300, brokers=6, seed=8, parquet=True)
    rows = spark.read.parquet(str(tmp_path / "p" / "partitions.parquet")).orderBy("topic", "partition")
    assert [r.asDict() for r in rows.collect()] == sorted(
        lines(tmp_path / "j", "partitions"), key=lambda p: (p["topic"], p["partition"]))
    assert dict(spark.read.parquet(str(tmp_path / "p" / "log_dirs.parquet")).dtypes)["capacity_bytes"] == "bigint"
