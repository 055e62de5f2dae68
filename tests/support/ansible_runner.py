"""Running this repository's playbooks (ansible/) with the venv's real ansible-playbook.

- `write_inventory`: an Ansible YAML inventory of SSH test hosts
  (support/ssh_hosts.py), each in both groups, logging in with the hosts' key
  and strict host key checking against a given known_hosts file.
- `run_playbook`: ansible-playbook from ansible/ (so ansible/ansible.cfg
  applies) with a deadline; the whole output goes to a file, and a bounded
  tail of it is kept for failure messages.
- `play_recap`, `changed_hosts` (pure): what the output says, for the tests'
  assertions: the PLAY RECAP counts of each host, and which hosts a task
  changed, in the order of the output.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from support.ssh_hosts import SshHost

ROOT = Path(__file__).resolve().parents[2]
ANSIBLE_DIR = ROOT / "ansible"
PLAYBOOK_TIMEOUT_S = 600.0
OUTPUT_TAIL_CHARS = 20_000
MAX_OUTPUT_BYTES = 20 * 1024 * 1024

_RECAP_LINE = re.compile(r"^(\S+)\s+:\s+((?:\w+=\d+\s*)+)$")
_TASK_LINE = re.compile(r"^(?:TASK|RUNNING HANDLER) \[(.+?)\] \**$")
_CHANGED_LINE = re.compile(r"^changed: \[([^\]\s]+)")


@dataclass(frozen=True)
class PlaybookRun:
    returncode: int
    output: str          # the whole output, as ansible-playbook printed it
    log_path: Path

    @property
    def tail(self) -> str:
        return self.output[-OUTPUT_TAIL_CHARS:]

    def recap(self) -> dict[str, dict[str, int]]:
        return play_recap(self.output)


def write_inventory(path: Path, hosts: Sequence[SshHost], known_hosts: Path, *,
                    broker_vars: Mapping[str, Any] | None = None,
                    zookeeper_vars: Mapping[str, Any] | None = None,
                    host_vars: Mapping[str, Mapping[str, Any]] | None = None) -> Path:
    """Every host runs a ZooKeeper server (zookeeper_id i+1) and a broker
    (broker_id i+1, log dirs at its disks, media auto). `*_vars` are the
    groups' vars; `host_vars` adds to (or replaces) a host's own."""
    ssh_args = (f"-o UserKnownHostsFile={known_hosts} -o GlobalKnownHostsFile=/dev/null "
                "-o StrictHostKeyChecking=yes -o IdentitiesOnly=yes -o ConnectTimeout=10")
    brokers = {}
    for i, host in enumerate(hosts):
        own = {"ansible_host": host.address, "ansible_port": host.port, "broker_id": i + 1,
               "log_dirs": [{"path": disk.path, "media": "auto"} for disk in host.disks]}
        own.update((host_vars or {}).get(host.name, {}))
        brokers[host.name] = own
    inventory = {"all": {
        "vars": {"ansible_user": hosts[0].user, "ansible_ssh_private_key_file": str(hosts[0].private_key),
                 "ansible_ssh_common_args": ssh_args},
        "children": {
            "zookeeper": {"vars": dict(zookeeper_vars or {}),
                          "hosts": {host.name: {"zookeeper_id": i + 1} for i, host in enumerate(hosts)}},
            "brokers": {"vars": dict(broker_vars or {}), "hosts": brokers},
        },
    }}
    path.write_text(yaml.safe_dump(inventory, sort_keys=False))
    return path


def run_playbook(playbook: str, inventory: Path, work_dir: Path, *, extra_vars: Mapping[str, str] | None = None,
                 timeout_s: float = PLAYBOOK_TIMEOUT_S) -> PlaybookRun:
    """ansible-playbook PLAYBOOK from ansible/, its output in work_dir/<playbook>.<n>.log."""
    work_dir.mkdir(parents=True, exist_ok=True)
    log_path = _next_log(work_dir, playbook)
    argv = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory), playbook]
    for name, value in (extra_vars or {}).items():
        argv += ["-e", f"{name}={value}"]
    # ssh's control sockets in a short directory of their own: a socket path
    # has a length limit, and pytest's temporary paths are long.
    with tempfile.TemporaryDirectory(prefix="kans") as control_dir, open(log_path, "wb") as log:
        env = {**_clean_environment(), "ANSIBLE_SSH_CONTROL_PATH_DIR": control_dir,
               "ANSIBLE_LOCAL_TEMP": str(work_dir / "ansible-tmp"), "ANSIBLE_NOCOLOR": "1",
               "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_RETRY_FILES_ENABLED": "0"}
        try:
            done = subprocess.run(argv, cwd=ANSIBLE_DIR, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                  stderr=subprocess.STDOUT, timeout=timeout_s)
            returncode = done.returncode
        except subprocess.TimeoutExpired:
            returncode = -1
    with open(log_path, "rb") as log:
        output = log.read(MAX_OUTPUT_BYTES).decode(errors="replace")
    if returncode == -1:
        output += f"\n(ansible-playbook did not finish within {timeout_s:g} s and was killed)\n"
    return PlaybookRun(returncode, output, log_path)


def _next_log(work_dir: Path, playbook: str) -> Path:
    for n in range(1, 1000):
        path = work_dir / f"{Path(playbook).stem}.{n}.log"
        if not path.exists():
            return path
    raise RuntimeError(f"{work_dir}: too many playbook logs")


def _clean_environment() -> dict[str, str]:
    """The test's environment without ANSIBLE_* settings of the machine, and
    with the venv's bin first on the PATH (ansible-playbook's own tools)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '/usr/bin:/bin')}"
    return env


def play_recap(output: str) -> dict[str, dict[str, int]]:
    """The counts of the last PLAY RECAP, by host: {"h1": {"ok": 5, "changed": 0, ...}}."""
    recap: dict[str, dict[str, int]] = {}
    lines = output.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("PLAY RECAP")]
    if not starts:
        return recap
    for line in lines[starts[-1] + 1:]:
        match = _RECAP_LINE.match(line.strip())
        if match is None:
            if recap:
                break
            continue
        recap[match.group(1)] = {k: int(v) for k, v in (pair.split("=") for pair in match.group(2).split())}
    return recap


def changed_hosts(output: str, task: str) -> list[str]:
    """The hosts that task `task` (as printed between the brackets, e.g.
    "kafkactl : Restart the service under the supervisor") changed, in the
    order of the output; a host once per time the task changed it."""
    hosts, current = [], None
    for line in output.splitlines():
        match = _TASK_LINE.match(line.strip())
        if match is not None:
            current = match.group(1)
            continue
        if line.startswith(("PLAY ", "PLAY RECAP")):
            current = None
        changed = _CHANGED_LINE.match(line)
        if changed is not None and current == task:
            hosts.append(changed.group(1))
    return hosts
