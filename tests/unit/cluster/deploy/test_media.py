import json

import pytest

from kafkactl.cluster.deploy.inventory import LogDir
from kafkactl.cluster.deploy.media import (
    Decided, DetectedMedia, Disk, MediaError, Undecided, effective_media, parse_probe_output, probe_command,
    root_fs_warning,
)


def detected(media, reason, root_fs=False, path="/data/kafka"):
    return DetectedMedia(path, media, reason, True, "/data", "ext4", "sdb", (Disk("sdb", media),), root_fs)


# --- effective_media

def test_auto_takes_the_detected_media():
    decision = effective_media("k1", LogDir("/data/kafka", "auto"), detected("ssd", "sdb is not rotational"))
    assert decision == Decided("ssd", "detected ssd: sdb is not rotational")


def test_the_inventory_overrides_detection_and_says_when_they_disagree():
    decision = effective_media("k1", LogDir("/data/kafka", "hdd"), detected("ssd", "sdb is not rotational"))
    assert decision == Decided("hdd", "hdd as the inventory says (detected ssd: sdb is not rotational)", True)
    same = effective_media("k1", LogDir("/data/kafka", "ssd"), detected("ssd", "sdb is not rotational"))
    assert same.disagrees is False


def test_the_inventorys_media_needs_no_detection():
    assert effective_media("k1", LogDir("/d", "ssd"), None) == Decided("ssd", "ssd as the inventory says (not detected)")


def test_an_override_of_an_unknown_media_does_not_disagree():
    decision = effective_media("k1", LogDir("/d", "ssd"), detected("unknown", "tmpfs at /d has no block device"))
    assert decision == Decided("ssd", "ssd as the inventory says (detected unknown: tmpfs at /d has no block "
                                      "device)", False)


def test_auto_with_unknown_media_is_not_guessed():
    decision = effective_media("k1", LogDir("/dev/shm/kafka", "auto"),
                               detected("unknown", "tmpfs at /dev/shm has no block device", path="/dev/shm/kafka"))
    assert decision == Undecided("host k1: log_dirs /dev/shm/kafka: media is auto, and it cannot be detected "
                                 "(tmpfs at /dev/shm has no block device); set media: ssd or hdd for it in the "
                                 "inventory")


def test_auto_without_a_detection_is_undecided():
    assert effective_media("k1", LogDir("/d"), None) == Undecided(
        "host k1: log_dirs /d: media is auto but was not detected")


# --- the root file system

def test_a_log_dir_on_the_root_file_system_is_warned_about():
    warning = root_fs_warning("k1", detected("hdd", "sda is rotational", root_fs=True, path="/var/lib/kafka"))
    assert warning == ("host k1: log dir /var/lib/kafka is on the root file system (sdb): when it fills up, so "
                       "does /, and the host's own services fail")
    assert root_fs_warning("k1", detected("hdd", "sdb is rotational")) is None


# --- the probe's answer

ANSWER = {"version": 1, "paths": [{
    "path": "/data/kafka", "media": "hdd", "reason": "md0 spans sdb, sdc; sdc is rotational, and the slowest "
    "device decides", "exists": False, "probed": "/data", "mount_point": "/data", "fs_type": "xfs",
    "source": "/dev/md0", "device": "md0", "disks": [{"name": "sdb", "media": "ssd"}, {"name": "sdc", "media": "hdd"}],
    "root_fs": False}]}


def test_the_probes_json_becomes_detected_media_by_path():
    result = parse_probe_output("k1", json.dumps(ANSWER), ["/data/kafka"])
    assert result == {"/data/kafka": DetectedMedia(
        "/data/kafka", "hdd", "md0 spans sdb, sdc; sdc is rotational, and the slowest device decides", False,
        "/data", "xfs", "md0", (Disk("sdb", "ssd"), Disk("sdc", "hdd")), False)}


@pytest.mark.parametrize("text, words", [
    ("Traceback (most recent call last):", "did not print JSON: 'Traceback (most recent call last):'"),
    ('{"version": 2, "paths": []}', "an answer of another version"),
    ('{"version": 1}', "has no paths"),
    ('{"version": 1, "paths": [{"path": "/data/kafka", "media": "fast"}]}', "malformed"),
    ('{"version": 1, "paths": []}', "answered for 0 paths, not 1"),
])
def test_an_answer_that_cannot_be_used_names_the_host(text, words):
    with pytest.raises(MediaError) as caught:
        parse_probe_output("k1", text, ["/data/kafka"])
    assert str(caught.value).startswith("host k1: ") and words in str(caught.value)


def test_the_command_quotes_paths_for_the_remote_shell():
    assert probe_command(["/data/my disk", "/d"]) == "python3 - '/data/my disk' /d"
