"""Which storage a log dir's bytes land on: ssd, hdd, or unknown, and why.

Run ON a broker's host, as `python3 - PATH...` with this file on standard
input (the deploy does it over SSH); it prints one JSON document:

    {"version": 1, "paths": [{"path": ..., "media": "ssd"|"hdd"|"unknown",
      "reason": ..., ...}, ...]}

so it imports nothing outside the standard library, nothing from kafkactl,
and keeps to Python 3.6's language (the oldest python3 of the distributions
a broker host may run). `probe_path` is pure over a `System` (the real one
reads /proc and /sys; tests pass literal trees).

From a path to a media class:

1. The path, or, if it does not exist yet (the deploy creates log dirs), its
   nearest existing parent: that is where it will be created. Symbolic links
   are resolved first.
2. Its mount: of the mounts in /proc/self/mountinfo whose mount point holds
   the path, the longest mount point; among those, the one whose device
   number is the path's own st_dev (a mount hidden under a later one, or a
   stack of mounts on one point, has the same mount point but not the
   device the path is really on). A bind mount is a mount like any other:
   its device is the file system it shows a part of.
3. The mount's block device: its major:minor in mountinfo, as
   /sys/dev/block/MAJ:MIN. File systems on major 0 have no device number of
   their own: btrfs is followed through its mount source (/dev/...); tmpfs,
   overlay, network file systems have no block device, and are "unknown".
4. Down the device stack to the disks:
   - a partition (it has a `partition` file) → its parent disk;
   - a loop device → its backing file (`loop/backing_file`), which is a
     path again: steps 1-4 on it, up to MAX_DEPTH devices deep. The loop
     device's own queue/rotational is not trusted: the kernel sets it once,
     when the file is attached, from the backing file system's device (0
     when there is none, as on tmpfs; older kernels always said 1), and
     walking to the file's own device gives the real disk and names it. Only when the backing file is not
     visible from here (deleted, or attached in another mount namespace) is
     the loop device's own flag taken, and the reason says so. A backing file
     on tmpfs or ramfs makes the loop device memory-backed, as zram and brd
     are: ssd (a log dir directly on tmpfs is no block device: "unknown");
   - a stacked device with `slaves/` (device-mapper dm-N: LVM, LUKS,
     multipath; md RAID mdN; bcache) → each of its slaves. Over several
     disks, the slowest decides: hdd if any is rotational (a RAID or a
     volume runs at the pace of its slowest member, and a log dir counted as
     ssd must deliver ssd speed); ssd only if every one is not rotational;
     unknown if some cannot be told and none is rotational. The reason names
     the disks;
   - a disk: `queue/rotational` 0 is ssd, 1 is hdd. A memory-backed block
     device (zram, brd) says 0 and counts as ssd.
5. `root_fs`: whether the path's file system is that of `/` (same device
   number; a bind mount of a directory of `/` counts), so the deploy can warn
   that a full log dir would fill the root file system.

Any failure to read (no /proc, unexpected text) gives "unknown" with the
reason, never an exception: the document is always well formed.
"""

import json
import os
import stat
import sys

SSD = "ssd"
HDD = "hdd"
UNKNOWN = "unknown"
MEMORY_FILE_SYSTEMS = ("tmpfs", "ramfs")
MAX_DEPTH = 8   # devices followed from one path: loops on loops end here
VERSION = 1


class System(object):
    """The host as the walk sees it. All methods answer None rather than raise."""

    def read(self, path):
        # Decoded as os.* decodes paths, so the mount points and backing files
        # read here compare equal to os.path.realpath's answers in any locale.
        try:
            with open(path, encoding=sys.getfilesystemencoding(), errors="surrogateescape") as file:
                return file.read()
        except OSError:
            return None

    def listdir(self, path):
        try:
            return sorted(os.listdir(path))
        except OSError:
            return None

    def exists(self, path):
        return os.path.lexists(path)

    def realpath(self, path):
        return os.path.realpath(path)

    def device_of(self, path):
        """"MAJ:MIN" of the file system holding `path` (its st_dev)."""
        try:
            number = os.stat(path).st_dev
        except OSError:
            return None
        return "%d:%d" % (os.major(number), os.minor(number))

    def block_device_number(self, path):
        """"MAJ:MIN" of the block device node `path` (its st_rdev), if it is one."""
        try:
            status = os.stat(path)
        except OSError:
            return None
        if not stat.S_ISBLK(status.st_mode):
            return None
        return "%d:%d" % (os.major(status.st_rdev), os.minor(status.st_rdev))


class Mount(object):
    __slots__ = ("mount_id", "parent_id", "device", "root", "mount_point", "fs_type", "source")

    def __init__(self, mount_id, parent_id, device, root, mount_point, fs_type, source):
        self.mount_id, self.parent_id, self.device = mount_id, parent_id, device
        self.root, self.mount_point, self.fs_type, self.source = root, mount_point, fs_type, source


def unescape(field):
    """mountinfo writes space, tab, newline and backslash as \\ooo octal."""
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and len(field[i + 1:i + 4]) == 3 and all(c in "01234567" for c in field[i + 1:i + 4]):
            out.append(chr(int(field[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def parse_mountinfo(text):
    """The mounts of /proc/self/mountinfo, in its order; malformed lines are skipped."""
    mounts = []
    for line in text.splitlines():
        fields = line.split()
        # id parent MAJ:MIN root mount-point options [optional...] - fstype source super-options
        if "-" not in fields[6:]:
            continue
        dash = fields.index("-", 6)
        if len(fields) < dash + 3:
            continue
        mounts.append(Mount(fields[0], fields[1], fields[2], unescape(fields[3]), unescape(fields[4]),
                            fields[dash + 1], unescape(fields[dash + 2])))
    return mounts


def mount_of(path, mounts, device):
    """The mount `path` (absolute, resolved) is on; `device` is its st_dev or None."""
    holding = [m for m in mounts if _contains(m.mount_point, path)]
    if not holding:
        return None
    # Longest mount point first; later mounts first among equals (stacked on one point).
    ordered = sorted(enumerate(holding), key=lambda item: (len(item[1].mount_point), item[0]), reverse=True)
    candidates = [m for _, m in ordered]
    if device is not None:
        for mount in candidates:
            if mount.device == device:
                return mount
    # No match (btrfs subvolumes have st_dev numbers of their own): the longest.
    return candidates[0]


def _contains(mount_point, path):
    if mount_point == "/":
        return path.startswith("/")
    return path == mount_point or path.startswith(mount_point + "/")


class Walk(object):
    """What the walk found below one device: the media, the devices passed
    through (top first, down to a disk or to a device over several), the
    disks it ended on as (name, media), and a note when no disk's flag
    tells the whole story."""

    __slots__ = ("media", "chain", "disks", "note")

    def __init__(self, media, chain, disks, note=""):
        self.media, self.chain, self.disks, self.note = media, chain, disks, note

    def reason(self):
        through = " → ".join(self.chain)
        if self.note:
            return "%s: %s" % (through, self.note) if through else self.note
        if len(self.disks) == 1:
            name, media = self.disks[0]
            flag = "%s is %srotational" % (name, "not " if media == SSD else "")
            return flag if self.chain == [name] else "%s: %s" % (through, flag)
        names = ", ".join(name for name, _ in self.disks)
        if self.media == SSD:
            return "%s spans %s, none of them rotational" % (through, names)
        rotational = [name for name, media in self.disks if media == HDD]
        if len(rotational) == len(self.disks):
            return "%s spans %s, all rotational" % (through, names)
        return "%s spans %s; %s %s rotational, and the slowest device decides" % (
            through, names, ", ".join(rotational), "is" if len(rotational) == 1 else "are")


def probe_path(path, system):
    """The JSON-ready result for one log dir path."""
    result = {"path": path, "media": UNKNOWN, "reason": "", "exists": False, "probed": None,
              "mount_point": None, "fs_type": None, "source": None, "device": None,
              "disks": [], "root_fs": None}
    try:
        _probe(path, system, result)
    except Exception as error:   # a host's oddity must not lose the other paths' answers
        result["media"], result["reason"] = UNKNOWN, "probe failed: %s: %s" % (type(error).__name__, error)
    return result


def _probe(path, system, result):
    if not path.startswith("/"):
        result["reason"] = "not an absolute path"
        return
    mounts = parse_mountinfo(system.read("/proc/self/mountinfo") or "")
    if not mounts:
        result["reason"] = "cannot read /proc/self/mountinfo"
        return
    existing = _nearest_existing(path, system)
    real = system.realpath(existing)
    result["exists"], result["probed"] = existing == path, real
    mount = mount_of(real, mounts, system.device_of(real))
    root = mount_of("/", mounts, system.device_of("/"))
    if mount is None:
        result["reason"] = "no mount holds %s" % real
        return
    result.update(mount_point=mount.mount_point, fs_type=mount.fs_type, source=mount.source)
    result["root_fs"] = root is not None and root.device == mount.device
    walk = _walk_mount(mount, system, mounts, 0)
    result["media"], result["reason"] = walk.media, walk.reason()
    result["device"] = walk.chain[0].split(" ")[0] if walk.chain else None
    result["disks"] = [{"name": name, "media": media} for name, media in walk.disks]


def _nearest_existing(path, system):
    current = os.path.normpath(path)
    while current != "/" and not system.exists(current):
        current = os.path.dirname(current)
    return current


def _walk_mount(mount, system, mounts, depth):
    device = mount.device
    if device.startswith("0:"):
        # An anonymous device number: btrfs (and the like) name their device as the source.
        device = system.block_device_number(mount.source) if mount.source.startswith("/dev/") else None
        if device is None:
            return Walk(UNKNOWN, [], [], "%s at %s has no block device" % (mount.fs_type, mount.mount_point))
    directory = system.realpath("/sys/dev/block/" + device)
    if system.read(directory + "/dev") is None:
        return Walk(UNKNOWN, [], [], "no block device %s in /sys/dev/block (%s at %s)"
                    % (device, mount.fs_type, mount.mount_point))
    return _walk_device(directory, system, mounts, depth)


def _walk_device(directory, system, mounts, depth):
    name = os.path.basename(directory)
    if depth >= MAX_DEPTH:
        return Walk(UNKNOWN, [name], [], "device stack deeper than %d" % MAX_DEPTH)
    if system.read(directory + "/partition") is not None:
        return _on_top(name, _walk_device(os.path.dirname(directory), system, mounts, depth + 1))
    backing = system.read(directory + "/loop/backing_file")
    if backing is not None:
        return _walk_loop(name, directory, backing.strip(), system, mounts, depth)
    slaves = system.listdir(directory + "/slaves")
    if slaves:
        below = [_walk_device(system.realpath(directory + "/slaves/" + s), system, mounts, depth + 1)
                 for s in slaves]
        return _on_top(name, below[0]) if len(below) == 1 else _over_several(name, below)
    return _disk(name, directory, system)


def _disk(name, directory, system):
    flag = (system.read(directory + "/queue/rotational") or "").strip()
    if flag == "0":
        return Walk(SSD, [name], [(name, SSD)])
    if flag == "1":
        return Walk(HDD, [name], [(name, HDD)])
    return Walk(UNKNOWN, [name], [(name, UNKNOWN)], "no readable queue/rotational")


def _walk_loop(name, directory, backing, system, mounts, depth):
    if backing.endswith(" (deleted)") or not system.exists(backing):
        own = _disk(name, directory, system)
        if own.media == UNKNOWN:
            return Walk(UNKNOWN, [name], own.disks, "its backing file %s is not visible here, and it has "
                        "no readable queue/rotational" % backing)
        return Walk(own.media, [name], own.disks, "its backing file %s is not visible here; its own "
                    "queue/rotational says %srotational" % (backing, "not " if own.media == SSD else ""))
    real = system.realpath(backing)
    mount = mount_of(real, mounts, system.device_of(real))
    if mount is None:
        return Walk(UNKNOWN, [name], [], "no mount holds its backing file %s" % real)
    if mount.fs_type in MEMORY_FILE_SYSTEMS:
        return Walk(SSD, ["%s (file %s)" % (name, real)], [(name, SSD)],
                    "backed by memory (%s at %s), as zram and brd are: not rotational"
                    % (mount.fs_type, mount.mount_point))
    return _on_top("%s (file %s)" % (name, real), _walk_mount(mount, system, mounts, depth + 1))


def _over_several(name, below):
    disks = []
    for walk in below:
        disks.extend(disk for disk in walk.disks if disk not in disks)
    if any(walk.media == HDD for walk in below):
        return Walk(HDD, [name], disks)
    unknown = [walk for walk in below if walk.media == UNKNOWN]
    if unknown:
        return Walk(UNKNOWN, [name], disks, "spans %s; cannot tell %s"
                    % (", ".join(d for d, _ in disks), unknown[0].reason()))
    return Walk(SSD, [name], disks)


def _on_top(name, below):
    """`below`, reached through one more device `name` on top of it."""
    return Walk(below.media, [name] + below.chain, below.disks, below.note)


def probe(paths, system=None):
    """The JSON document for `paths`."""
    system = system or System()
    return {"version": VERSION, "paths": [probe_path(p, system) for p in paths]}


def main(argv):
    if not argv:
        sys.stderr.write("usage: python3 - PATH... < media_probe.py\n")
        return 2
    json.dump(probe(argv), sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
