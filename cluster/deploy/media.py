"""The media of each broker log dir: detected on the host, decided here (pure).

Detection runs on the broker's host: media_probe.py, sent as the standard
input of `python3 - PATH...` (`probe_source`, `probe_command`), walks from
each log dir to its disks and prints JSON; `parse_probe_output` turns that
into one `DetectedMedia` per path. media_probe.py's module doc says how a
path is followed to its disks and why.

`effective_media` then decides what the broker is told (log.dir.media):

- `media: ssd` or `media: hdd` in the inventory wins, whatever was
  detected: the operator knows things the kernel does not (a SAN LUN that
  says rotational, a virtual disk on flash). When detection disagrees, the
  result says so, for `deploy plan` to show.
- `media: auto` (the default) takes the detected media.
- `auto` where detection answered "unknown" (tmpfs, overlay, a network file
  system, an unreadable flag) is not decided: guessing would place
  partitions by a made-up speed, so the deploy stops and the error asks for
  `media` in the inventory, naming the host and the dir.

`root_fs_warning`: a log dir on the root file system (the same file system
as `/`, through a bind mount too) is allowed but warned about: when the log
dir fills up, so does `/`, and the host's own services start failing.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from importlib import resources
from typing import Any, NamedTuple

from kafkactl.cluster.deploy.inventory import AUTO, HDD, SSD, LogDir
from kafkactl.cluster.deploy.media_probe import UNKNOWN, VERSION

DETECTED = (SSD, HDD, UNKNOWN)


class MediaError(ValueError):
    """The probe's answer cannot be used; the message names the host."""


@dataclass(frozen=True, slots=True)
class Disk:
    name: str
    media: str   # ssd, hdd or unknown


@dataclass(frozen=True, slots=True)
class DetectedMedia:
    path: str
    media: str          # ssd, hdd or unknown
    reason: str         # how it was decided, e.g. "dm-0 → sda2 → sda: sda is rotational"
    exists: bool        # False: not created yet; detected on its nearest existing parent
    mount_point: str | None
    fs_type: str | None
    device: str | None  # the mount's block device, e.g. "dm-0"
    disks: tuple[Disk, ...]
    root_fs: bool       # on the file system of /


class Decided(NamedTuple):
    media: str          # ssd or hdd: what log.dir.media says
    why: str
    disagrees: bool = False   # the inventory's media differs from the detected one


class Undecided(NamedTuple):
    error: str          # one line naming the host and the log dir


MediaDecision = Decided | Undecided


def probe_source() -> str:
    """media_probe.py's text: the program `python3 -` runs on the host."""
    return resources.files("kafkactl.cluster.deploy").joinpath("media_probe.py").read_text(encoding="utf-8")


def probe_command(paths: list[str]) -> str:
    """The remote command line; send `probe_source()` as its standard input."""
    return " ".join(["python3", "-", *(shlex.quote(p) for p in paths)])


def parse_probe_output(host: str, text: str, paths: list[str]) -> dict[str, DetectedMedia]:
    """The probe's JSON answer for `paths` (in that order), by path; MediaError naming the host if it is not that."""
    try:
        document = json.loads(text)
    except ValueError:
        raise MediaError(f"host {host}: the media probe did not print JSON: {_excerpt(text)}") from None
    if not isinstance(document, dict) or document.get("version") != VERSION:
        raise MediaError(f"host {host}: the media probe printed an answer of another version: {_excerpt(text)}")
    entries = document.get("paths")
    if not isinstance(entries, list):
        raise MediaError(f"host {host}: the media probe's answer has no paths")
    # Answers come in the order of the paths asked for; matched by position,
    # since a host's locale may decode a path argument differently.
    if len(entries) != len(paths):
        raise MediaError(f"host {host}: the media probe answered for {len(entries)} paths, not {len(paths)}")
    return {path: _detected(host, path, entry) for path, entry in zip(paths, entries)}


def _detected(host: str, path: str, entry: Any) -> DetectedMedia:
    try:
        media = entry["media"]
        if media not in DETECTED:
            raise ValueError(media)
        disks = tuple(Disk(str(d["name"]), str(d["media"])) for d in entry.get("disks") or ())
        return DetectedMedia(
            path=path, media=media, reason=str(entry["reason"]), exists=bool(entry["exists"]),
            mount_point=entry.get("mount_point"), fs_type=entry.get("fs_type"), device=entry.get("device"),
            disks=disks, root_fs=bool(entry.get("root_fs")),
        )
    except (KeyError, TypeError, ValueError):
        raise MediaError(f"host {host}: the media probe's answer is malformed: {_excerpt(json.dumps(entry))}") \
            from None


def _excerpt(text: str, limit: int = 120) -> str:
    line = " ".join(text.split())
    return repr(line if len(line) <= limit else line[:limit] + "…")


def effective_media(host: str, log_dir: LogDir, detected: DetectedMedia | None) -> MediaDecision:
    """What log.dir.media says for `log_dir` on `host` (see the module doc)."""
    seen = f"detected {detected.media}: {detected.reason}" if detected is not None else "not detected"
    if log_dir.media in (SSD, HDD):
        disagrees = detected is not None and detected.media in (SSD, HDD) and detected.media != log_dir.media
        return Decided(log_dir.media, f"{log_dir.media} as the inventory says ({seen})", disagrees)
    assert log_dir.media == AUTO
    if detected is None:
        return Undecided(f"host {host}: log_dirs {log_dir.path}: media is auto but was not detected")
    if detected.media == UNKNOWN:
        return Undecided(f"host {host}: log_dirs {log_dir.path}: media is auto, and it cannot be detected "
                         f"({detected.reason}); set media: ssd or hdd for it in the inventory")
    return Decided(detected.media, seen)


def root_fs_warning(host: str, detected: DetectedMedia) -> str | None:
    """One line if the log dir is on the root file system, else None."""
    if not detected.root_fs:
        return None
    device = f" ({detected.device})" if detected.device else ""
    return (f"host {host}: log dir {detected.path} is on the root file system{device}: "
            "when it fills up, so does /, and the host's own services fail")
