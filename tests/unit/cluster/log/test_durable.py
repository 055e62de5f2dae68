"""The durability primitives (durable.py): what each fsyncs, and that replacing a file is atomic."""

import os

import pytest

from kafkactl.cluster.log.durable import (
    TMP_SUFFIX,
    create_marker,
    remove_if_present,
    rename_durably,
    write_atomically,
)


@pytest.fixture
def synced(monkeypatch):
    """The paths fsynced, in order."""
    paths = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (paths.append(os.readlink(f"/proc/self/fd/{fd}")), real(fd))[1])
    return paths


def test_write_atomically_syncs_the_file_then_its_dir(tmp_path, synced):
    path = str(tmp_path / "checkpoint")
    write_atomically(path, b"old")
    write_atomically(path, b"new")
    with open(path, "rb") as file:
        assert file.read() == b"new"
    assert os.listdir(tmp_path) == ["checkpoint"]
    assert synced[-2:] == [path + TMP_SUFFIX, str(tmp_path)]   # the tmp file before its rename, then the dir


def test_write_atomically_without_durability_syncs_nothing(tmp_path, synced):
    write_atomically(str(tmp_path / "checkpoint"), b"data", durable=False)
    assert synced == []


def test_rename_and_marker_are_durable_in_their_dir(tmp_path, synced):
    (tmp_path / "a").mkdir()
    rename_durably(str(tmp_path / "a"), str(tmp_path / "b"))
    assert os.listdir(tmp_path) == ["b"] and synced == [str(tmp_path)]
    create_marker(str(tmp_path / "b" / "marker"))
    assert os.path.getsize(tmp_path / "b" / "marker") == 0
    assert synced[1:] == [str(tmp_path / "b" / "marker"), str(tmp_path / "b")]


def test_remove_if_present(tmp_path):
    path = tmp_path / "file"
    path.write_bytes(b"x")
    remove_if_present(str(path))
    remove_if_present(str(path))    # already gone: no error
    assert not path.exists()
