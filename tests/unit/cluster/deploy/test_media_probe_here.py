"""The media probe on this machine, and what lets it run on any broker host.

It reads /proc and /sys only; run as the deploy runs it on a host
(`python3 -` with the source on standard input) and in this process.
"""

import ast
import json
import subprocess
import sys

from kafkactl.cluster.deploy.media import parse_probe_output, probe_command, probe_source
from kafkactl.cluster.deploy.media_probe import SSD, HDD, UNKNOWN, probe

PATHS = ["/", "/tmp", "/dev/shm", "/tmp/kafkactl-not-created-yet/logs"]
KEYS = {"path", "media", "reason", "exists", "probed", "mount_point", "fs_type", "source", "device", "disks",
        "root_fs"}


def check_well_formed(document):
    assert document["version"] == 1
    assert [entry["path"] for entry in document["paths"]] == PATHS
    for entry in document["paths"]:
        assert set(entry) == KEYS
        assert entry["media"] in (SSD, HDD, UNKNOWN) and entry["reason"]
        assert isinstance(entry["root_fs"], bool) and entry["mount_point"].startswith("/")
        assert all(disk["media"] in (SSD, HDD, UNKNOWN) for disk in entry["disks"])
    by_path = {entry["path"]: entry for entry in document["paths"]}
    assert by_path["/"]["root_fs"] is True and by_path["/"]["mount_point"] == "/"
    assert by_path["/tmp/kafkactl-not-created-yet/logs"]["exists"] is False


def test_the_probe_in_this_process():
    check_well_formed(probe(PATHS))


def test_the_probe_as_the_deploy_runs_it_on_a_host():
    command = probe_command(PATHS)
    run = subprocess.run(["/bin/sh", "-c", command.replace("python3", sys.executable, 1)], input=probe_source(),
                         capture_output=True, text=True, timeout=60, check=True)
    check_well_formed(json.loads(run.stdout))
    detected = parse_probe_output("here", run.stdout, PATHS)
    assert set(detected) == set(PATHS)


def test_it_imports_only_the_standard_library():
    tree = ast.parse(probe_source())
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert imported and imported <= set(sys.stdlib_module_names)


def test_it_keeps_to_python_3_6():
    # The oldest python3 a broker host may have (RHEL 8's). ast checks the
    # grammar of that version; the names below came later.
    tree = ast.parse(probe_source(), feature_version=(3, 6))
    later = {"annotations", "dataclasses", "removeprefix", "removesuffix", "capture_output"}
    used = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    used |= {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    used |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for alias in node.names}
    assert not used & later
