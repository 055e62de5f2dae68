"""Durability primitives: the fsyncs and renames every durable step is made of.

Rules, Linux's:
- a file's bytes are durable once the file is fsynced; its name (a create,
  a rename, an unlink) once its directory is fsynced too;
- a rename within one file system is atomic: a crash leaves the old name or
  the new one, never neither;
- so a file is replaced through a temp file: write it, fsync it, rename it
  over the old one, fsync the directory (`write_atomically`).

Every fsync of a path, every durable rename and marker of the storage layer
goes through here (segments and indexes fsync the descriptors they hold
open themselves); code outside it that needs the same steps (admin
snapshots, the local cluster's files) uses these too.
"""

from __future__ import annotations

import os

TMP_SUFFIX = ".tmp"

StrPath = str | os.PathLike[str]


def fsync_path(path: StrPath, directory: bool = False) -> None:
    """fsync what `path` names: a file's bytes, or with `directory` the names in it."""
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: StrPath) -> None:
    """Make a rename, create or unlink in `path` durable."""
    fsync_path(path, directory=True)


def fsync_file(path: str) -> None:
    """Make a file written without fsync durable, with its name."""
    fsync_path(path)
    fsync_dir(os.path.dirname(os.path.abspath(path)))


def write_atomically(path: str, data: bytes, durable: bool = True) -> None:
    """Replace `path` with `data` through a renamed temp file; with `durable`,
    fsync the file before the rename and the directory after it."""
    tmp_path = path + TMP_SUFFIX
    with open(tmp_path, "wb") as file:
        file.write(data)
        file.flush()
        if durable:
            os.fsync(file.fileno())
    os.replace(tmp_path, path)
    if durable:
        fsync_dir(os.path.dirname(os.path.abspath(path)))


def rename_durably(path: str, new_path: str) -> None:
    """Rename within one directory, and fsync that directory."""
    os.rename(path, new_path)
    fsync_dir(os.path.dirname(os.path.abspath(new_path)))


def create_marker(path: str) -> None:
    """Create an empty file whose existence is the message, durably."""
    with open(path, "wb") as marker:
        os.fsync(marker.fileno())
    fsync_dir(os.path.dirname(os.path.abspath(path)))


def remove_if_present(path: str) -> None:
    """Unlink `path`; a file already gone is no error. Not durable by itself."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
