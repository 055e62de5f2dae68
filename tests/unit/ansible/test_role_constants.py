"""The roles' fixed values are the ones `kafkactl deploy` uses: layout.py's
paths and ports, render.py's defaults and service settings, config_keys.py's
kinds of ZooKeeper keys. Both tools must write the same files on a host, so
a change on one side without the other fails here, before any host is
involved."""

from __future__ import annotations

from pathlib import Path

import yaml

from kafkactl.cluster.deploy import config_keys, layout, render

ROLES = Path(__file__).resolve().parents[3] / "ansible" / "roles"


def role_file(role: str, kind: str) -> dict:
    return yaml.safe_load((ROLES / role / kind / "main.yml").read_text())


def test_layout_paths_and_ports():
    defaults = role_file("kafkactl", "defaults")
    assert defaults["kafkactl_install_root"] == layout.INSTALL_ROOT
    assert defaults["kafkactl_data_root"] == layout.DATA_ROOT
    assert defaults["kafkactl_broker_port"] == layout.BROKER_PORT
    assert defaults["kafkactl_zookeeper_client_port"] == layout.ZOOKEEPER_CLIENT_PORT
    assert defaults["kafkactl_zookeeper_quorum_port"] == layout.ZOOKEEPER_QUORUM_PORT
    assert defaults["kafkactl_zookeeper_election_port"] == layout.ZOOKEEPER_ELECTION_PORT
    assert defaults["kafkactl_kept_releases"] == layout.KEPT_RELEASES


def test_rendering_constants():
    defaults = role_file("kafkactl", "defaults")
    assert defaults["kafkactl_file_header"] + "\n" == render.HEADER
    assert defaults["kafkactl_open_files_limit"] == render.OPEN_FILES_LIMIT
    assert defaults["kafkactl_config_digest_variable"] == render.CONFIG_DIGEST_VARIABLE
    zookeeper = role_file("zookeeper", "vars")
    assert zookeeper["zookeeper_cfg_defaults"] == dict(render.ZOOKEEPER_DEFAULTS)
    assert list(zookeeper["zookeeper_cfg_defaults"]) == list(render.ZOOKEEPER_DEFAULTS)   # the file's order
    assert tuple(zookeeper["zookeeper_required_four_letter_words"]) == render.REQUIRED_FOUR_LETTER_WORDS
    assert zookeeper["zookeeper_main_class"] == render.ZOOKEEPER_MAIN_CLASS
    assert tuple(zookeeper["zookeeper_jvm_options"]) == render.ZOOKEEPER_JVM_OPTIONS
    assert zookeeper["zookeeper_stop_timeout_s"] == render.ZOOKEEPER_STOP_TIMEOUT_S
    assert role_file("broker", "vars")["broker_stop_timeout_s"] == render.BROKER_STOP_TIMEOUT_S


def test_zookeeper_key_kinds():
    zookeeper = role_file("zookeeper", "vars")
    kinds = config_keys.ZOOKEEPER_KEYS
    integer = {config_keys.INT, config_keys.POSITIVE, config_keys.PORT}
    assert set(zookeeper["zookeeper_integer_keys"]) == {k for k, kind in kinds.items() if kind in integer}
    assert set(zookeeper["zookeeper_boolean_keys"]) == {k for k, kind in kinds.items() if kind == config_keys.BOOL}
    assert set(zookeeper["zookeeper_yes_no_keys"]) == {k for k, kind in kinds.items() if kind == config_keys.YES_NO}
