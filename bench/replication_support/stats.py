"""Medians and how the replication benchmarks print figures."""

from __future__ import annotations

import statistics


def med(values) -> float:
    """The median of the values that are not None; nan if there are none."""
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else float("nan")


def ms(seconds: float) -> str:
    return "–" if seconds != seconds else f"{seconds * 1000:,.0f}"


def runs_ms(values) -> str:
    return " ".join(ms(v) for v in values)
