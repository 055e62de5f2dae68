"""Which kind of storage a log dir sits on: "ssd" or "hdd".

The block device under a path comes from its st_dev, looked up as
/sys/dev/block/MAJ:MIN. A partition (it has a `partition` file) reports its
queue settings through its parent disk. `queue/rotational` 1 means a
spinning disk, 0 solid state. Anything without a block device (tmpfs,
overlay, network file systems) or without that file is reported as "hdd",
the conservative choice for placement, with the reason.
"""

from __future__ import annotations

import logging
import os
from typing import NamedTuple

SSD = "ssd"
HDD = "hdd"
MEDIA_CLASSES = (SSD, HDD)

logger = logging.getLogger(__name__)


class MediaProbe(NamedTuple):
    media_class: str
    reason: str


def probe_media(path: str, sys_root: str = "/sys") -> MediaProbe:
    """The media class of the device holding `path`, and how it was decided."""
    st_dev = os.stat(path).st_dev
    device = f"{os.major(st_dev)}:{os.minor(st_dev)}"
    device_dir = os.path.join(sys_root, "dev", "block", device)
    if not os.path.exists(device_dir):
        return MediaProbe(HDD, f"no block device {device} (tmpfs, overlay or network file system?)")
    device_dir = os.path.realpath(device_dir)
    if os.path.exists(os.path.join(device_dir, "partition")):
        device_dir = os.path.dirname(device_dir)
    rotational_path = os.path.join(device_dir, "queue", "rotational")
    try:
        with open(rotational_path) as file:
            rotational = file.read().strip()
    except OSError as error:
        return MediaProbe(HDD, f"cannot read {rotational_path}: {error.strerror}")
    name = os.path.basename(device_dir)
    if rotational == "0":
        return MediaProbe(SSD, f"{name} ({device}) is not rotational")
    if rotational == "1":
        return MediaProbe(HDD, f"{name} ({device}) is rotational")
    return MediaProbe(HDD, f"{rotational_path} holds {rotational!r}")


def detect_media_class(path: str, override: str | None = None, sys_root: str = "/sys") -> str:
    """"ssd" or "hdd" for the log dir `path`; `override` wins when given."""
    if override is not None:
        if override not in MEDIA_CLASSES:
            raise ValueError(f"media class must be one of {MEDIA_CLASSES}, not {override!r}")
        return override
    probe = probe_media(path, sys_root)
    logger.info("log dir %s: %s (%s)", path, probe.media_class, probe.reason)
    return probe.media_class
