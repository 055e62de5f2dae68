"""planner/submit.py under the real spark-submit that PySpark ships, as an
operator runs it on a Spark cluster (here with spark-submit's master
local[2]): the same outputs as `kafkactl plan`, and exit 2 on a malformed
option. (Exit 1, a hard constraint that cannot be met, comes from the same
job.PlanError as in test_job.py; one more spark-submit would add about half
a minute to the suite for it.)"""

import json
import os
import subprocess
import sys
from pathlib import Path

from kafkactl.cluster.admin.plan_file import parse_reassignment_plan
from kafkactl.planner.fixtures import write_fixture

SPARK_SUBMIT = Path(sys.executable).parent / "spark-submit"
SUBMIT_PY = Path(__file__).resolve().parents[3] / "planner" / "submit.py"
OUTPUTS = ["plan.json", "report.json", "report.md", "rollback.json", "utilization.png"]


def spark_submit(*args, timeout_s=300):
    # The driver and the workers run this interpreter, which has kafkactl
    # (on a cluster: the wheel installed on every node, or --py-files).
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    command = [str(SPARK_SUBMIT), "--master", "local[2]", "--conf", "spark.sql.shuffle.partitions=4",
               "--conf", "spark.ui.enabled=false", str(SUBMIT_PY), *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout_s)


def test_spark_submit_writes_the_plan_and_refuses_a_malformed_option(tmp_path):
    write_fixture("hot_partitions_on_hdd", tmp_path / "hot")
    done = spark_submit("--snapshot", str(tmp_path / "hot"), "--out", str(tmp_path / "plan"), "-o", "json")
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert sorted(p.name for p in (tmp_path / "plan").iterdir()) == OUTPUTS
    entries = parse_reassignment_plan((tmp_path / "plan" / "plan.json").read_text())
    assert len(entries) == result["plan_partitions"] > 0
    assert result["violations"]["after"]["total"] == 0

    # spark-submit's Python runner sends the script's stderr to its stdout.
    malformed = spark_submit("--snapshot", str(tmp_path / "hot"), "--out", str(tmp_path / "bad"),
                             "--max-moves", "many")
    assert malformed.returncode == 2 and "--max-moves: invalid int value" in malformed.stdout + malformed.stderr
    assert not (tmp_path / "bad").exists()
