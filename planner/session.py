"""The planner's Spark session: quick to start for small snapshots, and quiet.

Rules:
- Quiet (the default; `--debug` turns it off): nothing Spark or Java prints
  reaches the console. The JVM's own standard output and error (its
  "Using incubator modules" warning comes before any logging is set up) go
  to a log file in a private temporary directory, removed when the session
  stops; log4j2 is configured by a file written there, ERROR and above only,
  so Spark's start-up warnings (the host name resolving to a loopback
  address, no native Hadoop library, the default log4j profile notice) are
  never logged. Python workers inherit the JVM's output. kafkactl's own
  lines, its error line first, are the only ones on the console.
- Debug: Spark's defaults, everything on the console.
- A `local` master binds to the loopback address (SPARK_LOCAL_IP), so the
  driver never resolves this host's name; a few shuffle partitions per core
  suit one machine (Spark's 200 are made for clusters), and no web UI.
- A small snapshot (at most SMALL_REPLICAS replicas), whose jobs each handle
  a few hundred rows, runs with SMALL_SNAPSHOT_SQL (one shuffle partition, no
  adaptive execution, no code generation), on any master; on a local master
  its JVM starts with the client compiler only and the serial collector, the
  cheaper start for a job of seconds. A larger one keeps Spark's and the
  JVM's defaults (compiled code and the optimizing compiler pay off there).
- A local master's JVM maps the class-data archive of Spark's classes
  (planner/jvm_archive.py), or dumps it when the process exits if there is none yet;
  only when this session starts the JVM (not one PySpark already runs).
- Under spark-submit (master None) the JVM is already running: only the
  session's own settings apply.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kafkactl.planner import jvm_archive

SMALL_REPLICAS = 20_000
LOCAL_SHUFFLE_PARTITIONS = 8
QUICK_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
# A small snapshot's jobs handle a few hundred rows each: one shuffle partition
# (no sampling job for a sort), no adaptive re-planning (each of its query
# stages is a job of its own), and expressions interpreted rather than compiled
# (compiling generated code costs more than running it on so few rows).
# factoryMode is Spark's internal switch for the last; an unknown setting is ignored.
SMALL_SNAPSHOT_SQL = {"spark.sql.shuffle.partitions": "1", "spark.sql.adaptive.enabled": "false",
                      "spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}

# ERROR and above, to the JVM's stderr (which quiet mode sends to the run's log file).
LOG4J2_PROPERTIES = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
"""


def session_settings(master: str | None, replicas: int, quiet_dir: Path | None,
                     archive_options: tuple[str, ...] = ()) -> dict[str, str]:
    """The Spark settings of a session for `master` and a snapshot of `replicas`
    (pure; `archive_options`: the class-data archive's JVM options, local masters only)."""
    settings = {"spark.ui.showConsoleProgress": "false", "spark.sql.session.timeZone": "UTC"}
    small = replicas <= SMALL_REPLICAS
    if small:
        settings.update(SMALL_SNAPSHOT_SQL)
    if not master or not master.startswith("local"):
        return settings
    settings["spark.ui.enabled"] = "false"
    if not small:
        settings["spark.sql.shuffle.partitions"] = str(LOCAL_SHUFFLE_PARTITIONS)
    java_options = []
    if quiet_dir is not None:
        java_options.append(f"-Dlog4j2.configurationFile={(quiet_dir / 'log4j2.properties').as_uri()}")
    if small:
        java_options.append(QUICK_JVM_OPTIONS)
    java_options.extend(archive_options)
    if java_options:
        settings["spark.driver.extraJavaOptions"] = " ".join(java_options)
    return settings


@contextmanager
def planner_session(master: str | None, replicas: int, quiet: bool = True,
                    app_name: str = "kafkactl-plan") -> Iterator:
    """A SparkSession for one run, stopped (and its log removed) at the end."""
    with tempfile.TemporaryDirectory(prefix="kafkactl-spark-") as temporary:
        quiet_dir = Path(temporary) if quiet else None
        archive = _archive_plan(master)
        session = start_session(master, replicas, quiet_dir, app_name, archive.java_options)
        try:
            yield session
        finally:
            session.stop()
            jvm_archive.finish_at_exit(archive, _gateway())


def _gateway():
    from pyspark import SparkContext

    return SparkContext._gateway


def _archive_plan(master: str | None) -> jvm_archive.ArchivePlan:
    """The class-data archive's part in a local session whose JVM this one starts."""
    if not master or not master.startswith("local") or _gateway() is not None:
        return jvm_archive.NO_ARCHIVE
    return jvm_archive.plan_for_this_install()


def start_session(master: str | None, replicas: int, quiet_dir: Path | None, app_name: str = "kafkactl-plan",
                  archive_options: tuple[str, ...] = ()):
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    for key, value in session_settings(master, replicas, quiet_dir, archive_options).items():
        builder = builder.config(key, value)
    if master and master.startswith("local"):
        # Python workers (the baseline's pandas UDFs) need this interpreter, which has
        # kafkactl, not whatever `python3` is first on PATH; PySpark reads the variable
        # when the context starts (spark.pyspark.python set here did not reach the workers).
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    if quiet_dir is None:
        session = builder.getOrCreate()
    else:
        (quiet_dir / "log4j2.properties").write_text(LOG4J2_PROPERTIES)
        with _output_to(quiet_dir / "spark.log"):
            session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


@contextmanager
def _output_to(path: Path) -> Iterator[None]:
    """This process's stdout and stderr go to `path` meanwhile, so the JVM it starts
    inherits them; they are restored after (nothing else writes to them then)."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.dup2(target, 1)
        os.dup2(target, 2)
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, target):
            os.close(fd)
