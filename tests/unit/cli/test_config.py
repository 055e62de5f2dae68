"""The user's config file and the ZooKeeper address resolution order."""

import json
import os
import stat

import pytest

from kafkactl.cli.config import (Config, check_zookeeper, config_path, default_cluster_dir,
                                 load_config, resolve_zookeeper, save_config)
from kafkactl.cli.errors import CliError, CliUsageError
from kafkactl.cli.options import SharedOptions


@pytest.fixture
def config(tmp_path):
    cfg = Config(tmp_path / "config.json",
                 contexts={"a": {"zookeeper": "a:1"}, "b": {"zookeeper": "b:2/kafka"}},
                 current_context="a")
    save_config(cfg)
    return cfg


def test_config_path_honours_env_then_xdg_then_home():
    assert str(config_path({"KAFKACTL_CONFIG": "/c/k.json", "XDG_CONFIG_HOME": "/x"})) == "/c/k.json"
    assert str(config_path({"XDG_CONFIG_HOME": "/x", "HOME": "/h"})) == "/x/kafkactl/config.json"
    assert str(config_path({"HOME": "/h"})) == "/h/.config/kafkactl/config.json"
    # The XDG spec says relative paths are to be ignored.
    assert str(config_path({"XDG_CONFIG_HOME": "rel", "HOME": "/h"})) == "/h/.config/kafkactl/config.json"


def test_default_cluster_dir_is_a_state_dir():
    assert str(default_cluster_dir({"XDG_STATE_HOME": "/s"})) == "/s/kafkactl/local"
    assert str(default_cluster_dir({"HOME": "/h"})) == "/h/.local/state/kafkactl/local"


def test_round_trip_keeps_unknown_keys(tmp_path):
    path = tmp_path / "sub" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"future": {"x": 1}, "current_context": "a",
                                "contexts": {"a": {"zookeeper": "h:1", "note": "kept"}}}))
    cfg = load_config(path)
    cfg.contexts["b"] = {"zookeeper": "h:2", "cluster_dir": "/d"}
    save_config(cfg)
    again = json.loads(path.read_text())
    assert again["future"] == {"x": 1}
    assert again["contexts"]["a"] == {"zookeeper": "h:1", "note": "kept"}
    assert again["contexts"]["b"] == {"zookeeper": "h:2", "cluster_dir": "/d"}
    assert load_config(path).current_context == "a"


def test_save_is_atomic_and_private(tmp_path, config):
    save_config(config)
    leftovers = [p.name for p in config.path.parent.iterdir() if p.name != "config.json"]
    assert leftovers == []
    assert stat.S_IMODE(os.stat(config.path).st_mode) == 0o600


def test_missing_file_is_an_empty_config(tmp_path):
    cfg = load_config(tmp_path / "nope.json")
    assert cfg.contexts == {} and cfg.current_context is None


def test_corrupt_file_is_a_clear_error(tmp_path):
    path = tmp_path / "config.json"
    path.write_text("{not json")
    with pytest.raises(CliError, match="cannot read config file"):
        load_config(path)


def test_resolution_order(config):
    env = {"KAFKACTL_ZOOKEEPER": "env:9"}
    assert resolve_zookeeper(SharedOptions(zookeeper="flag:1", context="b"), config, env).zookeeper == "flag:1"
    assert resolve_zookeeper(SharedOptions(context="b"), config, env).zookeeper == "env:9"
    assert resolve_zookeeper(SharedOptions(context="b"), config, {}).zookeeper == "b:2/kafka"
    resolved = resolve_zookeeper(SharedOptions(), config, {})
    assert (resolved.zookeeper, resolved.source) == ("a:1", "current context 'a'")


def test_no_address_anywhere_says_what_to_do(tmp_path):
    with pytest.raises(CliUsageError) as caught:
        resolve_zookeeper(SharedOptions(), Config(tmp_path / "c.json"), {})
    assert "kafkactl cluster up" in caught.value.message
    assert "--zookeeper" in caught.value.message


def test_unknown_context_is_a_usage_error(config):
    with pytest.raises(CliUsageError, match="no context named 'zz'.*known: a, b"):
        resolve_zookeeper(SharedOptions(context="zz"), config, {})


@pytest.mark.parametrize("good", ["h:2181", "h", "a:1,b:2", "a:1,b:2/kafka", "[::1]:2181/x/y"])
def test_valid_zookeeper_addresses(good):
    assert check_zookeeper(good) == good


@pytest.mark.parametrize("bad", ["", ":2181", "h:0", "h:99999", "h:x", "a:1,", "h:1/", "h:1/a//b", "h 1:2"])
def test_invalid_zookeeper_addresses(bad):
    with pytest.raises(CliUsageError):
        check_zookeeper(bad)
