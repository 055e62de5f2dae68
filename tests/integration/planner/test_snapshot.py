"""Reading checked snapshots with real Spark: JSON Lines and Parquet land in the
documented schemas with the values written. (Refusals are checked before Spark
starts: tests/unit/planner/test_snapshot_check.py.)"""

import pytest

from kafkactl.planner.fixtures import write_fixture
from kafkactl.planner.snapshot import SnapshotError, read_snapshot, schema

SCHEMAS = {
    "partitions": "struct<topic:string,partition:int,replicas:array<int>,leader:int,log_dirs:array<string>,"
                  "size_bytes:bigint,bytes_in_per_s:double,bytes_out_per_s:double>",
    "brokers": "struct<broker_id:int,rack:string,network_in_capacity_bytes_per_s:bigint,"
               "network_out_capacity_bytes_per_s:bigint>",
    "log_dirs": "struct<broker_id:int,path:string,media:string,capacity_bytes:bigint,used_bytes:bigint>",
}


def rows(frame, key):
    return sorted((r.asDict() for r in frame.collect()), key=key)


def test_a_fixture_reads_into_the_documented_schemas(spark, tmp_path):
    fixture = write_fixture("decommission_one", tmp_path)
    # Blank lines, a CRLF and a field the planner does not know are skipped, as the check skips them.
    lines = (tmp_path / "partitions.jsonl").read_text().splitlines()
    lines[0] = lines[0][:-1] + ', "comment": "ignored"}'
    (tmp_path / "partitions.jsonl").write_text("\n\n".join(lines[:3]) + "\r\n" + "\n".join(lines[3:]) + "\n")
    snapshot = read_snapshot(spark, tmp_path)
    try:
        assert {t: getattr(snapshot, t).schema.simpleString() for t in SCHEMAS} == SCHEMAS
        assert rows(snapshot.partitions, lambda p: p["partition"]) == fixture.partitions
        assert rows(snapshot.brokers, lambda b: b["broker_id"]) == fixture.brokers
        assert snapshot.checked.rows["partitions"] == len(fixture.partitions)
    finally:
        snapshot.unpersist()


def test_parquet_tables_of_narrower_types_are_read_as_the_schema_has_them(spark, tmp_path):
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    fixture = write_fixture("full_disk", tmp_path / "json")
    parquet = tmp_path / "parquet"
    parquet.mkdir()
    # Spark writes the brokers (a directory of parts); pandas and pyarrow write single files.
    spark.createDataFrame(fixture.brokers, schema("brokers")).write.parquet(str(parquet / "brokers.parquet"))
    dirs = pa.Table.from_pylist(fixture.log_dirs).cast(pa.schema([
        ("broker_id", pa.uint32()), ("path", pa.string()), ("media", pa.string()), ("capacity_bytes", pa.int64()),
        ("used_bytes", pa.int64())]))
    pq.write_table(dirs, parquet / "log_dirs.parquet")
    frame = pd.DataFrame(fixture.partitions).astype({"bytes_in_per_s": "float32"})
    frame.to_parquet(parquet / "partitions.parquet")
    snapshot = read_snapshot(spark, parquet)
    try:
        assert {t: getattr(snapshot, t).schema.simpleString() for t in SCHEMAS} == SCHEMAS
        assert rows(snapshot.partitions, lambda p: (p["topic"], p["partition"])) == sorted(
            fixture.partitions, key=lambda p: (p["topic"], p["partition"]))
        assert rows(snapshot.log_dirs, lambda d: (d["broker_id"], d["path"])) == sorted(
            fixture.log_dirs, key=lambda d: (d["broker_id"], d["path"]))
    finally:
        snapshot.unpersist()


@pytest.mark.parametrize("form", ["jsonl", "parquet"])
def test_the_small_tables_kept_by_the_check_are_what_spark_reads_from_the_files(spark, tmp_path, form):
    """The brokers and log dirs reach the job from the check's rows, not from
    the files: as Rows they equal Spark's own reading of the files."""
    from kafkactl.planner.snapshot import _read_table
    from kafkactl.planner.usage import snapshot_tables

    write_fixture("unequal_racks", tmp_path)
    if form == "parquet":
        for table in ("brokers", "log_dirs"):
            _read_table(spark, table, tmp_path / f"{table}.jsonl").toPandas().to_parquet(tmp_path / f"{table}.parquet")
            (tmp_path / f"{table}.jsonl").unlink()
    snapshot = read_snapshot(spark, tmp_path)
    try:
        kept = snapshot_tables(snapshot)
        for table, frame, order in (("brokers", snapshot.brokers, ["broker_id"]),
                                    ("log_dirs", snapshot.log_dirs, ["broker_id", "path"])):
            from_file = _read_table(spark, table, snapshot.checked.files[table]).orderBy(*order).collect()
            assert [r.asDict() for r in kept[table == "log_dirs"]] == [r.asDict() for r in from_file]
            assert frame.orderBy(*order).collect() == from_file
    finally:
        snapshot.unpersist()


def test_a_parquet_rack_column_of_nulls_only_reads_as_strings(spark, tmp_path):
    import pandas as pd

    fixture = write_fixture("full_disk", tmp_path)
    brokers = [{**b, "rack": None} for b in fixture.brokers]
    (tmp_path / "brokers.jsonl").unlink()
    pd.DataFrame(brokers).to_parquet(tmp_path / "brokers.parquet")    # an all-None column: Arrow's null type
    snapshot = read_snapshot(spark, tmp_path)
    try:
        assert snapshot.brokers.schema.simpleString() == SCHEMAS["brokers"]
        assert rows(snapshot.brokers, lambda b: b["broker_id"]) == brokers
    finally:
        snapshot.unpersist()


def test_a_bad_snapshot_never_reaches_spark(spark, tmp_path):
    write_fixture("full_disk", tmp_path)
    (tmp_path / "partitions.jsonl").write_text("not json\n")
    with pytest.raises(SnapshotError) as raised:
        read_snapshot(spark, tmp_path)
    assert raised.value.errors == ["partitions.jsonl line 1: not a JSON object"]
