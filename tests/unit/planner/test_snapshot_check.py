"""The snapshot's checks in plain Python, before Spark starts: every kind of bad
input is refused with the file, the 1-based line (or the Parquet row's key)
and the field, in the order and words the planner has always used; the
options are checked against the snapshot; and `kafkactl plan`'s job never
starts Spark for a refused snapshot."""

import json

import pytest

from kafkactl.planner import job
from kafkactl.planner.fixtures import fixture, write_fixture, write_jsonl
from kafkactl.planner.snapshot_check import FIELDS, SnapshotError, check_snapshot, java_double, quoted, spark_json


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


EVERY_KIND = [
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


def test_every_kind_of_bad_input_is_named_by_file_line_and_field(tmp_path):
    bad_snapshot(tmp_path)
    with pytest.raises(SnapshotError) as raised:
        check_snapshot(tmp_path, max_errors=100)
    assert raised.value.errors == EVERY_KIND and not raised.value.more


def test_the_job_reports_the_first_errors_writes_nothing_and_never_starts_spark(tmp_path, monkeypatch):
    bad_snapshot(tmp_path / "snap")
    monkeypatch.setattr(job, "start_session", _never)
    with pytest.raises(job.PlanUsageError) as raised:
        job.plan(tmp_path / "snap", tmp_path / "out", "local[2]", job.build_options())
    assert raised.value.exit_code == 2
    assert raised.value.message == f"--snapshot {tmp_path / 'snap'}: invalid snapshot"
    assert raised.value.details == [*EVERY_KIND[:5], "(more errors not shown)"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["snap"]


def _never(*args, **kwargs):
    raise AssertionError("Spark must not start for a refused snapshot")


@pytest.mark.parametrize("line, message", [
    ('{"broker_id": 5.0}', "broker_id must be an integer (got 5)"),          # a fraction is not an integer
    ('{"broker_id": 1e3}', "broker_id must be an integer (got 1000.0)"),
    ('{"broker_id": 2147483648}', "broker_id must be an integer (got 2147483648)"),
    ('{"broker_id": true}', "broker_id must be an integer (got true)"),
    ('{"broker_id": {"b": [1, "x"], "a": null}}', 'broker_id must be an integer (got {"a":null,"b":[1,"x"]})'),
    ('{"broker_id": 1, "broker_id": 2}', "not a JSON object"),                # duplicate keys
    ('{"broker_id": NaN}', "not a JSON object"),
    ('{"broker_id": 1} trailing', "not a JSON object"),
    ('[1]', "not a JSON object"),
])
def test_json_values_are_typed_as_written(tmp_path, line, message):
    write_fixture("unbalanced_two_racks", tmp_path)
    rows = (tmp_path / "brokers.jsonl").read_text().splitlines()
    (tmp_path / "brokers.jsonl").write_text("\n".join([line, *rows]) + "\n")
    with pytest.raises(SnapshotError) as raised:
        check_snapshot(tmp_path)
    assert raised.value.errors[0] == f"brokers.jsonl line 1: {message}"


def test_lines_end_at_cr_lf_or_a_lone_cr_and_blank_lines_count(tmp_path):
    write_fixture("unbalanced_two_racks", tmp_path)
    rows = (tmp_path / "brokers.jsonl").read_text().splitlines()
    (tmp_path / "brokers.jsonl").write_text(f"{rows[0]}\r\n  \r{rows[1]}\r\nnope\n" + "\r".join(rows[2:]))
    with pytest.raises(SnapshotError) as raised:
        check_snapshot(tmp_path)
    assert raised.value.errors == ["brokers.jsonl line 4: not a JSON object"]


def test_a_row_of_every_wrong_type_gets_one_error_per_field(tmp_path):
    write_fixture("unbalanced_two_racks", tmp_path)
    write_jsonl(tmp_path / "log_dirs.jsonl", [{"broker_id": -4, "path": "data", "media": "SSD", "capacity_bytes": 0,
                                              "used_bytes": -1}])
    with pytest.raises(SnapshotError) as raised:
        check_snapshot(tmp_path, max_errors=100)
    assert raised.value.errors[:6] == [
        "log_dirs.jsonl line 1: broker_id is negative (-4)",
        'log_dirs.jsonl line 1: path must be an absolute path (got "data")',
        'log_dirs.jsonl line 1: media must be "ssd" or "hdd" (got "SSD")',
        "log_dirs.jsonl line 1: capacity_bytes is zero; a capacity must be positive",
        "log_dirs.jsonl line 1: used_bytes is negative (-1)",
        "log_dirs.jsonl line 1: broker_id -4 is not a broker in the brokers table"]


def test_empty_tables_fill_the_room_left_and_are_never_more(tmp_path):
    write_fixture("unbalanced_two_racks", tmp_path)
    write_jsonl(tmp_path / "log_dirs.jsonl", [])
    write_jsonl(tmp_path / "partitions.jsonl", [])
    with pytest.raises(SnapshotError) as raised:
        check_snapshot(tmp_path, max_errors=2)
    assert raised.value.errors == ["log_dirs.jsonl: no rows; a snapshot needs at least one",
                                   "partitions.jsonl: no rows; a snapshot needs at least one"]
    assert not raised.value.more


def test_parquet_tables_are_checked_by_key(tmp_path):
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    fixture_ = write_fixture("full_disk", tmp_path / "json")
    parquet = tmp_path / "parquet"
    (parquet / "brokers.parquet").mkdir(parents=True)    # a directory of parts, as Spark writes it
    brokers = pa.Table.from_pylist(fixture_.brokers).cast(pa.schema([
        ("broker_id", pa.int32()), ("rack", pa.string()), ("network_in_capacity_bytes_per_s", pa.int64()),
        ("network_out_capacity_bytes_per_s", pa.int64())]))
    pq.write_table(brokers.slice(0, 1), parquet / "brokers.parquet" / "part-00000.parquet")
    pq.write_table(brokers.slice(1), parquet / "brokers.parquet" / "part-00001.parquet")
    (parquet / "brokers.parquet" / "_SUCCESS").write_text("")
    pd.DataFrame(fixture_.log_dirs).to_parquet(parquet / "log_dirs.parquet")
    partitions = [dict(p) for p in fixture_.partitions]
    partitions[3]["size_bytes"] = -5
    partitions[10 % len(partitions)]["partition"] = 2**31
    pd.DataFrame(partitions).to_parquet(parquet / "partitions.parquet")
    with pytest.raises(SnapshotError) as raised:
        check_snapshot(parquet)
    assert raised.value.errors == [
        "partitions.parquet row (topic \"logs\" partition 3): size_bytes is negative (-5)",
        "partitions.parquet row (topic \"logs\" partition ?): partition must be an integer (got 2147483648)"]
    pd.DataFrame(fixture_.partitions).drop(columns=["leader"]).astype({"size_bytes": "str"}).to_parquet(
        parquet / "partitions.parquet")
    with pytest.raises(SnapshotError) as raised:
        check_snapshot(parquet)
    assert raised.value.errors == ["partitions.parquet: column leader is missing",
                                   "partitions.parquet: column size_bytes must be an integer, is string"]
    pd.DataFrame(fixture_.partitions).to_parquet(parquet / "partitions.parquet")
    checked = check_snapshot(parquet)
    assert checked.rows == {"brokers": 4, "log_dirs": 8, "partitions": 9}


def test_missing_and_doubled_tables_are_refused_before_reading(tmp_path):
    write_jsonl(tmp_path / "brokers.jsonl", [])
    (tmp_path / "log_dirs.parquet").mkdir()
    write_jsonl(tmp_path / "log_dirs.jsonl", [])
    with pytest.raises(SnapshotError) as raised:
        check_snapshot(tmp_path)
    assert raised.value.errors == [f"snapshot {tmp_path}: both log_dirs.jsonl and log_dirs.parquet; keep one",
                                   f"snapshot {tmp_path}: no partitions.jsonl or partitions.parquet"]


def test_a_valid_snapshot_is_summed_up_for_the_options_checks(tmp_path):
    write_fixture("add_two_brokers", tmp_path)
    checked = check_snapshot(tmp_path)
    expected = fixture("add_two_brokers")
    assert checked.broker_ids == {b["broker_id"] for b in expected.brokers}
    assert sum(checked.replicas_per_broker.values()) == sum(len(p["replicas"]) for p in expected.partitions)
    assert checked.reassigning_partitions == 0
    # the small tables' rows are kept, typed, in the schema's order (the job reads them from here)
    assert checked.small_tables == {
        table: tuple(tuple(row[name] for name, _, _ in FIELDS[table]) for row in getattr(expected, table))
        for table in ("brokers", "log_dirs")}


def test_options_naming_brokers_the_snapshot_lacks_are_refused_before_spark(tmp_path, monkeypatch):
    write_fixture("add_two_brokers", tmp_path / "snap")
    monkeypatch.setattr(job, "start_session", _never)
    for options, message in ((job.build_options(exclude_brokers="9"),
                              "--exclude-brokers: broker 9 is not in the snapshot's brokers"),
                             (job.build_options(add_brokers="4"),
                              "--add-brokers: broker 4 already holds 4 replicas; added brokers are new and empty")):
        with pytest.raises(job.PlanUsageError) as raised:
            job.plan(tmp_path / "snap", tmp_path / "out", "local[2]", options)
        assert raised.value.message == message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["snap"]


def test_snapshot_json_says_when_it_was_taken_mid_reassignment(tmp_path):
    write_fixture("unbalanced_two_racks", tmp_path)
    (tmp_path / "snapshot.json").write_text('{"reassigning_partitions": 2, "written_by": "a later kafkactl"}\n')
    checked = check_snapshot(tmp_path)
    assert checked.reassigning_partitions == 2
    assert job.mid_reassignment_note(tmp_path, checked) == (
        f"snapshot {tmp_path} was taken during a reassignment: 2 partitions recorded at their target replicas")
    (tmp_path / "snapshot.json").write_text('{"reassigning_partitions": "2"}')
    with pytest.raises(SnapshotError) as raised:
        check_snapshot(tmp_path)
    assert raised.value.errors == ['snapshot.json: reassigning_partitions must be an integer >= 0 (got "2")']


@pytest.mark.parametrize("value, text", [
    (-5.0, "-5.0"), (-1e7, "-1.0E7"), (-1e-4, "-1.0E-4"), (-0.001, "-0.001"), (-123456.789, "-123456.789"),
    (1.2345678901234567e19, "1.2345678901234567E19"), (1.5e300, "1.5E300"), (0.0, "0.0")])
def test_doubles_are_written_as_java_writes_them(value, text):
    assert java_double(value) == text


def test_strings_are_quoted_as_sparks_json_writer_does():
    assert quoted('a"\\/\x1f\té') == '"a\\"\\\\/\\u001F\\té"'
    assert spark_json([1, "x", None, True]) == '[1,"x",null,true]'
