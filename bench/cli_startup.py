"""How long a simple `kafkactl` command takes to start and answer; the aim is 0.3 s.

Starts a standalone ZooKeeper in a temporary dir, then runs the installed
`kafkactl -z ZK topics list` as a subprocess `--runs` times, and as this
machine's floor a bare interpreter (`python -c pass`) as many times. Prints
the median wall and CPU time of each, the command's ratio to the 0.3 s aim
and to the floor. CPU time is the one to watch on a shared machine: other
work stretches the wall clock, not the work done. ZooKeeper is stopped at
the end.

    .venv/bin/python bench/cli_startup.py [--runs 15]
"""

from __future__ import annotations

import argparse
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cli_describe import KAFKACTL, start_zookeeper

from kafkactl.cluster.local import procs

AIM_S = 0.3


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run of `argv`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60)
    wall_s = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {done.stderr}")
    cpu_s = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return wall_s, cpu_s


def medians(samples: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kafkactl-bench-") as tmp:
        root = Path(tmp)
        env = {**os.environ, "KAFKACTL_CONFIG": str(root / "config.json"), "XDG_STATE_HOME": str(root / "state")}
        launched, address = start_zookeeper(root)
        try:
            command = [timed([str(KAFKACTL), "-z", address, "topics", "list"], env) for _ in range(args.runs)]
            floor = [timed([sys.executable, "-c", "pass"], env) for _ in range(args.runs)]
        finally:
            os.kill(launched.pid, signal.SIGKILL)
            procs.exit_code(launched.pid)
    wall_s, cpu_s = medians(command)
    floor_wall_s, floor_cpu_s = medians(floor)
    print(f"kafkactl topics list: median wall {wall_s:.3f} s, CPU {cpu_s:.3f} s over {args.runs} runs")
    print(f"bare interpreter:     median wall {floor_wall_s:.3f} s, CPU {floor_cpu_s:.3f} s")
    print(f"ratio to the {AIM_S} s aim: wall {wall_s / AIM_S:.2f}, CPU {cpu_s / AIM_S:.2f}")
    print(f"ratio to the interpreter's floor: wall {wall_s / floor_wall_s:.1f}, CPU {cpu_s / floor_cpu_s:.1f}")


if __name__ == "__main__":
    main()
