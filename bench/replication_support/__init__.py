"""What the replication benchmarks share (bench/failover.py, bench/replicated_produce.py,
bench/controlled_shutdown.py, and bench/replication.py, which runs all three).

- cluster: a 3-broker local cluster with a ZooKeeper client (BenchCluster)
- wire: ListOffsets and ApiVersions to a broker, as the benchmarks probe it
- logs: the broker log lines written after an offset
- host: this machine and its processes (open files, RSS, the commit measured)
- stats: medians and how figures are printed
- failover_report, produce_report, shutdown_report: each benchmark's records, tables and
  section of docs/benchmarks-replication.md
- results: the raw results kept in docs/benchmarks-replication.json
- doc: docs/benchmarks-replication.md, rendered from those results, its notes kept
- run: what every run does around its measurements (temp dir, log, saving results)

The benchmarks run as files (`.venv/bin/python bench/failover.py`): Python puts the
script's folder, bench/, first on sys.path, so `replication_support` and `throughput`
(bench/throughput.py) import by these names; nothing inserts paths.
"""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
