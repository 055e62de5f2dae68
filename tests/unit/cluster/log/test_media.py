import os

import pytest

from kafkactl.cluster.log.media import detect_media_class, probe_media


def fake_sysfs(root, path, rotational, partition):
    """A /sys tree where `path`'s device is sdz (or its partition sdz1)."""
    st_dev = os.stat(path).st_dev
    disk = os.path.join(root, "devices", "pci0", "block", "sdz")
    device = os.path.join(disk, "sdz1") if partition else disk
    os.makedirs(device, exist_ok=True)
    if partition:
        with open(os.path.join(device, "partition"), "w") as file:
            file.write("1\n")
    if rotational is not None:
        os.makedirs(os.path.join(disk, "queue"), exist_ok=True)
        with open(os.path.join(disk, "queue", "rotational"), "w") as file:
            file.write(f"{rotational}\n")
    links = os.path.join(root, "dev", "block")
    os.makedirs(links, exist_ok=True)
    os.symlink(device, os.path.join(links, f"{os.major(st_dev)}:{os.minor(st_dev)}"))


@pytest.mark.parametrize("rotational, partition, expected", [
    (0, False, "ssd"), (1, False, "hdd"), (0, True, "ssd"), (1, True, "hdd"),
])
def test_rotational_flag_of_the_disk(tmp_path, rotational, partition, expected):
    sys_root = os.path.join(tmp_path, "sys")
    fake_sysfs(sys_root, tmp_path, rotational, partition)
    probe = probe_media(str(tmp_path), sys_root)
    assert probe.media_class == expected
    assert "sdz" in probe.reason
    assert detect_media_class(str(tmp_path), sys_root=sys_root) == expected


def test_unknown_device_is_hdd_with_a_reason(tmp_path):
    probe = probe_media(str(tmp_path), os.path.join(tmp_path, "empty-sys"))
    assert probe.media_class == "hdd" and "no block device" in probe.reason
    sys_root = os.path.join(tmp_path, "sys")
    fake_sysfs(sys_root, tmp_path, None, False)
    probe = probe_media(str(tmp_path), sys_root)
    assert probe.media_class == "hdd" and "cannot read" in probe.reason


def test_override_wins(tmp_path):
    assert detect_media_class(str(tmp_path), override="ssd") == "ssd"
    with pytest.raises(ValueError):
        detect_media_class(str(tmp_path), override="nvme")


def test_real_machine_answers_something(tmp_path):
    assert probe_media(str(tmp_path)).media_class in ("ssd", "hdd")
