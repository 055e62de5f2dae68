"""A log dir's own files (log_dir.py): its lock, the clean-shutdown marker, its checkpoints, leftovers."""

import os

import pytest

from kafkactl.cluster.log import log as log_module
from kafkactl.cluster.log.checkpoint import OffsetCheckpointFile
from kafkactl.cluster.log.errors import LogDirLockedError
from kafkactl.cluster.log.layout import CLEAN_SHUTDOWN_FILE


def test_clean_shutdown_marker_round_trip(make_manager, dirs, make_batch, monkeypatch, append):
    manager = make_manager()
    manager.startup()
    append(manager.get_or_create_log("t", 0, preferred_media="ssd"), make_batch, batches=3)
    manager.shutdown()
    assert all(os.path.exists(os.path.join(d.path, CLEAN_SHUTDOWN_FILE)) for d in dirs)
    assert OffsetCheckpointFile(
        os.path.join(dirs[0].path, "recovery-point-offset-checkpoint")).read() == {("t", 0): 6}

    opened = []
    real_open = log_module.Log.open.__func__
    monkeypatch.setattr(log_module.Log, "open", classmethod(
        lambda cls, *args: opened.append(args[6]) or real_open(cls, *args)))
    manager = make_manager()
    manager.startup()
    assert opened == [True]  # the marker meant a clean shutdown
    assert not any(os.path.exists(os.path.join(d.path, CLEAN_SHUTDOWN_FILE)) for d in dirs)
    log = manager.get_log("t", 0)
    assert log.log_end_offset == 6
    append(log, make_batch)
    # Simulate a crash: drop the manager without shutdown (release the dir locks only).
    for fd in manager._lock_files.values():
        os.close(fd)
    manager._lock_files.clear()
    opened.clear()
    manager = make_manager()
    manager.startup()
    assert opened == [False]
    assert manager.get_log("t", 0).log_end_offset == 8


def test_malformed_recovery_checkpoint_means_full_recovery(make_manager, dirs, make_batch, append):
    manager = make_manager([dirs[0]])
    manager.startup()
    append(manager.get_or_create_log("t", 0), make_batch, batches=2)
    manager.shutdown()
    with open(os.path.join(dirs[0].path, "recovery-point-offset-checkpoint"), "w") as file:
        file.write("0\n7\n")
    manager = make_manager([dirs[0]])
    manager.startup()
    assert manager.get_log("t", 0).log_end_offset == 4


def test_startup_removes_leftover_deleted_dirs(make_manager, dirs):
    os.makedirs(os.path.join(dirs[0].path, "t-0.abc-delete"))
    manager = make_manager([dirs[0]])
    manager.startup()
    assert os.listdir(dirs[0].path) == [".lock"]


def test_a_locked_dir_refuses_a_second_manager(make_manager, dirs):
    make_manager([dirs[0]]).startup()
    with pytest.raises(LogDirLockedError):
        make_manager([dirs[0]]).startup()
