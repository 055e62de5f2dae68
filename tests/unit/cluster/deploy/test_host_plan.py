"""host_plan.py: what an install changes on a host, from literal facts."""

from __future__ import annotations

import hashlib

from kafkactl.cluster.deploy import render
from kafkactl.cluster.deploy.host_plan import (
    InstallRelease, MakeDirs, PointCurrent, Release, ReloadSystemd, RemoveReleases, WriteFile, facts_request,
    has_changes, plan_host,
)
from kafkactl.cluster.deploy.inventory import parse_inventory
from kafkactl.cluster.deploy.layout import HostLayout
from kafkactl.cluster.deploy.media import DetectedMedia

INVENTORY = """
all:
  children:
    zookeeper:
      hosts:
        a: {ansible_host: 10.0.0.1, zookeeper_id: 1}
    brokers:
      hosts:
        a:
          broker_id: 1
          log_dirs: [{path: /data/ssd0/kafka}, {path: /data/hdd0/kafka, media: hdd}]
        b:
          ansible_host: 10.0.0.2
          broker_id: 2
          log_dirs: [{path: /data/k}]
"""
NEW, OLD, OLDER = "0.2.0-bbbbbbbbbbbb", "0.1.0-aaaaaaaaaaaa", "0.0.9-999999999999"
LAYOUT = HostLayout()


def release(problem=None):
    return Release(NEW, (("kafkactl-0.2.0-cp311.whl", "ab" * 32, 2_000_000), ("kio.whl", "cd" * 32, 500_000)),
                   "", lambda version, machine, glibc: problem)


def inventory():
    return parse_inventory(INVENTORY, "inv.yml", readable=lambda path: True)


def detected(path, media="ssd", root_fs=False):
    return DetectedMedia(path=path, media=media, reason=f"{media} disk", exists=True, mount_point="/data",
                         fs_type="ext4", device="sdb", disks=(), root_fs=root_fs)


def facts(**changes):
    base = {
        "python": {"executable": "/usr/bin/python3", "version": "3.11.2", "venv": True}, "machine": "x86_64",
        "systemd": False, "java": "/usr/bin/java", "jars": {"/usr/share/java/zookeeper.jar": True},
        "files": {}, "releases": {}, "current": None, "in_use": [],
        "dirs": [{"path": "/data/ssd0/kafka", "exists": False, "is_dir": False, "writable": True, "read_only": False},
                 {"path": "/data/hdd0/kafka", "exists": True, "is_dir": True, "writable": True, "read_only": False}],
    }
    return {**base, **changes}


MEDIA = {"/data/ssd0/kafka": detected("/data/ssd0/kafka"), "/data/hdd0/kafka": detected("/data/hdd0/kafka", "hdd")}


def test_a_fresh_host_gets_the_release_dirs_files_and_current():
    plan = plan_host(inventory(), "a", facts(), MEDIA, release(), LAYOUT)
    assert plan.problems == () and plan.roles == ("zookeeper", "broker")
    kinds = [type(step) for step in plan.steps]
    assert kinds[:2] == [InstallRelease, MakeDirs] and kinds[-1] == PointCurrent
    assert "/data/ssd0/kafka" in plan.steps[1].paths and "/data/hdd0/kafka" not in plan.steps[1].paths
    written = {step.path: step for step in plan.steps if isinstance(step, WriteFile)}
    assert set(written) == {LAYOUT.zoo_cfg, LAYOUT.myid, LAYOUT.server_properties,
                            LAYOUT.service_definition("zookeeper"), LAYOUT.service_definition("broker")}
    assert b"log.dir.media=/data/ssd0/kafka:ssd,/data/hdd0/kafka:hdd" in written[LAYOUT.server_properties].content
    assert NEW.encode() in written[LAYOUT.service_definition("broker")].content
    assert plan.steps[0].describe() == f"install release {NEW} (2 wheels, 2.5 MB)"


def test_a_host_that_has_everything_needs_no_change():
    first = plan_host(inventory(), "a", facts(), MEDIA, release(), LAYOUT)
    files = {step.path: hashlib.sha256(step.content).hexdigest() for step in first.steps if isinstance(step, WriteFile)}
    again = plan_host(inventory(), "a", facts(files=files, releases={NEW: True}, current=NEW), MEDIA, release(), LAYOUT)
    assert not has_changes(again) and [type(s) for s in again.steps] == [MakeDirs]


def test_a_changed_file_is_rewritten_and_an_incomplete_release_reinstalled():
    first = plan_host(inventory(), "b", facts(dirs=[]), {"/data/k": detected("/data/k")}, release(), LAYOUT)
    files = {step.path: hashlib.sha256(step.content).hexdigest() for step in first.steps if isinstance(step, WriteFile)}
    files[LAYOUT.server_properties] = "0" * 64
    plan = plan_host(inventory(), "b", facts(dirs=[], files=files, releases={NEW: False}, current=NEW),
                     {"/data/k": detected("/data/k")}, release(), LAYOUT)
    assert [step.describe() for step in plan.steps if not isinstance(step, MakeDirs)] == [
        f"install release {NEW} (2 wheels, 2.5 MB)", f"update {LAYOUT.server_properties}"]


def test_problems_stop_the_host_and_name_it():
    cases = [
        (facts(python={"executable": None}), "host a: no python3 on the PATH"),
        (facts(python={"executable": "/usr/bin/python3", "version": "3.9.2", "venv": True}),
         "host a: python3 is 3.9.2; kafkactl needs 3.11 or later"),
        (facts(python={"executable": "/usr/bin/python3", "version": "3.11.2", "venv": False}),
         "host a: python3 3.11.2 has no venv module"),
        (facts(java=None), "host a: no java on the PATH"),
        (facts(jars={}), "host a: no /usr/share/java/zookeeper.jar"),
        (facts(dirs=[{"path": "/data/hdd0/kafka", "exists": True, "is_dir": True, "writable": False,
                      "read_only": True}]), "host a: log dir /data/hdd0/kafka is on a read-only file system"),
        (facts(dirs=[{"path": "/data/ssd0/kafka", "exists": False, "is_dir": False, "writable": False,
                      "read_only": False}]), "host a: log dir /data/ssd0/kafka: cannot write to the parent of"),
        (facts(dirs=[{"path": "/data/ssd0/kafka", "exists": True, "is_dir": False, "writable": True,
                      "read_only": False}]), "host a: log dir /data/ssd0/kafka exists and is not a directory"),
    ]
    for host_facts, expected in cases:
        plan = plan_host(inventory(), "a", host_facts, MEDIA, release(), LAYOUT)
        assert plan.steps == () and any(problem.startswith(expected) for problem in plan.problems), plan.problems
    plan = plan_host(inventory(), "a", facts(), MEDIA, release("wheels are for cp312, python3 is 3.11"), LAYOUT)
    assert plan.problems == ("host a: wheels are for cp312, python3 is 3.11",)


def test_undetectable_auto_media_is_a_problem_and_root_fs_a_warning():
    media = {"/data/ssd0/kafka": detected("/data/ssd0/kafka", "unknown"),
             "/data/hdd0/kafka": detected("/data/hdd0/kafka", "ssd", root_fs=True)}
    plan = plan_host(inventory(), "a", facts(), media, release(), LAYOUT)
    assert plan.problems and "set media: ssd or hdd" in plan.problems[0]
    assert any("root file system" in w for w in plan.warnings)
    assert any("hdd as the inventory says (detected ssd" in w for w in plan.warnings)   # disagreement


def test_systemd_hosts_get_units_and_a_reload():
    plan = plan_host(inventory(), "b", facts(dirs=[], systemd=True), {"/data/k": detected("/data/k")}, release(),
                     LAYOUT)
    units = [s.path for s in plan.steps if isinstance(s, WriteFile) and s.path.startswith("/etc/systemd")]
    assert units == ["/etc/systemd/system/kafkactl-broker.service"]
    assert ReloadSystemd(("kafkactl-broker.service",)) in plan.steps
    request = facts_request(inventory(), "b", LAYOUT)
    assert "/etc/systemd/system/kafkactl-broker.service" in request["files"] and request["dirs"] == ["/data/k"]


def test_old_releases_go_except_the_previous_and_those_in_use():
    installed = {OLDER: True, OLD: True, NEW: True, "0.0.1-111111111111": True}
    plan = plan_host(inventory(), "b", facts(dirs=[], releases=installed, current=OLD, in_use=[OLDER]),
                     {"/data/k": detected("/data/k")}, release(), LAYOUT)
    assert RemoveReleases(("0.0.1-111111111111",)) in plan.steps


def test_rendered_server_properties_is_what_render_gives():
    plan = plan_host(inventory(), "b", facts(dirs=[]), {"/data/k": detected("/data/k", "hdd")}, release(), LAYOUT)
    inv = inventory()
    written = next(s for s in plan.steps if isinstance(s, WriteFile) and s.path == LAYOUT.server_properties)
    assert written.content == render.server_properties(inv, inv.brokers[1], {"/data/k": "hdd"}).encode()
