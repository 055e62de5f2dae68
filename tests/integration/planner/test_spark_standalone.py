"""The planner on a real Spark standalone cluster, as users schedule it: a
master and two workers (1 core, 1 GB each) as separate processes
(tests/support/spark_standalone.py), then `kafkactl plan --master spark://...`
and the documented `spark-submit ... planner/submit.py` against it.

Checked for each: every task ran on the workers' executors, both workers ran
some, none on the driver (the application's event log, and the executor
dirs in each worker's work dir); the plan is the local[2] plan of the same
snapshot: plan.json and rollback.json byte for byte, report.json's figures
equal to 1e-9 relative (Spark sums floating-point figures in an order that
follows the partitioning) once compute_time_s, which is timing, is left out;
and the console summary gives the estimated duration at --throttle.

The executors' Python has PySpark, pandas and pyarrow but no kafkactl (an
interpreter of its own whose site-packages lists this one's, so the editable
install's import hook is not loaded): the plan can only be made if the
driver ships kafkactl to them (planner/submit.py's package_on_executors).
"""

import json
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from support.spark_standalone import (SparkStandalone, base_env, executors_by_worker, read_event_log,
                                      run_application, spark_conf_dir)

from kafkactl.planner import job
from kafkactl.planner.fixtures import write_fixture
from kafkactl.planner.usage import human_duration

# Minutes: a cluster, the local[2] plan and two Spark applications, each
# paying the planner's per-job cost over the cluster's RPC.
pytestmark = pytest.mark.slow

KAFKACTL = Path(sys.executable).parent / "kafkactl"
SPARK_SUBMIT = Path(sys.executable).parent / "spark-submit"
SUBMIT_PY = Path(__file__).resolve().parents[3] / "planner" / "submit.py"
# A short plan that moves bytes (so it has a duration at --throttle): what is
# shown is where tasks ran and that the plan is local[2]'s, which a longer
# plan would not show better.
FIXTURE = "add_two_brokers"
THROTTLE_BYTES_PER_S = 50_000_000
# A bound against a hung driver, not a speed check: one application took
# 6-10 min on a 2-core machine at a load average of 15-24 (other Spark suites).
APPLICATION_TIMEOUT_S = 1500


def python_without_kafkactl(directory: Path) -> Path:
    """A venv whose .pth lists this venv's site-packages: PySpark, pandas and
    pyarrow import, kafkactl does not (a path listed in a .pth file is not a
    site dir, so the .pth files there, the editable install's among them,
    are not run)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(directory)], check=True, timeout=120)
    python = directory / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    Path(purelib, "planner-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def imports(python: Path, module: str) -> bool:
    return subprocess.run([str(python), "-c", f"import {module}"], capture_output=True, timeout=120).returncode == 0


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory):
    directory = tmp_path_factory.mktemp("snapshot")
    write_fixture(FIXTURE, directory)
    return directory


@pytest.fixture(scope="module")
def local_plan(spark, snapshot, tmp_path_factory):
    """The same snapshot planned on the tests' local[2] session."""
    out = tmp_path_factory.mktemp("local") / "plan"
    job.run(spark, snapshot, out, job.build_options(throttle=THROTTLE_BYTES_PER_S))
    return out


@pytest.fixture(scope="module")
def executor_python(tmp_path_factory):
    python = python_without_kafkactl(tmp_path_factory.mktemp("executor-python") / "venv")
    assert imports(python, "pyspark, pandas, pyarrow") and not imports(python, "kafkactl")
    return python


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with SparkStandalone(tmp_path_factory.mktemp("spark")) as started:
        yield started


def application_env(cluster, executor_python: Path, directory: Path) -> tuple[dict, Path]:
    """The driver's environment for one application, and its event log dir."""
    events = directory / "events"
    events.mkdir(parents=True)
    conf = spark_conf_dir(directory / "conf", {
        "spark.eventLog.enabled": "true", "spark.eventLog.dir": events.as_uri(),
        "spark.eventLog.compress": "false",
        "spark.executor.memory": "512m",
        # Start the first job only once both executors are up (bounded by
        # spark.scheduler.maxRegisteredResourcesWaitingTime, 30 s).
        "spark.scheduler.minRegisteredResourcesRatio": "1.0",
        "spark.sql.shuffle.partitions": "4",   # as docs/planner.md advises for small snapshots
        "spark.ui.enabled": "false"})
    env = base_env(cluster.directory) | {"SPARK_CONF_DIR": str(conf), "PYSPARK_PYTHON": str(executor_python),
                                         "PYSPARK_DRIVER_PYTHON": sys.executable}
    return env, events


def check_ran_on_the_workers(cluster, events: Path) -> None:
    (log_file,) = list(events.iterdir())
    log = read_event_log(log_file)
    assert log.master == cluster.master_url
    placed = executors_by_worker(cluster.worker_dirs, log.app_id)
    assert "driver" not in log.tasks and log.failed_tasks == 0, (log.tasks, log.failed_tasks)
    assert set(log.tasks) <= set(placed), (log.tasks, placed)     # every executor with tasks is a worker's
    assert {placed[e] for e in log.tasks} == {0, 1}, (log.tasks, placed)


def check_same_plan(out: Path, local: Path) -> dict:
    for name in ("plan.json", "rollback.json"):
        assert (out / name).read_bytes() == (local / name).read_bytes(), name
    report, expected = (json.loads((d / "report.json").read_text()) for d in (out, local))
    for figures in (report, expected):
        figures.pop("compute_time_s")
    assert differences(report, expected) == []
    return report


def differences(actual, expected, path: str = "report") -> list[str]:
    """Where two JSON values differ; floats count as equal to 1e-9 relative."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        if actual.keys() != expected.keys():
            return [f"{path}: keys {sorted(actual)} != {sorted(expected)}"]
        return [d for k in expected for d in differences(actual[k], expected[k], f"{path}.{k}")]
    if isinstance(expected, list) and isinstance(actual, list) and len(actual) == len(expected):
        return [d for i, (a, e) in enumerate(zip(actual, expected)) for d in differences(a, e, f"{path}[{i}]")]
    if isinstance(expected, float) and isinstance(actual, (int, float)):
        return [] if actual == pytest.approx(expected, rel=1e-9, abs=1e-12) else [f"{path}: {actual} != {expected}"]
    return [] if actual == expected else [f"{path}: {actual!r} != {expected!r}"]


def duration_text(report: dict) -> str:
    seconds = report["moves"]["after"]["estimated_duration_s"]
    return f"estimated duration at --throttle 50.0 MB/s: {human_duration(seconds)}"


def test_kafkactl_plan_on_the_cluster_runs_on_the_workers(cluster, executor_python, snapshot, local_plan,
                                                          tmp_path):
    env, events = application_env(cluster, executor_python, tmp_path)
    out = tmp_path / "plan"
    done = run_application([str(KAFKACTL), "plan", "--snapshot", str(snapshot), "--out", str(out), "--master",
                            cluster.master_url, "--throttle", str(THROTTLE_BYTES_PER_S)], env, tmp_path / "driver",
                           APPLICATION_TIMEOUT_S)
    assert done.returncode == 0, done.stderr_tail
    check_ran_on_the_workers(cluster, events)
    report = check_same_plan(out, local_plan)
    assert report["moves"]["after"]["estimated_duration_s"] > 0
    assert duration_text(report) in done.stdout.splitlines()


def test_spark_submit_on_the_cluster_runs_on_the_workers(cluster, executor_python, snapshot, local_plan, tmp_path):
    env, events = application_env(cluster, executor_python, tmp_path)
    out = tmp_path / "plan"
    done = run_application([str(SPARK_SUBMIT), "--master", cluster.master_url, str(SUBMIT_PY),
                            "--snapshot", str(snapshot), "--out", str(out), "--throttle", str(THROTTLE_BYTES_PER_S)],
                           env, tmp_path / "driver", APPLICATION_TIMEOUT_S)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr_tail
    check_ran_on_the_workers(cluster, events)
    report = check_same_plan(out, local_plan)
    # spark-submit's Python runner passes the script's output through, among Spark's own lines.
    assert f"wrote {out}: {report['plan_partitions']} partitions change" in done.stdout
    assert duration_text(report) in done.stdout
    assert f"| {human_duration(report['moves']['after']['estimated_duration_s'])} |" in (out / "report.md").read_text()
