"""A class-data archive of Spark's JVM, so a local plan does not load Spark's classes from its jars every run.

A local `kafkactl plan` starts a JVM that loads some 23,000 classes from
PySpark's jars before its first job: a few seconds of a small plan. Java's
class-data sharing (CDS) keeps them, parsed and verified, in an archive file
that later JVMs map instead. The first run with no archive dumps one when
its JVM exits (`-XX:ArchiveClassesAtExit`); every later run maps it
(`-XX:SharedArchiveFile`).

Rules:
- One archive per Java and PySpark install: its name is a digest of the
  java binary's real path, its size and time, and PySpark's version and jar
  list (names and sizes), so an upgrade of either makes a new archive, and
  archives no run has used for STALE_DAYS are removed when a new one is in
  place (a run that maps an archive touches it). The JVM checks the
  archive again itself (its version, the class path) and, if it does not
  match, runs without it (the default -Xshare:auto): a stale or damaged
  archive costs only the speed-up.
- The dump goes to a file of this process's own (`.<pid>.part`), renamed
  into place only after the JVM exited with status 0 having written it, so a
  reader never maps a half-written archive, and two first runs at once each
  write their own and the last rename wins.
- When dumping, at this process's exit (after kafkactl printed its result)
  the JVM is made to exit (PySpark keeps it for the process's lifetime)
  and waited for, at most DUMP_TIMEOUT_S, with a note on stderr; past
  that the JVM is killed and its part file removed. Part files an
  interrupted run left are removed after an hour.
- Where: $KAFKACTL_CACHE_DIR, else $XDG_CACHE_HOME/kafkactl, else
  ~/.cache/kafkactl, under `jvm/`. KAFKACTL_JVM_ARCHIVE=0 turns it off;
  =require makes a JVM that cannot map an existing archive fail to start
  (-Xshare:on: how tests and operators tell that it is used). A cache dir
  that cannot be created means no archive, not an error.
"""

from __future__ import annotations

import atexit
import hashlib
import logging
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

DUMP_TIMEOUT_S = 120
STALE_DAYS = 30
SUFFIX = ".jsa"
OFF_ENV = "KAFKACTL_JVM_ARCHIVE"


@dataclass(frozen=True)
class ArchivePlan:
    """What this run does with the archive: map it, dump it (`dumps`), or neither (NO_ARCHIVE)."""

    java_options: tuple[str, ...]
    archive: Path | None = None        # the archive's final path
    part: Path | None = None           # set when this run dumps: where the JVM writes it

    @property
    def dumps(self) -> bool:
        return self.part is not None


NO_ARCHIVE = ArchivePlan(())


def cache_dir(environ=os.environ) -> Path:
    if environ.get("KAFKACTL_CACHE_DIR"):
        return Path(environ["KAFKACTL_CACHE_DIR"]) / "jvm"
    base = environ.get("XDG_CACHE_HOME") or str(Path(environ.get("HOME", "/")) / ".cache")
    return Path(base) / "kafkactl" / "jvm"


def install_key(java: Path | None, pyspark_version: str, jars: list[tuple[str, int]]) -> str:
    """The digest naming the archive of one Java and PySpark install (pure)."""
    digest = hashlib.sha256()
    if java is not None:
        stat = java.stat()
        digest.update(f"{java}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    digest.update(f"{pyspark_version}\0".encode())
    for name, size in sorted(jars):
        digest.update(f"{name}\0{size}\0".encode())
    return digest.hexdigest()[:20]


def decide(directory: Path, key: str, pid: int, require: bool = False) -> ArchivePlan:
    """Map the install's archive if it is there (and touch it), else dump one at exit."""
    archive = directory / f"spark-{key}{SUFFIX}"
    if archive.is_file() and archive.stat().st_size > 0:
        os.utime(archive)   # in use: not stale
        return ArchivePlan((f"-XX:SharedArchiveFile={archive}", *(["-Xshare:on"] if require else [])), archive)
    _remove_stale_parts(directory)
    part = directory / f"spark-{key}{SUFFIX}.{pid}.part"
    return ArchivePlan((f"-XX:ArchiveClassesAtExit={part}",), archive, part)


def plan_for_this_install(environ=os.environ) -> ArchivePlan:
    """The ArchivePlan for the java PySpark will start and this PySpark (NO_ARCHIVE when off or impossible)."""
    mode = environ.get(OFF_ENV, "on").lower()
    if mode in ("0", "off", "false", "no"):
        return NO_ARCHIVE
    directory = cache_dir(environ)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        if not os.access(directory, os.W_OK):
            return NO_ARCHIVE
        key = install_key(_java(environ), *_pyspark())
    except OSError as error:
        log.debug("no JVM class archive: %s", error)
        return NO_ARCHIVE
    return decide(directory, key, os.getpid(), require=mode == "require")


def _java(environ) -> Path | None:
    home = environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(found).resolve() if found else None


def _pyspark() -> tuple[str, list[tuple[str, int]]]:
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    return pyspark.__version__, [(p.name, p.stat().st_size) for p in jars.glob("*.jar")]


def finish_at_exit(plan: ArchivePlan, gateway) -> None:
    """When this run dumps: finish() at this process's exit."""
    if plan.dumps and gateway is not None and getattr(gateway, "proc", None) is not None:
        atexit.register(finish, plan, gateway, True)


def finish(plan: ArchivePlan, gateway, note: bool = False) -> None:
    """End the JVM, wait for its dump, and put it in place (removing stale archives)."""
    process = gateway.proc
    if note:
        print("kafkactl: note: saving Spark's classes for faster local plans (once per install)",
              file=sys.stderr, flush=True)
    _end_jvm(gateway, process)
    try:
        code = process.wait(timeout=DUMP_TIMEOUT_S)
    except subprocess.TimeoutExpired:   # the dump is not worth waiting longer for
        process.kill()
        process.wait(timeout=10)
        code = None
    try:
        if code == 0 and plan.part.is_file() and plan.part.stat().st_size > 0:
            os.replace(plan.part, plan.archive)
            _remove_others(plan.archive)
        else:
            log.debug("JVM class archive not written (exit status %s)", code)
    finally:
        plan.part.unlink(missing_ok=True)


def _end_jvm(gateway, process) -> None:
    """PySpark's JVM exits when its standard input closes; forget the gateway
    so a later session in this process starts a new one."""
    from pyspark import SparkContext

    try:
        gateway.shutdown()
    except Exception as error:   # a gateway already closed: the JVM still ends on its stdin
        log.debug("closing the Py4J gateway: %s", error)
    if process.stdin is not None:
        process.stdin.close()
    SparkContext._gateway = None
    SparkContext._jvm = None


def _remove_stale_parts(directory: Path) -> None:
    oldest = time.time() - 3600
    for part in directory.glob(f"spark-*{SUFFIX}.*.part"):
        try:
            if part.stat().st_mtime < oldest:
                part.unlink(missing_ok=True)
        except OSError:   # another run took it meanwhile
            pass


def _remove_others(archive: Path) -> None:
    """Other installs' archives that no run has mapped for STALE_DAYS."""
    oldest = time.time() - STALE_DAYS * 86400
    for other in archive.parent.glob(f"spark-*{SUFFIX}"):
        if other != archive and other.stat().st_mtime < oldest:
            other.unlink(missing_ok=True)
