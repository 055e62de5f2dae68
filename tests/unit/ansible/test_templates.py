"""The roles' templates render what render.py renders, for inventories the
SSH-host tests do not cover: a standalone ZooKeeper, no broker_config, no
rack, a "*" four-letter-word list, a host's own broker_config, value kinds
(floats, booleans written as strings, yes/no keys, integers with leading
zeros), and the systemd unit with every kind of quoting (systemd cannot run
on the test hosts, so this is where the unit is checked).

A real ansible-playbook renders the roles' own templates with the roles'
own variables on this machine (connection local: no host is contacted),
each inventory host into its own directory.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kafkactl.cluster.deploy import render
from kafkactl.cluster.deploy.inventory import load_inventory
from kafkactl.cluster.deploy.layout import HostLayout

ROLES = Path(__file__).resolve().parents[3] / "ansible" / "roles"
ANSIBLE_TIMEOUT_S = 300
RELEASE = "0.1.0-0123456789ab"
JAVA = "/usr/bin/java"
CLASSPATH = ["/etc/zookeeper/conf", "/usr/share/java/zookeeper.jar", "/usr/share/java/slf4j-simple.jar"]
LAYOUT = HostLayout()

STANDALONE = {"all": {"children": {
    "zookeeper": {"vars": {"zookeeper_config": {"4lw.commands.whitelist": "*", "skipACL": "no",
                                                "localSessionsEnabled": True, "snapCount": "0010"}},
                  "hosts": {"zk": {"ansible_host": "10.0.0.1", "zookeeper_id": 7}}},
    "brokers": {"hosts": {
        "b1": {"ansible_host": "10.0.0.2", "broker_id": 0, "log_dirs": [{"path": "/data/a", "media": "ssd"}]},
        "b2": {"ansible_host": "b2.example.com", "broker_id": 2147483647,
               "log_dirs": [{"path": "/data/a"}, {"path": "/data/b", "media": "hdd"}]},
    }},
}}}
TYPED = {"all": {"children": {
    "zookeeper": {"hosts": {"z1": {"ansible_host": "10.0.1.1", "zookeeper_id": 1},
                            "z2": {"ansible_host": "10.0.1.2", "zookeeper_id": 2},
                            "z3": {"ansible_host": "10.0.1.3", "zookeeper_id": 3}}},
    "brokers": {
        "vars": {"broker_config": {"log.cleaner.min.cleanable.ratio": 0.25, "auto.create.topics.enable": True,
                                   "log.retention.hours": 1, "compression.type": "lz4"}},
        "hosts": {
            "z1": {"broker_id": 1, "rack": 1, "log_dirs": [{"path": "/kafka"}]},
            "z2": {"broker_id": 2, "rack": "two", "log_dirs": [{"path": "/kafka"}],
                   "broker_config": {"num.partitions": 12}},
        }},
}}}

PLAYBOOK = """
- name: Render the roles' templates here
  hosts: all
  connection: local
  gather_facts: false
  vars_files:
    - {roles}/kafkactl/defaults/main.yml
    - {roles}/zookeeper/defaults/main.yml
    - {roles}/zookeeper/vars/main.yml
    - {roles}/broker/defaults/main.yml
    - {roles}/broker/vars/main.yml
  tasks:
    - name: Set what the preflight tasks find on a host
      ansible.builtin.set_fact:
        kafkactl_release_name: {release}
        zookeeper_java_path: {java}
        zookeeper_slf4j_present: true
        broker_media: "{{{{ media_by_host[inventory_hostname] | default({{}}) }}}}"
        # the digests of the files as written: render.py's, given (the SSH-host test checks the real ones)
        zookeeper_cfg_stat: {{stat: {{checksum: "{{{{ digests[inventory_hostname].zookeeper | default('') }}}}"}}}}
        broker_properties_stat: {{stat: {{checksum: "{{{{ digests[inventory_hostname].broker | default('') }}}}"}}}}
    - name: Make the host's directory
      ansible.builtin.file:
        path: "{{{{ out }}}}/{{{{ inventory_hostname }}}}"
        state: directory
        mode: "0755"
    - name: Render zoo.cfg and the ZooKeeper unit
      ansible.builtin.template:
        src: "{{{{ item.src }}}}"
        dest: "{{{{ out }}}}/{{{{ inventory_hostname }}}}/{{{{ item.dest }}}}"
        mode: "0644"
      loop:
        - {{src: {roles}/zookeeper/templates/zoo.cfg.j2, dest: zoo.cfg}}
        - {{src: {roles}/kafkactl/templates/systemd.service.j2, dest: zookeeper.service}}
      vars:
        kafkactl_unit: "{{{{ zookeeper_service_definition }}}}"
      when: inventory_hostname in groups['zookeeper']
    - name: Render server.properties and the broker unit
      ansible.builtin.template:
        src: "{{{{ item.src }}}}"
        dest: "{{{{ out }}}}/{{{{ inventory_hostname }}}}/{{{{ item.dest }}}}"
        mode: "0644"
      loop:
        - {{src: {roles}/broker/templates/server.properties.j2, dest: server.properties}}
        - {{src: {roles}/kafkactl/templates/systemd.service.j2, dest: broker.service}}
      vars:
        kafkactl_unit: "{{{{ broker_service_definition }}}}"
      when: inventory_hostname in groups['brokers']
    - name: Render the unit of a definition with every kind of quoting
      ansible.builtin.template:
        src: {roles}/kafkactl/templates/systemd.service.j2
        dest: "{{{{ out }}}}/quoted.service"
        mode: "0644"
      vars:
        kafkactl_unit: "{{{{ quoted_definition }}}}"
      run_once: true
"""

QUOTED = render.ServiceDefinition(
    service="broker", description="a broker", release=RELEASE, cwd="/var/lib/kafkactl",
    argv=("/opt/x y/python", "-c", 'print("100%", \'$HOME\', "a\\\\b", "c\\d")', "--flag=a,b", "", "plain/path-1.2:3@4+5"),
    log_file="/var/lib/kafkactl/logs/broker.log", stop_timeout_s=180,
    env={"Z_LAST": "1", "A_FIRST": "two words", "A1": "%d$x"},
)


def render_with_ansible(tmp_path: Path, inventory: dict, media_by_host: dict) -> Path:
    inventory_path = tmp_path / "inventory.yml"
    inventory_path.write_text(yaml.safe_dump(inventory, sort_keys=False))
    digests = config_digests(inventory_path, media_by_host)
    playbook = tmp_path / "render.yml"
    playbook.write_text(PLAYBOOK.format(roles=ROLES, release=RELEASE, java=JAVA))
    out = tmp_path / "out"
    extra = tmp_path / "extra.json"
    definition = {**json.loads(QUOTED.to_json())}
    extra.write_text(json.dumps({"out": str(out), "media_by_host": media_by_host, "quoted_definition": definition,
                                 "digests": digests,
                                 "ansible_python_interpreter": sys.executable}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(ANSIBLE_NOCOLOR="1", ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"),
               ANSIBLE_REMOTE_TEMP=str(tmp_path / "ansible-remote-tmp"))
    done = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory_path),
                           str(playbook), "-e", f"@{extra}"], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=ANSIBLE_TIMEOUT_S)
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-2000:]
    return out


def config_digests(inventory_path: Path, media_by_host: dict) -> dict[str, dict[str, str]]:
    """host -> {"zookeeper": sha256 of its zoo.cfg, "broker": of its server.properties}."""
    files = expected_files(inventory_path, media_by_host)
    digests: dict[str, dict[str, str]] = {}
    for name, text in files.items():
        host, _, file = name.partition("/")
        kind = {"zoo.cfg": "zookeeper", "server.properties": "broker"}.get(file)
        if kind:
            digests.setdefault(host, {})[kind] = hashlib.sha256(text.encode()).hexdigest()
    return digests


def expected_files(inventory_path: Path, media_by_host: dict) -> dict[str, str]:
    inventory = load_inventory(str(inventory_path), readable=lambda path: True)
    files = {}
    for host in inventory.zookeeper:
        zoo_cfg = render.zoo_cfg(inventory, host, LAYOUT)
        files[f"{host.name}/zoo.cfg"] = zoo_cfg
        definition = render.zookeeper_service(LAYOUT, RELEASE, JAVA, CLASSPATH, zoo_cfg)
        files[f"{host.name}/zookeeper.service"] = render.systemd_unit(definition)
    for broker in inventory.brokers:
        properties = render.server_properties(inventory, broker, media_by_host[broker.name])
        files[f"{broker.name}/server.properties"] = properties
        files[f"{broker.name}/broker.service"] = render.systemd_unit(render.broker_service(LAYOUT, RELEASE, properties))
    files["quoted.service"] = render.systemd_unit(QUOTED)
    return files


@pytest.mark.parametrize("inventory, media_by_host", [
    (STANDALONE, {"b1": {"/data/a": "ssd"}, "b2": {"/data/a": "ssd", "/data/b": "hdd"}}),
    (TYPED, {"z1": {"/kafka": "hdd"}, "z2": {"/kafka": "ssd"}}),
], ids=["standalone", "typed"])
def test_templates_render_what_render_py_renders(tmp_path, inventory, media_by_host):
    out = render_with_ansible(tmp_path, inventory, media_by_host)
    expected = expected_files(tmp_path / "inventory.yml", media_by_host)
    rendered = {str(path.relative_to(out)): path.read_text() for path in out.rglob("*") if path.is_file()}
    assert sorted(rendered) == sorted(expected)
    for name, text in expected.items():
        assert rendered[name] == text, name
