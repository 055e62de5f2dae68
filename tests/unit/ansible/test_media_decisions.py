"""The broker role decides each log dir's media as media.effective_media does:
the inventory's ssd/hdd wins (and a disagreeing detection is noted), auto
takes the detected media, and an auto that detection cannot tell fails the
host with the same one-line message naming the host and the dir.

The role's own variables (roles/broker/vars/main.yml) are evaluated by a
real ansible-playbook on this machine (connection local) from a probe answer
given as literal JSON, as media_probe.py prints it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from kafkactl.cluster.deploy.inventory import LogDir
from kafkactl.cluster.deploy.media import Decided, effective_media, parse_probe_output
from kafkactl.cluster.deploy.media_probe import VERSION

ROLES = Path(__file__).resolve().parents[3] / "ansible" / "roles"
ANSIBLE_TIMEOUT_S = 300

PLAYBOOK = f"""
- name: Decide the media of each host's log dirs
  hosts: all
  connection: local
  gather_facts: false
  vars_files:
    - {ROLES}/kafkactl/defaults/main.yml
    - {ROLES}/broker/vars/main.yml
  tasks:
    - name: Write the decisions
      ansible.builtin.copy:
        content: "{{{{ broker_decisions | to_json }}}}"
        dest: "{{{{ out }}}}/{{{{ inventory_hostname }}}}.json"
        mode: "0644"
"""


def probe_entry(path: str, media: str, reason: str, root_fs: bool = False) -> dict:
    return {"path": path, "media": media, "reason": reason, "exists": True, "mount_point": "/",
            "fs_type": "ext4", "device": "sda", "disks": [{"name": "sda", "media": media}], "root_fs": root_fs}


# host -> (log dirs as the inventory has them, the probe's entries in the same order)
CASES = {
    "overridden": ([{"path": "/a", "media": "ssd"}, {"path": "/b", "media": "hdd"}],
                   [probe_entry("/a", "hdd", "sda: sda is rotational"), probe_entry("/b", "hdd", "sdb")]),
    "detected": ([{"path": "/a"}, {"path": "/b", "media": "auto"}],
                 [probe_entry("/a", "ssd", "nvme0n1"), probe_entry("/b", "hdd", "sdb", root_fs=True)]),
    "undetectable": ([{"path": "/a", "media": "auto"}, {"path": "/t", "media": "ssd"}],
                     [probe_entry("/a", "unknown", "tmpfs has no block device"),
                      probe_entry("/t", "unknown", "tmpfs has no block device")]),
}


def test_decisions_are_effective_media_s(tmp_path):
    hosts = {}
    for host, (log_dirs, entries) in CASES.items():
        stdout = json.dumps({"version": VERSION, "paths": entries})
        hosts[host] = {"log_dirs": log_dirs, "broker_probe": {"stdout": stdout}}
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump({"all": {"children": {"brokers": {"hosts": hosts}}}}))
    (tmp_path / "decide.yml").write_text(PLAYBOOK)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(ANSIBLE_NOCOLOR="1", ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"))
    done = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "inventory.yml",
                           "decide.yml", "-e", f"out={tmp_path}", "-e", f"ansible_python_interpreter={sys.executable}"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=ANSIBLE_TIMEOUT_S)
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-2000:]

    for host, (log_dirs, entries) in CASES.items():
        decisions = json.loads((tmp_path / f"{host}.json").read_text())
        paths = [d["path"] for d in log_dirs]
        detected = parse_probe_output(host, json.dumps({"version": VERSION, "paths": entries}), paths)
        assert [d["path"] for d in decisions] == paths
        for decision, log_dir in zip(decisions, log_dirs):
            expected = effective_media(host, LogDir(log_dir["path"], log_dir.get("media", "auto")),
                                       detected[log_dir["path"]])
            if isinstance(expected, Decided):
                assert (decision["media"], decision["error"], decision["disagrees"]) == \
                    (expected.media, "", expected.disagrees), (host, log_dir)
            else:
                assert (decision["media"], decision["error"]) == ("", expected.error), (host, log_dir)
            assert decision["root_fs"] == detected[log_dir["path"]].root_fs
    # the cases cover each outcome
    undetectable = json.loads((tmp_path / "undetectable.json").read_text())
    assert undetectable[0]["error"].startswith("host undetectable: log_dirs /a: media is auto")
    assert json.loads((tmp_path / "overridden.json").read_text())[0]["disagrees"] is True
