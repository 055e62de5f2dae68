"""This machine and its processes, as the replication benchmarks record them."""

from __future__ import annotations

import datetime
import os
import resource
import subprocess

from replication_support import REPO

# Enough for every partition's files of the biggest case on every broker
# (children inherit it); raised up to the hard limit, never beyond.
WANTED_NOFILE = 65536


def raise_nofile() -> str:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = min(WANTED_NOFILE, hard) if hard != resource.RLIM_INFINITY else WANTED_NOFILE
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
        return f"open files: soft limit raised from {soft} to {wanted} (hard limit {hard})"
    return f"open files: soft limit {soft} (hard {hard}), not changed"


def open_fds(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return -1


def rss_mib(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return -1.0


def code_version() -> str:
    """The commit measured (and whether cluster/ had uncommitted changes)."""
    try:
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "cluster"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "?"
    return f"{head}{' + uncommitted changes in cluster/' if dirty else ''}" if head else "?"


def now_text() -> str:
    return datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
