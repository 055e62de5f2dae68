"""What every run of the replication benchmarks does around its measurements: the open-file
limit raised, a log with the time since the start, a temporary directory for the clusters
(always removed), and the results saved and the doc rewritten after each benchmark, so a
later failure loses nothing."""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

from replication_support import REPO
from replication_support.doc import DOC, write_doc
from replication_support.host import raise_nofile
from replication_support.results import RESULTS, load_store, save_store


class BenchRun:
    """`with BenchRun(work_dir, write) as run:` then each benchmark's measure(run, ...)."""

    def __init__(self, work_dir: Path | None, write: bool) -> None:
        self.work_dir = work_dir
        self.write = write          # False: --no-doc, results and doc untouched

    def __enter__(self) -> BenchRun:
        self.nofile = raise_nofile()
        print(self.nofile, flush=True)
        self.t0 = time.monotonic()
        self.root = Path(tempfile.mkdtemp(prefix="kafkactl-bench-replication-", dir=self.work_dir))
        self.store = load_store()
        return self

    def log(self, text: str) -> None:
        print(f"[{time.monotonic() - self.t0:6.1f} s] {text}", flush=True)

    def keep(self) -> None:
        """After each benchmark: its results saved, the doc rendered from all results kept."""
        if self.write:
            save_store(self.store)
            write_doc(load_store())

    def __exit__(self, error_type, error, traceback) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
        if error_type is not None:
            return
        print(f"whole run: {time.monotonic() - self.t0:.0f} s")
        if self.write:
            print(f"written to {RESULTS.relative_to(REPO)} and {DOC.relative_to(REPO)}")


def doc_option_help() -> str:
    return f"do not update {RESULTS.relative_to(REPO)} and {DOC.relative_to(REPO)}"
