"""-b/--bootstrap-server, $KAFKACTL_BOOTSTRAP_SERVERS and contexts holding either back end."""

import json

import pytest

from kafkactl.cli.config import (ADMIN_API, ZOOKEEPER, Config, check_bootstrap, load_config, resolve_target,
                                 resolve_zookeeper)
from kafkactl.cli.errors import CliUsageError
from kafkactl.cli.main import main
from kafkactl.cli.options import SharedOptions, lift_shared_options


@pytest.fixture
def config(tmp_path):
    return Config(tmp_path / "config.json",
                  contexts={"zk": {"zookeeper": "zk:2181"}, "kraft": {"bootstrap_servers": "k1:9092,k2:9092"},
                            "both": {"zookeeper": "zk:1", "bootstrap_servers": "k:1"}},
                  current_context="kraft")


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("argv", [["-b", "h:9092"], ["--bootstrap-server", "h:9092"], ["--bootstrap-server=h:9092"],
                                  ["-bh:9092"]])
def test_the_option_is_lifted_wherever_it_is(argv):
    options, rest = lift_shared_options(["topics", "list", *argv])
    assert options.bootstrap_server == "h:9092" and rest == ["topics", "list"]


def test_zookeeper_and_bootstrap_together_are_refused():
    with pytest.raises(CliUsageError, match="not both"):
        lift_shared_options(["-z", "zk:2181", "topics", "list", "-b", "h:9092"])


def test_resolution_order(config):
    env = {"KAFKACTL_BOOTSTRAP_SERVERS": "env:9092"}
    assert resolve_target(SharedOptions(bootstrap_server="f:1", context="zk"), config, env) == \
        resolve_target(SharedOptions(bootstrap_server="f:1"), config, {})
    flag = resolve_target(SharedOptions(bootstrap_server="f:1", context="zk"), config, env)
    assert (flag.backend, flag.address, flag.source) == (ADMIN_API, "f:1", "--bootstrap-server")
    assert resolve_target(SharedOptions(zookeeper="z:1"), config, env).backend == ZOOKEEPER   # a flag beats env
    from_env = resolve_target(SharedOptions(context="zk"), config, env)
    assert (from_env.backend, from_env.address, from_env.source) == (ADMIN_API, "env:9092",
                                                                     "$KAFKACTL_BOOTSTRAP_SERVERS")
    assert resolve_target(SharedOptions(context="zk"), config, {}).backend == ZOOKEEPER
    current = resolve_target(SharedOptions(), config, {})
    assert (current.backend, current.address, current.source) == (ADMIN_API, "k1:9092,k2:9092",
                                                                   "current context 'kraft'")


def test_both_environment_variables_are_refused(config):
    env = {"KAFKACTL_BOOTSTRAP_SERVERS": "k:9092", "KAFKACTL_ZOOKEEPER": "z:2181"}
    with pytest.raises(CliUsageError, match="both .KAFKACTL_ZOOKEEPER and .KAFKACTL_BOOTSTRAP_SERVERS"):
        resolve_target(SharedOptions(), config, env)
    assert resolve_target(SharedOptions(bootstrap_server="b:1"), config, env).address == "b:1"


def test_a_context_with_both_addresses_is_refused(config):
    with pytest.raises(CliUsageError, match="context 'both' has both"):
        resolve_target(SharedOptions(context="both"), config, {})


def test_zookeeper_only_commands_refuse_bootstrap_servers(config):
    with pytest.raises(CliUsageError, match="ZooKeeper only.*--bootstrap-server.*-z/--zookeeper"):
        resolve_zookeeper(SharedOptions(bootstrap_server="h:9092"), config, {})


@pytest.mark.parametrize("good, stripped", [("h:9092", "h:9092"), ("a:1, b:2", "a:1,b:2"), ("[::1]:9092", "[::1]:9092")])
def test_valid_bootstrap_servers(good, stripped):
    assert check_bootstrap(good) == stripped


@pytest.mark.parametrize("bad", ["", "h", "h:0", "h:70000", "a:1,", "h:1/kafka", ":9092", "h 1:2"])
def test_invalid_bootstrap_servers(bad):
    with pytest.raises(CliUsageError, match="invalid bootstrap servers"):
        check_bootstrap(bad)


def test_context_set_holds_one_back_end(capsys, tmp_path, monkeypatch):
    path = tmp_path / "config.json"
    monkeypatch.setenv("KAFKACTL_CONFIG", str(path))
    assert run(capsys, "context", "set", "c", "-z", "zk:2181")[0] == 0
    assert run(capsys, "context", "set", "c", "--bootstrap-server", "k1:9092,k2:9092")[0] == 0
    assert load_config(path).contexts["c"] == {"bootstrap_servers": "k1:9092,k2:9092"}
    code, out, _ = run(capsys, "context", "current", "-o", "json")
    assert json.loads(out) == {"bootstrap_servers": "k1:9092,k2:9092", "backend": "admin-api",
                               "source": "current context 'c'"}
    assert run(capsys, "context", "set", "c", "-z", "zk:2181")[0] == 0
    assert load_config(path).contexts["c"] == {"zookeeper": "zk:2181"}


@pytest.mark.parametrize("argv, fragment", [
    (["-z", "zk:2181", "-b", "h:9092", "topics", "list"], "not both"),
    (["topics", "list", "-b", "nohostport"], "invalid bootstrap servers"),
    (["context", "set", "c", "-b", "h"], "invalid bootstrap servers"),
])
def test_bad_combinations_are_one_line_usage_errors(capsys, tmp_path, monkeypatch, argv, fragment):
    monkeypatch.setenv("KAFKACTL_CONFIG", str(tmp_path / "config.json"))
    code, out, err = run(capsys, *argv)
    assert (code, out) == (2, "")
    [line] = err.strip().splitlines()
    assert line.startswith("kafkactl: error: ") and fragment in line


def test_topics_alter_replication_factor_goes_to_the_brokers_with_bootstrap_servers(capsys, tmp_path, monkeypatch):
    # It was refused with -b while throttles were written to ZooKeeper only; now
    # every command has an Admin API way, so it asks the brokers (none answers here).
    import socket

    monkeypatch.setenv("KAFKACTL_CONFIG", str(tmp_path / "config.json"))
    with socket.socket() as unused:           # a port nothing listens on
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    code, out, err = run(capsys, "topics", "alter", "t", "--replication-factor", "2", "--yes",
                         "-b", f"127.0.0.1:{port}", "--timeout", "2")
    assert (code, out) == (1, "")
    [line] = err.strip().splitlines()
    assert "no broker answered" in line and "not possible through the Admin API" not in line


def test_an_unreachable_bootstrap_server_is_a_clear_error(capsys, tmp_path, monkeypatch):
    import socket

    monkeypatch.setenv("KAFKACTL_CONFIG", str(tmp_path / "config.json"))
    with socket.socket() as unused:           # a port nothing listens on
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    code, out, err = run(capsys, "topics", "list", "-b", f"127.0.0.1:{port}", "--timeout", "2")
    assert (code, out) == (1, "")
    [line] = err.strip().splitlines()
    assert f"127.0.0.1:{port}" in line and "no broker answered" in line
