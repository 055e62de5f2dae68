"""The planner as a spark-submit application, and how kafkactl reaches the executors:

    spark-submit --master spark://HOST:7077 planner/submit.py --snapshot DIR --out DIR [options]

Same options as `kafkactl plan` (see docs/planner.md); the master comes from
spark-submit unless --master is given. Exit 0 with a plan, 1 when a hard
constraint cannot be met (nothing written), 2 on a bad option or snapshot.

kafkactl is installed where the driver runs (this script imports it); the
executors need only a Python with PySpark's pandas UDF packages (pandas,
pyarrow). On any master but `local`/`local[N]`, the driver ships kafkactl's
Python modules to them, as --py-files would: a zip of the installed package
(its .py files, plus a `kafkactl/__init__.py`, because zipimport finds no
namespace package), built in a temporary directory and added with
SparkContext.addPyFile, which puts it first on the executors' sys.path, so
they run the driver's kafkactl even where another is installed. The C
extension modules (the broker's record walkers) stay out: zipimport cannot
load them, and the executors run only the baseline's pandas UDFs
(kafkactl.planner.baseline, which imports the pure-Python
kafkactl.cluster.admin.replica_assignment).
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import sys
import tempfile
import zipfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

# The subpackages of the namespace package kafkactl (pyproject.toml's package-dir).
SUBPACKAGES = ("cli", "cluster", "planner")
# Executors of these masters are this process's own (Python workers it forks), with kafkactl.
_LOCAL_MASTER = re.compile(r"local(\[[^\]]*\])?")
# A fixed time for every zip entry: the same installed files give the same zip.
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="planner/submit.py", description="kafkactl's placement planner on Spark.")
    p.add_argument("--snapshot", required=True, type=Path, metavar="DIR")
    p.add_argument("--out", required=True, type=Path, metavar="DIR")
    p.add_argument("--master", default=None, metavar="URL", help="default: spark-submit's master")
    p.add_argument("--capacity-threshold", type=float, default=0.8, metavar="FRACTION")
    p.add_argument("--network-threshold", type=float, metavar="FRACTION")
    p.add_argument("--network-in-threshold", type=float, metavar="FRACTION")
    p.add_argument("--network-out-threshold", type=float, metavar="FRACTION")
    p.add_argument("--exclude-brokers", metavar="ID,ID,...")
    p.add_argument("--add-brokers", metavar="ID,ID,...")
    p.add_argument("--goals", metavar="GOAL,GOAL,...")
    p.add_argument("--max-bytes-moved", type=int, metavar="BYTES")
    p.add_argument("--max-moves", type=int, metavar="N")
    p.add_argument("--throttle", type=int, metavar="BYTES_PER_S")
    p.add_argument("--seed", type=int, default=0, metavar="N")
    p.add_argument("-o", "--output", choices=("text", "json"), default="text")
    return p


def main(argv: list[str] | None = None) -> int:
    from kafkactl.planner import job

    args = parser().parse_args(argv)  # argparse exits 2 on a malformed option
    try:
        options = job.build_options(args.capacity_threshold, args.network_threshold, args.network_in_threshold,
                                    args.network_out_threshold, args.exclude_brokers, args.add_brokers, args.goals,
                                    args.max_bytes_moved, args.max_moves, args.throttle, args.seed)
        result = job.plan(args.snapshot, args.out, args.master, options,
                          note=lambda line: print(f"planner: note: {line}", file=sys.stderr))
    except job.PlanError as error:
        print("\n".join([f"planner: error: {error.message}", *error.details]), file=sys.stderr)
        return error.exit_code
    if args.output == "json":
        print(json.dumps(result, indent=2))
    else:
        print(summary(result, args.out))
    return 0


def summary(result: dict, out: Path) -> str:
    """The text output: what changes and, with --throttle, how long it is estimated to take."""
    from kafkactl.planner.usage import human_duration, human_rate

    moved = result["moves"]["after"]
    line = f"wrote {out}: {result['plan_partitions']} partitions change ({moved['bytes_moved']} bytes moved)"
    if moved["estimated_duration_s"] is None:
        return line
    throttle = human_rate(result["options"]["throttle_bytes_per_s"])
    return f"{line}; estimated duration at --throttle {throttle}: {human_duration(moved['estimated_duration_s'])}"


# --- kafkactl on the executors

def needs_shipping(master: str) -> bool:
    """Whether the executors of this master are other processes than the driver's own Python workers."""
    return _LOCAL_MASTER.fullmatch(master.strip()) is None


def package_sources() -> list[tuple[Path, str]]:
    """(file, name in the zip) of every .py file of the installed kafkactl, in name order."""
    sources = []
    for sub in SUBPACKAGES:
        for root in importlib.import_module(f"kafkactl.{sub}").__path__:
            base = Path(root)
            sources += [(path, f"kafkactl/{sub}/{path.relative_to(base).as_posix()}") for path in base.rglob("*.py")
                        if "__pycache__" not in path.relative_to(base).parts]
    return sorted(sources, key=lambda source: source[1])


def write_package_zip(path: Path) -> Path:
    """The zip the executors import kafkactl from (see the module's docstring)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        init = b'"""kafkactl, shipped to Spark executors by kafkactl.planner.submit."""\n'
        for name, data in [("kafkactl/__init__.py", init), *((n, s.read_bytes()) for s, n in package_sources())]:
            entry = zipfile.ZipInfo(name, _ZIP_TIME)
            entry.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(entry, data)
    return path


@contextmanager
def package_on_executors(spark) -> Iterator[Path | None]:
    """kafkactl's zip added to the session for the executors (None on a local
    master); the zip stays while the block runs, as executors fetch it when
    their first task needs it."""
    if not needs_shipping(spark.sparkContext.master):
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="kafkactl-py-files-") as directory:
        path = write_package_zip(Path(directory) / "kafkactl.zip")
        spark.sparkContext.addPyFile(str(path))
        yield path


if __name__ == "__main__":
    sys.exit(main())
