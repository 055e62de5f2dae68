"""Reading and validating snapshots with real Spark: every kind of bad input is
refused with the file, the 1-based line (or the Parquet row's key) and the field."""

import json

import pytest

from kafkactl.planner.fixtures import write_fixture, write_jsonl
from kafkactl.planner.job import PlanUsageError, build_options, run
from kafkactl.planner.snapshot import SnapshotError, read_snapshot, schema


def test_a_fixture_reads_into_the_documented_schemas(spark, tmp_path):
    fixture = write_fixture("decommission_one", tmp_path)
    snapshot = read_snapshot(spark, tmp_path)
    try:
        assert snapshot.partitions.schema.simpleString() == (
            "struct<topic:string,partition:int,replicas:array<int>,leader:int,log_dirs:array<string>,"
            "size_bytes:bigint,bytes_in_per_s:double,bytes_out_per_s:double>")
        assert snapshot.brokers.schema.simpleString() == (
            "struct<broker_id:int,rack:string,network_in_capacity_bytes_per_s:bigint,"
            "network_out_capacity_bytes_per_s:bigint>")
        assert snapshot.log_dirs.schema.simpleString() == (
            "struct<broker_id:int,path:string,media:string,capacity_bytes:bigint,used_bytes:bigint>")
        rows = sorted((r.asDict() for r in snapshot.partitions.collect()), key=lambda p: p["partition"])
        assert rows == fixture.partitions
    finally:
        snapshot.unpersist()


def bad_snapshot(directory):
    """One snapshot with every kind of error, each on a known line."""
    write_fixture("unbalanced_two_racks", directory)
    brokers = (directory / "brokers.jsonl").read_text().splitlines()
    brokers[1] = brokers[1].replace('"network_in_capacity_bytes_per_s": 125000000', '"network_in_capacity_bytes_per_s": -1')
    brokers.append(brokers[2])                                                       # line 7: duplicate broker 3
    brokers.append('{"broker_id": 9, "network_in_capacity_bytes_per_s": 1, "network_out_capacity_bytes_per_s": 1}')
    (directory / "brokers.jsonl").write_text("\n".join(brokers) + "\n")
    dirs = (directory / "log_dirs.jsonl").read_text().splitlines()
    dirs[0] = dirs[0].replace('"ssd"', '"nvme"')
    dirs[3] = dirs[3].replace('"used_bytes": 0', '"used_bytes": "12"')
    dirs.append(dirs[4])                                                             # line 13: duplicate dir
    dirs.append('{"broker_id": 77, "path": "/d", "media": "hdd", "capacity_bytes": 5, "used_bytes": 0}')
    (directory / "log_dirs.jsonl").write_text("\n".join(dirs) + "\n")
    good = json.loads((directory / "partitions.jsonl").read_text().splitlines()[0])
    lines = [
        json.dumps(good),                                                            # 1
        json.dumps({**good, "partition": 1, "size_bytes": -5}),                      # 2
        "",                                                                          # 3: blank, skipped
        json.dumps({**good, "partition": 2, "leader": 2}),                           # 4
        json.dumps({**good, "partition": 3, "replicas": [1, 1]}),                    # 5
        json.dumps({**good, "partition": 4, "log_dirs": ["/data/ssd0"]}),            # 6
        json.dumps({**good, "partition": 5, "replicas": [1, 8]}),                    # 7
        json.dumps({**good, "partition": 6, "log_dirs": ["/data/ssd0", "/data/x"]}),  # 8
        json.dumps(good),                                                            # 9: duplicate
        "not json",                                                                  # 10
        json.dumps({k: v for k, v in good.items() if k != "topic"} | {"partition": 7}),  # 11
        json.dumps({**good, "partition": 8, "bytes_in_per_s": "fast", "leader": 1.5}),  # 12
        json.dumps({**good, "partition": 9, "leader": -1, "size_bytes": None}),      # 13
    ]
    (directory / "partitions.jsonl").write_text("\n".join(lines) + "\n")


def test_every_kind_of_bad_input_is_named_by_file_line_and_field(spark, tmp_path):
    bad_snapshot(tmp_path)
    with pytest.raises(SnapshotError) as raised:
        read_snapshot(spark, tmp_path, max_errors=100)
    assert raised.value.errors == [
        "brokers.jsonl line 2: network_in_capacity_bytes_per_s is negative (-1)",
        "brokers.jsonl line 7: duplicate broker 3 (first at line 3)",
        "brokers.jsonl line 8: rack is missing",
        'log_dirs.jsonl line 1: media must be "ssd" or "hdd" (got "nvme")',
        'log_dirs.jsonl line 4: used_bytes must be an integer (got "12")',
        'log_dirs.jsonl line 13: duplicate log dir "/data/ssd0" of broker 3 (first at line 5)',
        "log_dirs.jsonl line 14: broker_id 77 is not a broker in the brokers table",
        "partitions.jsonl line 2: size_bytes is negative (-5)",
        "partitions.jsonl line 4: leader 2 is not one of the replicas [1,4] (use -1 for no leader)",
        "partitions.jsonl line 5: replicas lists a broker more than once ([1,1])",
        "partitions.jsonl line 6: log_dirs has 1 entries for 2 replicas",
        "partitions.jsonl line 7: replicas[1] = 8 is not a broker in the brokers table",
        'partitions.jsonl line 8: log_dirs[1] = "/data/x" is not a log dir of broker 4 in the log_dirs table',
        "partitions.jsonl line 9: duplicate partition orders-0 (first at line 1)",
        "partitions.jsonl line 10: not a JSON object",
        "partitions.jsonl line 11: topic is missing",
        "partitions.jsonl line 12: leader must be an integer (got 1.5)",
        'partitions.jsonl line 12: bytes_in_per_s must be a number (got "fast")',
        "partitions.jsonl line 13: size_bytes is null",
    ]


def test_the_job_reports_the_first_errors_and_writes_nothing(spark, tmp_path):
    bad_snapshot(tmp_path / "snap")
    with pytest.raises(PlanUsageError) as raised:
        run(spark, tmp_path / "snap", tmp_path / "out", build_options(), optimize=_never)
    assert raised.value.exit_code == 2
    assert raised.value.details[:2] == ["brokers.jsonl line 2: network_in_capacity_bytes_per_s is negative (-1)",
                                        "brokers.jsonl line 7: duplicate broker 3 (first at line 3)"]
    assert len(raised.value.details) == 6 and raised.value.details[-1] == "(more errors not shown)"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["snap"]


def _never(*args):
    raise AssertionError("the optimizer must not run on an invalid snapshot")


def test_parquet_tables_are_read_and_checked_by_key(spark, tmp_path):
    import pandas as pd

    fixture = write_fixture("full_disk", tmp_path / "json")
    parquet = tmp_path / "parquet"
    parquet.mkdir()
    # Spark writes the brokers (a directory of parts); pandas writes single files.
    spark.createDataFrame(fixture.brokers, schema("brokers")).write.parquet(str(parquet / "brokers.parquet"))
    pd.DataFrame(fixture.log_dirs).to_parquet(parquet / "log_dirs.parquet")
    partitions = [dict(p) for p in fixture.partitions]
    partitions[3]["size_bytes"] = -5
    pd.DataFrame(partitions).to_parquet(parquet / "partitions.parquet")
    with pytest.raises(SnapshotError) as raised:
        read_snapshot(spark, parquet)
    assert raised.value.errors == ['partitions.parquet row (topic "logs" partition 3): size_bytes is negative (-5)']
    pd.DataFrame(fixture.partitions).drop(columns=["leader"]).to_parquet(parquet / "partitions.parquet")
    with pytest.raises(SnapshotError) as raised:
        read_snapshot(spark, parquet)
    assert raised.value.errors == ["partitions.parquet: column leader is missing"]
    pd.DataFrame(fixture.partitions).to_parquet(parquet / "partitions.parquet")
    snapshot = read_snapshot(spark, parquet)
    try:
        assert snapshot.partitions.count() == 9 and snapshot.log_dirs.count() == 8
    finally:
        snapshot.unpersist()


def test_missing_and_doubled_tables_are_refused_before_reading(spark, tmp_path):
    write_jsonl(tmp_path / "brokers.jsonl", [])
    (tmp_path / "log_dirs.parquet").mkdir()
    write_jsonl(tmp_path / "log_dirs.jsonl", [])
    with pytest.raises(SnapshotError) as raised:
        read_snapshot(spark, tmp_path)
    assert raised.value.errors == [f"snapshot {tmp_path}: both log_dirs.jsonl and log_dirs.parquet; keep one",
                                   f"snapshot {tmp_path}: no partitions.jsonl or partitions.parquet"]
