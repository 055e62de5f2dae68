"""planner/submit.py: its text output (with the duration wording it shares
with `kafkactl plan` and report.md), and the zip of kafkactl it ships to
executors."""

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from kafkactl.planner.submit import needs_shipping, summary, write_package_zip
from kafkactl.planner.usage import human_duration


def result(throttle_bytes_per_s, estimated_duration_s):
    return {"plan_partitions": 5, "options": {"throttle_bytes_per_s": throttle_bytes_per_s},
            "moves": {"after": {"bytes_moved": 3_000_000, "estimated_duration_s": estimated_duration_s}}}


def test_with_a_throttle_the_summary_gives_the_estimated_duration():
    assert summary(result(1_000_000, 9000.0), Path("/plans/x")) == (
        "wrote /plans/x: 5 partitions change (3000000 bytes moved); "
        "estimated duration at --throttle 1.0 MB/s: 2.5 h")


def test_without_a_throttle_it_gives_none():
    assert summary(result(None, None), Path("out")) == "wrote out: 5 partitions change (3000000 bytes moved)"


@pytest.mark.parametrize("seconds, text", [(0.0, "0 s"), (119.4, "119 s"), (120.0, "2 min"), (7199.0, "120 min"),
                                           (7200.0, "2.0 h"), (90_000.0, "25.0 h")])
def test_human_duration(seconds, text):
    assert human_duration(seconds) == text


@pytest.mark.parametrize("master, ships", [("local", False), ("local[2]", False), ("local[*]", False),
                                           (" local[4] ", False), ("spark://127.0.0.1:7077", True),
                                           ("local-cluster[2,1,1024]", True), ("yarn", True)])
def test_the_package_is_shipped_to_executors_other_than_the_drivers_own(master, ships):
    assert needs_shipping(master) is ships


def test_the_zip_holds_kafkactl_as_a_regular_package_and_imports_without_the_install(tmp_path):
    first = write_package_zip(tmp_path / "a.zip")
    names = zipfile.ZipFile(first).namelist()
    assert names[0] == "kafkactl/__init__.py" and names[1:] == sorted(names[1:])
    assert {"kafkactl/planner/baseline.py", "kafkactl/planner/submit.py", "kafkactl/cli/plan.py",
            "kafkactl/cluster/admin/replica_assignment.py"} <= set(names)
    assert all(n.endswith(".py") and "__pycache__" not in n for n in names)
    assert write_package_zip(tmp_path / "b.zip").read_bytes() == first.read_bytes()   # same files, same zip
    # Without site (-S), the editable install's import hook is not loaded: only the zip has kafkactl.
    code = (f"import sys; sys.path.insert(0, {str(first)!r}); import kafkactl.planner.baseline as b, "
            f"kafkactl.cluster.admin.replica_assignment as r; print(b.__file__); print(r.__file__)")
    done = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [f"{first}/kafkactl/planner/baseline.py",
                                   f"{first}/kafkactl/cluster/admin/replica_assignment.py"]
    missing = subprocess.run([sys.executable, "-S", "-c", "import kafkactl"], capture_output=True, timeout=60)
    assert missing.returncode != 0
