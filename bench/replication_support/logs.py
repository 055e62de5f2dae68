"""The broker log lines a benchmark run wrote: read after a byte offset taken before it."""

from __future__ import annotations

import datetime
import os
import re
from dataclasses import dataclass

LOG_LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) (\w+) \[([^\]]*)\] (\S+): (.*)$")


@dataclass
class LogLine:
    t: float            # wall clock, seconds since the epoch
    level: str
    thread: str
    logger: str
    message: str


def log_size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def read_log(path: str, offset: int) -> list[LogLine]:
    """The broker log lines written after byte `offset` (Python logging's asctime)."""
    lines = []
    with open(path, "rb") as f:
        f.seek(offset)
        for raw in f.read().decode(errors="replace").splitlines():
            m = LOG_LINE.match(raw)
            if m:
                t = datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
                lines.append(LogLine(t, m.group(2), m.group(3), m.group(4), m.group(5)))
    return lines


def first(lines: list[LogLine], pattern: str) -> LogLine | None:
    rx = re.compile(pattern)
    return next((line for line in lines if rx.search(line.message)), None)


def matching(lines: list[LogLine], pattern: str) -> list[LogLine]:
    rx = re.compile(pattern)
    return [line for line in lines if rx.search(line.message)]
