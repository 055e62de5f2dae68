"""The long admin-znode soak (issue 12.2): seeded random admin writes, kills
and restarts on a real 4-broker cluster under an acks=-1 producer.

    .venv/bin/python scripts/soak_admin.py                        # 1,000 steps, seed 1
    .venv/bin/python scripts/soak_admin.py --seed 7 --steps 200
    .venv/bin/python scripts/soak_admin.py --seed 7 --steps 200 --keep   # keep the cluster dir

tests/support/admin_soak.py says what each step does and what is checked.
Exits 1 on the first failed step, printing it, the replay line and where the
cluster's logs are (kept on failure).
"""

from __future__ import annotations

import argparse
import logging
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))   # the shared test helpers: support.*

from support.admin_soak import AdminSoak  # noqa: E402
from support.admin_soak_view import SoakFailure  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--rate", type=int, default=100, help="records per second produced")
    parser.add_argument("--dir", type=Path, help="where the cluster lives (default: a temporary dir)")
    parser.add_argument("--keep", action="store_true", help="keep the cluster dir even when the run passes")
    options = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    root = options.dir or Path(tempfile.mkdtemp(prefix=f"soak-admin-{options.seed}-"))
    started = time.monotonic()
    soak = AdminSoak(root, options.seed, options.steps, rate_per_s=options.rate,
                     log=lambda line: print(line, flush=True))
    try:
        report = soak.run()
    except SoakFailure as failure:
        print(f"FAILED after {time.monotonic() - started:.0f} s: {failure}")
        print(f"replay: .venv/bin/python scripts/soak_admin.py --seed {options.seed} --steps {options.steps}"
              f"  (failed at step {failure.step})")
        print(f"cluster logs kept in {root}")
        return 1
    print(report)
    if not options.keep and options.dir is None:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
