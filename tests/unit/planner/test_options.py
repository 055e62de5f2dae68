"""`kafkactl plan` options: validated before Spark starts, one line naming the
option, exit 2; the CLI stays light to import."""

import subprocess
import sys

import pytest

from kafkactl.cli.main import main
from kafkactl.planner.fixtures import FIXTURES, fixture
from kafkactl.planner.job import PlanUsageError, build_options
from kafkactl.planner.options import GOALS, PlannerOptions


def test_defaults_and_lists():
    assert build_options() == PlannerOptions()
    options = build_options(network_threshold=0.7, network_out_threshold=0.6, exclude_brokers="3, 1",
                            add_brokers="7,8", goals="disk,hot_on_ssd", max_moves=0, throttle=1, seed=5)
    assert (options.network_in_threshold, options.network_out_threshold) == (0.7, 0.6)
    assert (options.exclude_brokers, options.add_brokers, options.goals) == ((1, 3), (7, 8), ("disk", "hot_on_ssd"))
    assert (options.max_moves, options.throttle_bytes_per_s, options.seed) == (0, 1, 5)
    assert build_options(goals=",".join(GOALS)).goals == GOALS


@pytest.mark.parametrize("args, message", [
    (["--capacity-threshold", "1.5"], "--capacity-threshold 1.5: must be a fraction of capacity, above 0 and at most 1"),
    (["--network-threshold", "0"], "--network-threshold 0.0: must be a fraction of capacity"),
    (["--network-in-threshold", "-1"], "--network-in-threshold -1.0: must be a fraction"),
    (["--exclude-brokers", "1,x"], "--exclude-brokers '1,x': expected broker ids separated by commas, e.g. 1,2"),
    (["--add-brokers", "7,7"], "--add-brokers '7,7': a broker is listed twice"),
    (["--add-brokers", "2", "--exclude-brokers", "2"], "--add-brokers: broker 2 is also in --exclude-brokers"),
    (["--goals", "disk,speed"], "--goals 'disk,speed': unknown goal 'speed' (goals: hot_on_ssd,disk,network,"),
    (["--goals", "disk,disk"], "--goals 'disk,disk': a goal is listed twice"),
    (["--max-moves", "-1"], "--max-moves -1: must be 0 or more"),
    (["--max-bytes-moved", "-5"], "--max-bytes-moved -5: must be 0 or more"),
    (["--throttle", "0"], "--throttle 0: must be at least 1 byte per second"),
    (["--seed", "x"], "Invalid value for '--seed'"),
    (["--master", " "], "--master: give a Spark master URL"),
])
def test_bad_options_exit_2_with_one_line_naming_the_option(capsys, tmp_path, args, message):
    code = main(["plan", "--snapshot", str(tmp_path), "--out", str(tmp_path / "out"), *args])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("kafkactl: error: " + message), err
    assert not (tmp_path / "out").exists()


def test_paths_are_checked_before_spark_starts(capsys, tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "old.json").write_text("{}")
    assert main(["plan", "--snapshot", str(tmp_path / "nope"), "--out", str(tmp_path / "new")]) == 2
    assert main(["plan", "--snapshot", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"kafkactl: error: --snapshot {tmp_path / 'nope'}: not a directory",
        f"kafkactl: error: --out {tmp_path / 'out'}: exists and is not an empty directory; give a new one"]
    with pytest.raises(PlanUsageError):
        build_options(capacity_threshold=0)


def test_the_cli_does_not_import_spark_pandas_or_matplotlib():
    probe = ("import sys; from kafkactl.cli.main import main; "
             "print([m for m in ('pyspark', 'pandas', 'matplotlib', 'kafkactl.planner.job') if m in sys.modules])")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=30)
    assert done.stdout.strip() == "[]"


def test_every_fixture_has_a_one_line_description():
    assert list(FIXTURES) == ["unbalanced_two_racks", "hot_partitions_on_hdd", "full_disk", "add_two_brokers",
                              "decommission_one", "rack_constraint_unsatisfiable", "unequal_racks", "skewed"]
    for name in FIXTURES:
        description = fixture(name).description
        assert description and "\n" not in description
