"""planner/jvm_archive.py: which archive a run maps or dumps, and where (no JVM)."""

import os
import time
from pathlib import Path

from kafkactl.planner import jvm_archive
from kafkactl.planner.jvm_archive import NO_ARCHIVE, cache_dir, decide, install_key
from kafkactl.planner.session import session_settings


def test_the_cache_dir_follows_kafkactl_then_xdg_then_home():
    assert cache_dir({"KAFKACTL_CACHE_DIR": "/k", "XDG_CACHE_HOME": "/x", "HOME": "/h"}) == Path("/k/jvm")
    assert cache_dir({"XDG_CACHE_HOME": "/x", "HOME": "/h"}) == Path("/x/kafkactl/jvm")
    assert cache_dir({"HOME": "/h"}) == Path("/h/.cache/kafkactl/jvm")


def test_the_key_changes_with_java_pyspark_or_any_jar(tmp_path):
    java = tmp_path / "java"
    java.write_bytes(b"x" * 10)
    jars = [("spark-core.jar", 100), ("scala-library.jar", 200)]
    key = install_key(java, "4.0.0", jars)
    assert key == install_key(java, "4.0.0", list(reversed(jars)))   # the order found does not matter
    assert key != install_key(java, "4.0.1", jars)
    assert key != install_key(java, "4.0.0", [("spark-core.jar", 101), ("scala-library.jar", 200)])
    assert key != install_key(None, "4.0.0", jars)
    java.write_bytes(b"y" * 11)
    assert key != install_key(java, "4.0.0", jars)


def test_no_archive_yet_means_this_run_dumps_to_a_part_file_of_its_own(tmp_path):
    plan = decide(tmp_path, "k1", 4242)
    assert plan.dumps
    assert plan.part == tmp_path / "spark-k1.jsa.4242.part"
    assert plan.archive == tmp_path / "spark-k1.jsa"
    assert plan.java_options == (f"-XX:ArchiveClassesAtExit={plan.part}",)


def test_an_archive_in_place_is_mapped_and_touched(tmp_path):
    archive = tmp_path / "spark-k1.jsa"
    archive.write_bytes(b"archive")
    os.utime(archive, (0, 0))
    plan = decide(tmp_path, "k1", 4242)
    assert not plan.dumps
    assert plan.java_options == (f"-XX:SharedArchiveFile={archive}",)
    assert archive.stat().st_mtime > time.time() - 60
    assert decide(tmp_path, "k1", 1, require=True).java_options[-1] == "-Xshare:on"


def test_an_empty_archive_is_not_mapped_and_old_part_files_are_removed(tmp_path):
    (tmp_path / "spark-k1.jsa").write_bytes(b"")
    stale, fresh = tmp_path / "spark-k1.jsa.1.part", tmp_path / "spark-k1.jsa.2.part"
    stale.write_bytes(b"half")
    fresh.write_bytes(b"half")
    os.utime(stale, (0, 0))
    assert decide(tmp_path, "k1", 3).dumps
    assert not stale.exists() and fresh.exists()   # another run may still be writing the fresh one


def test_off_means_no_archive(tmp_path):
    for value in ("0", "off", "no"):
        assert jvm_archive.plan_for_this_install({"KAFKACTL_JVM_ARCHIVE": value,
                                                  "KAFKACTL_CACHE_DIR": str(tmp_path)}) is NO_ARCHIVE
    assert not (tmp_path / "jvm").exists()


def test_an_unwritable_cache_means_no_archive_not_an_error(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    assert jvm_archive.plan_for_this_install({"KAFKACTL_CACHE_DIR": str(blocked)}) is NO_ARCHIVE


def test_stale_archives_of_other_installs_go_when_a_new_one_is_in_place(tmp_path):
    new, recent, stale = (tmp_path / f"spark-{k}.jsa" for k in ("new", "recent", "stale"))
    for path in (new, recent, stale):
        path.write_bytes(b"archive")
    os.utime(stale, (0, 0))
    jvm_archive._remove_others(new)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spark-new.jsa", "spark-recent.jsa"]


def test_the_archive_options_reach_only_a_local_driver():
    options = ("-XX:SharedArchiveFile=/c/spark-k.jsa",)
    local = session_settings("local[2]", 100, None, options)
    assert local["spark.driver.extraJavaOptions"].endswith("-XX:SharedArchiveFile=/c/spark-k.jsa")
    large = session_settings("local[2]", 10**6, None, options)
    assert large["spark.driver.extraJavaOptions"] == "-XX:SharedArchiveFile=/c/spark-k.jsa"
    assert "spark.driver.extraJavaOptions" not in session_settings("spark://m:7077", 100, None, options)
