"""The walk from a path to its disks, over literal /proc and /sys trees."""

import posixpath

from kafkactl.cluster.deploy.media_probe import mount_of, parse_mountinfo, probe_path

ROOT_SDA = "27 1 8:0 / / rw,relatime - ext4 /dev/sda rw\n"
SDA_SSD = {"/sys/devices/pci0/block/sda/dev": "8:0\n", "/sys/devices/pci0/block/sda/queue/rotational": "0\n"}
SDA_LINK = {"/sys/dev/block/8:0": "/sys/devices/pci0/block/sda"}


class FakeSystem:
    """A host as literal data: files and their text, directory listings,
    symbolic links (resolved by longest prefix), each path's st_dev and the
    block device nodes' st_rdev."""

    def __init__(self, mountinfo, files=(), dirs=(), links=(), devices=(), nodes=(), existing=()):
        self.files = {"/proc/self/mountinfo": mountinfo, **dict(files)}
        self.dirs, self.links = dict(dirs), dict(links)
        self.devices, self.nodes, self.existing = dict(devices), dict(nodes), set(existing)

    def read(self, path):
        return self.files.get(self.realpath(path))

    def listdir(self, path):
        return self.dirs.get(self.realpath(path))

    def exists(self, path):
        known = [*self.files, *self.dirs, *self.links, *self.existing]
        return any(k == path or k.startswith(path.rstrip("/") + "/") for k in known)

    def realpath(self, path):
        for _ in range(20):
            link = max((k for k in self.links if path == k or path.startswith(k + "/")), key=len, default=None)
            if link is None:
                return path
            path = posixpath.normpath(self.links[link] + path[len(link):])
        raise AssertionError("link loop")

    def device_of(self, path):
        holder = max((k for k in self.devices if path == k or path.startswith(k.rstrip("/") + "/")), key=len,
                     default=None)
        return self.devices[holder] if holder else None

    def block_device_number(self, path):
        return self.nodes.get(path)


def test_a_plain_disk_and_a_log_dir_not_created_yet():
    system = FakeSystem(ROOT_SDA, files=SDA_SSD, links=SDA_LINK, devices={"/": "8:0"}, existing={"/var"})
    result = probe_path("/var/lib/kafka", system)
    assert result == {
        "path": "/var/lib/kafka", "media": "ssd", "reason": "sda is not rotational", "exists": False,
        "probed": "/var", "mount_point": "/", "fs_type": "ext4", "source": "/dev/sda", "device": "sda",
        "disks": [{"name": "sda", "media": "ssd"}], "root_fs": True,
    }


def test_a_partition_reports_through_its_parent_disk():
    system = FakeSystem(
        ROOT_SDA + "40 27 8:17 / /data rw - xfs /dev/sdb1 rw\n",
        files={**SDA_SSD, "/sys/devices/pci0/block/sdb/sdb1/dev": "8:17\n",
               "/sys/devices/pci0/block/sdb/sdb1/partition": "1\n",
               "/sys/devices/pci0/block/sdb/queue/rotational": "1\n"},
        links={**SDA_LINK, "/sys/dev/block/8:17": "/sys/devices/pci0/block/sdb/sdb1"},
        devices={"/": "8:0", "/data": "8:17"}, existing={"/data/kafka"})
    result = probe_path("/data/kafka", system)
    assert (result["media"], result["reason"]) == ("hdd", "sdb1 → sdb: sdb is rotational")
    assert (result["device"], result["root_fs"], result["exists"]) == ("sdb1", False, True)


def test_device_mapper_over_a_partition():
    system = FakeSystem(
        ROOT_SDA + "40 27 253:0 / /data rw - ext4 /dev/mapper/vg-kafka rw\n",
        files={**SDA_SSD, "/sys/devices/virtual/block/dm-0/dev": "253:0\n",
               "/sys/devices/virtual/block/dm-0/queue/rotational": "0\n",   # not read: its slaves decide
               "/sys/devices/pci0/block/sdb/sdb2/partition": "2\n",
               "/sys/devices/pci0/block/sdb/queue/rotational": "1\n"},
        dirs={"/sys/devices/virtual/block/dm-0/slaves": ["sdb2"]},
        links={**SDA_LINK, "/sys/dev/block/253:0": "/sys/devices/virtual/block/dm-0",
               "/sys/devices/virtual/block/dm-0/slaves/sdb2": "/sys/devices/pci0/block/sdb/sdb2"},
        devices={"/": "8:0", "/data": "253:0"}, existing={"/data"})
    result = probe_path("/data", system)
    assert (result["media"], result["reason"]) == ("hdd", "dm-0 → sdb2 → sdb: sdb is rotational")
    assert result["device"] == "dm-0" and result["disks"] == [{"name": "sdb", "media": "hdd"}]


def md_over(sdb_flag, sdc_flag):
    return FakeSystem(
        ROOT_SDA + "40 27 9:0 / /data rw - ext4 /dev/md0 rw\n",
        files={**SDA_SSD, "/sys/devices/virtual/block/md0/dev": "9:0\n",
               "/sys/devices/pci0/block/sdb/sdb1/partition": "1\n",
               "/sys/devices/pci0/block/sdc/sdc1/partition": "1\n",
               **({"/sys/devices/pci0/block/sdb/queue/rotational": sdb_flag} if sdb_flag else {}),
               **({"/sys/devices/pci0/block/sdc/queue/rotational": sdc_flag} if sdc_flag else {})},
        dirs={"/sys/devices/virtual/block/md0/slaves": ["sdb1", "sdc1"]},
        links={**SDA_LINK, "/sys/dev/block/9:0": "/sys/devices/virtual/block/md0",
               "/sys/devices/virtual/block/md0/slaves/sdb1": "/sys/devices/pci0/block/sdb/sdb1",
               "/sys/devices/virtual/block/md0/slaves/sdc1": "/sys/devices/pci0/block/sdc/sdc1"},
        devices={"/": "8:0", "/data": "9:0"}, existing={"/data"})


def test_md_over_an_ssd_and_an_hdd_is_as_slow_as_the_hdd():
    result = probe_path("/data", md_over("0", "1"))
    assert (result["media"], result["reason"]) == (
        "hdd", "md0 spans sdb, sdc; sdc is rotational, and the slowest device decides")
    assert result["disks"] == [{"name": "sdb", "media": "ssd"}, {"name": "sdc", "media": "hdd"}]


def test_md_over_ssds_and_over_hdds():
    assert probe_path("/data", md_over("0", "0"))["reason"] == "md0 spans sdb, sdc, none of them rotational"
    assert probe_path("/data", md_over("1", "1"))["reason"] == "md0 spans sdb, sdc, all rotational"


def test_md_over_an_ssd_and_a_disk_that_cannot_be_told_is_unknown():
    result = probe_path("/data", md_over("0", None))
    assert (result["media"], result["reason"]) == (
        "unknown", "md0: spans sdb, sdc; cannot tell sdc1 → sdc: no readable queue/rotational")


LOOP_MOUNT = "41 27 7:0 / /data rw - ext4 /dev/loop0 rw\n"


def test_a_loop_device_on_a_file_on_tmpfs_is_memory_backed_whatever_its_own_flag_says():
    system = FakeSystem(
        ROOT_SDA + "25 24 0:23 / /dev/shm rw - tmpfs tmpfs rw\n" + LOOP_MOUNT,
        files={**SDA_SSD, "/sys/devices/virtual/block/loop0/dev": "7:0\n",
               "/sys/devices/virtual/block/loop0/loop/backing_file": "/dev/shm/kafka.img\n",
               "/sys/devices/virtual/block/loop0/queue/rotational": "1\n"},
        links={**SDA_LINK, "/sys/dev/block/7:0": "/sys/devices/virtual/block/loop0"},
        devices={"/": "8:0", "/dev/shm": "0:23", "/data": "7:0"}, existing={"/data", "/dev/shm/kafka.img"})
    result = probe_path("/data", system)
    assert (result["media"], result["reason"]) == (
        "ssd", "loop0 (file /dev/shm/kafka.img): backed by memory (tmpfs at /dev/shm), as zram and brd are: "
               "not rotational")
    assert result["device"] == "loop0"


def test_a_loop_device_on_a_file_on_the_root_disk_is_that_disk():
    system = FakeSystem(
        "27 1 8:0 / / rw - ext4 /dev/sda rw\n" + LOOP_MOUNT,
        files={"/sys/devices/pci0/block/sda/dev": "8:0\n", "/sys/devices/pci0/block/sda/queue/rotational": "1\n",
               "/sys/devices/virtual/block/loop0/dev": "7:0\n",
               "/sys/devices/virtual/block/loop0/loop/backing_file": "/var/images/kafka.img\n",
               "/sys/devices/virtual/block/loop0/queue/rotational": "0\n"},   # not trusted
        links={**SDA_LINK, "/sys/dev/block/7:0": "/sys/devices/virtual/block/loop0"},
        devices={"/": "8:0", "/data": "7:0"}, existing={"/data", "/var/images/kafka.img"})
    result = probe_path("/data", system)
    assert (result["media"], result["reason"]) == ("hdd", "loop0 (file /var/images/kafka.img) → sda: sda is rotational")
    assert result["root_fs"] is False   # its own file system, though its bytes are on sda


def test_a_loop_device_whose_backing_file_is_gone_falls_back_to_its_own_flag():
    system = FakeSystem(
        ROOT_SDA + LOOP_MOUNT,
        files={**SDA_SSD, "/sys/devices/virtual/block/loop0/dev": "7:0\n",
               "/sys/devices/virtual/block/loop0/loop/backing_file": "/var/images/kafka.img (deleted)\n",
               "/sys/devices/virtual/block/loop0/queue/rotational": "1\n"},
        links={**SDA_LINK, "/sys/dev/block/7:0": "/sys/devices/virtual/block/loop0"},
        devices={"/": "8:0", "/data": "7:0"}, existing={"/data"})
    result = probe_path("/data", system)
    assert (result["media"], result["reason"]) == (
        "hdd", "loop0: its backing file /var/images/kafka.img (deleted) is not visible here; its own "
               "queue/rotational says rotational")


def test_loop_devices_backed_by_each_other_stop_at_the_depth_bound():
    system = FakeSystem(
        ROOT_SDA + LOOP_MOUNT,
        files={**SDA_SSD, "/sys/devices/virtual/block/loop0/dev": "7:0\n",
               "/sys/devices/virtual/block/loop0/loop/backing_file": "/data/self.img\n"},
        links={**SDA_LINK, "/sys/dev/block/7:0": "/sys/devices/virtual/block/loop0"},
        devices={"/": "8:0", "/data": "7:0"}, existing={"/data/self.img"})
    result = probe_path("/data", system)
    assert result["media"] == "unknown" and result["reason"].endswith("loop0: device stack deeper than 8")


def test_a_bind_mount_of_a_directory_of_the_root_file_system_is_on_it():
    system = FakeSystem(
        ROOT_SDA + "45 27 8:0 /srv/kafka /kafka rw - ext4 /dev/sda rw\n",
        files=SDA_SSD, links=SDA_LINK, devices={"/": "8:0", "/kafka": "8:0"}, existing={"/kafka/logs"})
    result = probe_path("/kafka/logs", system)
    assert (result["mount_point"], result["root_fs"], result["media"]) == ("/kafka", True, "ssd")


def test_a_bind_mount_of_another_disk_is_not_on_the_root_file_system():
    system = FakeSystem(
        ROOT_SDA + "40 27 8:16 / /data rw - ext4 /dev/sdb rw\n"
        "45 27 8:16 /kafka /kafka rw - ext4 /dev/sdb rw\n",
        files={**SDA_SSD, "/sys/devices/pci0/block/sdb/dev": "8:16\n",
               "/sys/devices/pci0/block/sdb/queue/rotational": "1\n"},
        links={**SDA_LINK, "/sys/dev/block/8:16": "/sys/devices/pci0/block/sdb"},
        devices={"/": "8:0", "/data": "8:16", "/kafka": "8:16"}, existing={"/kafka"})
    result = probe_path("/kafka", system)
    assert (result["mount_point"], result["root_fs"], result["reason"]) == ("/kafka", False, "sdb is rotational")


def test_mounts_stacked_on_one_point_the_paths_device_picks_the_top_one():
    mounts = parse_mountinfo("25 24 0:23 / /dev/shm rw - tmpfs tmpfs rw\n30 25 0:27 / /dev/shm rw - tmpfs tmpfs rw\n")
    assert mount_of("/dev/shm/x", mounts, "0:27").mount_id == "30"
    assert mount_of("/dev/shm/x", mounts, None).mount_id == "30"   # without st_dev: the later one


def test_a_mount_hidden_under_a_later_mount_of_its_parent_is_skipped():
    mounts = parse_mountinfo(ROOT_SDA + "40 27 8:16 / /data/kafka rw - ext4 /dev/sdb rw\n"
                             "41 27 8:32 / /data rw - ext4 /dev/sdc rw\n")
    assert mount_of("/data/kafka", mounts, "8:32").mount_point == "/data"
    assert mount_of("/data/kafka", mounts, "8:16").mount_point == "/data/kafka"


def test_btrfs_is_followed_through_its_mount_source():
    system = FakeSystem(
        "30 1 0:45 /@ / rw - btrfs /dev/nvme0n1p2 rw\n",
        files={"/sys/devices/pci0/nvme/nvme0/nvme0n1/nvme0n1p2/dev": "259:2\n",
               "/sys/devices/pci0/nvme/nvme0/nvme0n1/nvme0n1p2/partition": "2\n",
               "/sys/devices/pci0/nvme/nvme0/nvme0n1/queue/rotational": "0\n"},
        links={"/sys/dev/block/259:2": "/sys/devices/pci0/nvme/nvme0/nvme0n1/nvme0n1p2"},
        devices={"/": "0:45", "/home": "0:52"},   # a subvolume: an st_dev of its own
        nodes={"/dev/nvme0n1p2": "259:2"}, existing={"/home/kafka"})
    result = probe_path("/home/kafka", system)
    assert (result["media"], result["reason"], result["root_fs"]) == (
        "ssd", "nvme0n1p2 → nvme0n1: nvme0n1 is not rotational", True)


def test_an_overlay_root_has_no_block_device():
    system = FakeSystem("600 500 0:50 / / rw - overlay overlay rw,lowerdir=/l\n", devices={"/": "0:50"},
                        existing={"/var/lib/kafka"})
    result = probe_path("/var/lib/kafka", system)
    assert (result["media"], result["reason"], result["root_fs"]) == (
        "unknown", "overlay at / has no block device", True)


def test_zram_says_not_rotational_and_counts_as_ssd():
    system = FakeSystem(
        ROOT_SDA + "40 27 252:0 / /fast rw - ext4 /dev/zram0 rw\n",
        files={**SDA_SSD, "/sys/devices/virtual/block/zram0/dev": "252:0\n",
               "/sys/devices/virtual/block/zram0/queue/rotational": "0\n"},
        links={**SDA_LINK, "/sys/dev/block/252:0": "/sys/devices/virtual/block/zram0"},
        devices={"/": "8:0", "/fast": "252:0"}, existing={"/fast"})
    assert probe_path("/fast", system)["reason"] == "zram0 is not rotational"


def test_a_device_missing_from_sys_is_unknown():
    system = FakeSystem(ROOT_SDA, devices={"/": "8:0"}, existing={"/data"})
    assert probe_path("/data", system)["reason"] == "no block device 8:0 in /sys/dev/block (ext4 at /)"


def test_mount_points_with_escaped_white_space():
    mounts = parse_mountinfo("40 27 8:16 / /mnt/my\\040disk rw shared:1 master:2 - ext4 /dev/sdb rw\n")
    assert (mounts[0].mount_point, mounts[0].source, mounts[0].fs_type) == ("/mnt/my disk", "/dev/sdb", "ext4")


def test_what_cannot_be_probed_is_unknown_with_the_reason():
    assert probe_path("data", FakeSystem(ROOT_SDA))["reason"] == "not an absolute path"
    assert probe_path("/data", FakeSystem(""))["reason"] == "cannot read /proc/self/mountinfo"


def test_a_probe_that_fails_still_answers():
    class Broken(FakeSystem):
        def realpath(self, path):
            raise RuntimeError("boom")

    result = probe_path("/data", Broken(ROOT_SDA, existing={"/data"}))
    assert (result["media"], result["reason"]) == ("unknown", "probe failed: RuntimeError: boom")
