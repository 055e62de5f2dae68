"""The raw results kept between runs: docs/benchmarks-replication.json.

Every run's raw results go into it (failover per N, produce, shutdown); the markdown is
rendered from all of it (doc.py), so a separate run of the big failover case, or of one
benchmark, adds to what the last full run measured instead of erasing it.
"""

from __future__ import annotations

import json

import throughput  # bench/throughput.py: Figure

from replication_support import REPO

RESULTS = REPO / "docs" / "benchmarks-replication.json"


def load_store() -> dict:
    if RESULTS.exists():
        try:
            return json.loads(RESULTS.read_text())
        except ValueError:
            pass
    return {}


def save_store(store: dict) -> None:
    RESULTS.write_text(json.dumps(store, indent=1, default=_jsonable) + "\n")


def _jsonable(value):
    if isinstance(value, throughput.Figure):
        return {"name": value.name, "kind": value.kind, "limit": value.limit,
                "samples": [vars(s) for s in value.samples]}
    if hasattr(value, "__dataclass_fields__"):
        return vars(value)
    return str(value)
