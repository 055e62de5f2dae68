"""The planner session's settings (pure), and the redirection that keeps a started
JVM's output off the console."""

import subprocess
import sys
from pathlib import Path

from kafkactl.planner.session import LOG4J2_PROPERTIES, SMALL_REPLICAS, _output_to, session_settings

QUIET = Path("/run/q")


def test_a_small_snapshot_on_a_local_master_gets_the_quick_settings_and_the_quiet_log4j_file():
    settings = session_settings("local[2]", 60, QUIET)
    assert settings == {
        "spark.ui.showConsoleProgress": "false", "spark.sql.session.timeZone": "UTC", "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "1", "spark.sql.adaptive.enabled": "false",
        "spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN",
        "spark.driver.extraJavaOptions": "-Dlog4j2.configurationFile=file:///run/q/log4j2.properties "
                                         "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"}


def test_a_large_snapshot_keeps_sparks_and_the_jvms_defaults():
    settings = session_settings("local[*]", SMALL_REPLICAS + 1, QUIET)
    assert settings["spark.sql.shuffle.partitions"] == "8"
    assert "spark.sql.adaptive.enabled" not in settings and "spark.sql.codegen.wholeStage" not in settings
    assert settings["spark.driver.extraJavaOptions"] == "-Dlog4j2.configurationFile=file:///run/q/log4j2.properties"
    assert "spark.driver.extraJavaOptions" not in session_settings("local[*]", SMALL_REPLICAS + 1, None)


def test_a_cluster_master_gets_the_sql_settings_only():
    assert session_settings("spark://h:7077", 60, QUIET) == {
        "spark.ui.showConsoleProgress": "false", "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": "1", "spark.sql.adaptive.enabled": "false",
        "spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}
    assert session_settings(None, SMALL_REPLICAS + 1, None) == {
        "spark.ui.showConsoleProgress": "false", "spark.sql.session.timeZone": "UTC"}


def test_the_log4j_file_logs_errors_only_to_stderr():
    lines = LOG4J2_PROPERTIES.splitlines()
    assert "rootLogger.level = error" in lines and "appender.console.target = SYSTEM_ERR" in lines


def test_a_process_started_meanwhile_writes_to_the_file_and_the_console_comes_back(tmp_path, capfd):
    with _output_to(tmp_path / "jvm.log"):
        subprocess.run([sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr)"],
                       check=True, timeout=30)
    subprocess.run([sys.executable, "-c", "import sys; print('after', file=sys.stderr)"], check=True, timeout=30)
    assert sorted((tmp_path / "jvm.log").read_text().split()) == ["err", "out"]
    assert capfd.readouterr().err == "after\n"
