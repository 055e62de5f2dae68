"""render.py: the files the deploy writes, from literal inventories."""

from __future__ import annotations

import hashlib
import json

import pytest

from kafkactl.cluster.broker.config import from_properties
from kafkactl.cluster.deploy import render
from kafkactl.cluster.deploy.inventory import parse_inventory
from kafkactl.cluster.deploy.layout import HostLayout

INVENTORY = """
all:
  children:
    zookeeper:
      vars:
        zookeeper_config: {tickTime: 3000, 4lw.commands.whitelist: "mntr,conf"}
      hosts:
        a: {ansible_host: 10.0.0.1, zookeeper_id: 1}
        b: {ansible_host: 10.0.0.2, zookeeper_id: 2}
        c: {ansible_host: 10.0.0.3, zookeeper_id: 3}
    brokers:
      vars:
        broker_config: {num.partitions: 6, auto.create.topics.enable: false}
      hosts:
        a:
          broker_id: 1
          rack: r1
          log_dirs: [{path: /data/ssd0/kafka, media: ssd}, {path: /data/hdd0/kafka}]
"""
RELEASE = "0.1.0-0123456789ab"


def inventory(text: str = INVENTORY):
    return parse_inventory(text, "inv.yml", readable=lambda path: True)


def properties(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#"))


def test_server_properties_sets_the_managed_keys_from_the_host_and_the_broker_reads_them():
    inv = inventory()
    text = render.server_properties(inv, inv.brokers[0], {"/data/ssd0/kafka": "ssd", "/data/hdd0/kafka": "hdd"})
    values = properties(text)
    assert values["broker.id"] == "1"
    assert values["log.dir.media"] == "/data/ssd0/kafka:ssd,/data/hdd0/kafka:hdd"
    assert values["zookeeper.connect"] == "10.0.0.1:2181,10.0.0.2:2181,10.0.0.3:2181"
    assert values["advertised.listeners"] == "PLAINTEXT://10.0.0.1:9092"
    assert values["num.partitions"] == "6" and values["auto.create.topics.enable"] == "false"
    config, _warnings = from_properties(values)
    assert config.broker_id == 1 and config.broker_rack == "r1"
    assert config.log_dir_media == {"/data/ssd0/kafka": "ssd", "/data/hdd0/kafka": "hdd"}


def test_server_properties_refuses_a_log_dir_without_decided_media():
    inv = inventory()
    with pytest.raises(ValueError, match="host a: no media decided for log dir /data/hdd0/kafka"):
        render.server_properties(inv, inv.brokers[0], {"/data/ssd0/kafka": "ssd", "/data/hdd0/kafka": "auto"})


def test_the_same_inventory_renders_the_same_bytes_wherever_it_is_read_from():
    first, second = inventory(), parse_inventory(INVENTORY, "/elsewhere/inv.yml", readable=lambda path: True)
    media = {"/data/ssd0/kafka": "ssd", "/data/hdd0/kafka": "hdd"}
    assert render.server_properties(first, first.brokers[0], media) == \
        render.server_properties(second, second.brokers[0], media)
    assert render.zoo_cfg(first, first.zookeeper[1], HostLayout()) == \
        render.zoo_cfg(second, second.zookeeper[1], HostLayout())


def test_zoo_cfg_lists_the_ensemble_and_keeps_the_words_the_rolling_restart_needs():
    inv = inventory()
    values = properties(render.zoo_cfg(inv, inv.zookeeper[1], HostLayout(data_root="/d")))
    assert values["tickTime"] == "3000"
    assert values["dataDir"] == "/d/zookeeper" and values["clientPort"] == "2181"
    assert [values[f"server.{n}"] for n in (1, 2, 3)] == \
        ["10.0.0.1:2888:3888", "10.0.0.2:2888:3888", "10.0.0.3:2888:3888"]
    assert values["4lw.commands.whitelist"] == "mntr,conf,ruok,srvr"
    assert render.myid(inv.zookeeper[1]) == "2\n"


def test_a_single_zookeeper_server_runs_standalone():
    text = INVENTORY.replace("        b: {ansible_host: 10.0.0.2, zookeeper_id: 2}\n", "") \
                    .replace("        c: {ansible_host: 10.0.0.3, zookeeper_id: 3}\n", "")
    inv = inventory(text)
    assert not [line for line in render.zoo_cfg(inv, inv.zookeeper[0], HostLayout()).splitlines()
                if line.startswith("server.")]


def test_services_run_from_their_release_not_from_current():
    layout = HostLayout()
    broker = render.broker_service(layout, RELEASE, "broker.id=1\n")
    assert broker.argv[0] == f"/opt/kafkactl/versions/{RELEASE}/venv/bin/python"
    assert json.loads(broker.to_json())["argv"][-1] == "/opt/kafkactl/etc/server.properties"
    zookeeper = render.zookeeper_service(layout, RELEASE, "/usr/bin/java", ["/usr/share/java/zookeeper.jar"],
                                         "tickTime=2000\n")
    assert zookeeper.argv[-2:] == ("org.apache.zookeeper.server.quorum.QuorumPeerMain", "/opt/kafkactl/etc/zoo.cfg")
    with pytest.raises(ValueError, match="not a release name"):
        layout.release_dir("../../etc")


def test_systemd_unit_quotes_what_systemd_would_otherwise_expand():
    definition = render.ServiceDefinition(
        service="broker", description="d", argv=("/usr/bin/x", "a b", "100%", "$HOME"), cwd="/", log_file="/l",
        stop_timeout_s=5, release=RELEASE, env={"K": "v w"})
    unit = render.systemd_unit(definition)
    assert 'ExecStart=/usr/bin/x "a b" "100%%" "$$HOME"' in unit
    assert 'Environment="K=v w"' in unit and "TimeoutStopSec=5" in unit and "KillMode=mixed" in unit


def test_a_changed_config_changes_the_service_definition():
    layout = HostLayout()
    first = render.broker_service(layout, RELEASE, "broker.id=1\n")
    assert first.env == {"KAFKACTL_CONFIG_SHA256": hashlib.sha256(b"broker.id=1\n").hexdigest()}
    assert render.broker_service(layout, RELEASE, "broker.id=1\n").to_json() == first.to_json()
    assert render.broker_service(layout, RELEASE, "broker.id=1\nnum.partitions=3\n").to_json() != first.to_json()
