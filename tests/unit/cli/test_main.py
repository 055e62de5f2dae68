"""The command line end to end (no servers): exit codes, one-line errors, output."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kafkactl.cli.main import app, main

KAFKACTL = Path(sys.executable).parent / "kafkactl"


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(err, *fragments):
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("kafkactl: error: ")
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in lines[0]


@pytest.mark.parametrize("argv, fragment", [
    (["nosuch"], "No such command"),
    (["cluster", "up", "--nosuch"], "No such option"),
    (["cluster", "up", "--brokers", "0"], "--brokers"),
    (["cluster", "up", "--config", "nokey"], "'nokey'"),
    (["cluster", "up", "--config", "broker.id=5"], "broker.id"),
    (["-o", "xml", "context", "list"], "xml"),
    (["context", "list", "--output"], "requires a value"),
    (["context", "use", "nope"], "no context named 'nope'"),
    (["context", "set", "prod"], "--zookeeper"),
    (["context", "set", "prod", "-z", "bad:port"], "invalid ZooKeeper address"),
    (["context", "current"], "kafkactl cluster up"),
])
def test_usage_errors_exit_2_with_one_line(capsys, argv, fragment):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    assert_one_line_error(err, fragment)


def test_operation_failures_exit_1(capsys, tmp_path):
    code, _, err = run(capsys, "cluster", "status", "--dir", str(tmp_path / "none"))
    assert code == 1
    assert_one_line_error(err, "no local cluster in")


def test_a_different_broker_count_is_refused_with_exit_2(capsys, tmp_path):
    from kafkactl.cluster.local import state

    root = tmp_path / "c"
    root.mkdir()
    layout = state.Layout(root)
    state.save(layout, state.new_spec(layout, "127.0.0.1", 1, [3000, 3001], {}))
    code, _, err = run(capsys, "cluster", "up", "--brokers", "3", "--dir", str(root))
    assert code == 2
    assert_one_line_error(err, "1 broker(s)", "--purge")


def test_unexpected_errors_are_one_line_unless_debug(capsys, monkeypatch):
    import kafkactl.cli.config as config

    def boom(*_):
        raise RuntimeError("kaput")

    monkeypatch.setattr(config, "load_config", boom)
    code, _, err = run(capsys, "context", "list")
    assert code == 1
    assert_one_line_error(err, "internal error: RuntimeError: kaput", "--debug")
    code, _, err = run(capsys, "context", "list", "--debug")
    assert code == 1
    assert "Traceback" in err and "kaput" in err


def test_context_commands_and_shared_options_anywhere(capsys, tmp_path):
    assert run(capsys, "context", "set", "prod", "--zookeeper", "zk1:2181,zk2:2181/kafka")[0] == 0
    assert run(capsys, "-z", "dev:2181", "context", "set", "dev", "--cluster-dir", str(tmp_path))[0] == 0
    before = run(capsys, "-o", "json", "context", "list")
    after = run(capsys, "context", "list", "-o", "json")
    assert before == after and before[0] == 0
    listing = json.loads(before[1])
    assert listing["current_context"] == "prod"  # the first context becomes current
    assert [c["name"] for c in listing["contexts"]] == ["dev", "prod"]
    assert listing["contexts"][0]["cluster_dir"] == str(tmp_path)

    assert run(capsys, "context", "use", "dev")[0] == 0
    code, out, _ = run(capsys, "context", "current", "-o", "json")
    assert json.loads(out) == {"zookeeper": "dev:2181", "backend": "zookeeper", "source": "current context 'dev'"}
    code, out, _ = run(capsys, "--context", "prod", "context", "current", "-o", "yaml")
    assert out == 'zookeeper: "zk1:2181,zk2:2181/kafka"\nbackend: zookeeper\nsource: "--context \'prod\'"\n'

    assert run(capsys, "context", "delete", "dev")[0] == 0
    code, out, _ = run(capsys, "context", "list", "--output=json")
    assert json.loads(out)["current_context"] is None


def test_typer_runner_also_accepts_root_level_shared_options(tmp_path):
    result = CliRunner().invoke(app, ["-z", "h:1", "-o", "json", "context", "current"])
    assert result.exit_code == 0
    assert json.loads(result.stdout)["source"] == "--zookeeper"


def test_help_and_completion(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0 and "cluster" in out and "context" in out and "--install-completion" in out
    code, out, _ = run(capsys, "cluster", "up", "--help")
    assert code == 0 and "--brokers" in out and "Shared options" in out
    # As the user runs it: from their shell, which typer detects by the process
    # tree. The second command keeps bash from exec-ing kafkactl, so bash is its
    # parent even when the test run itself is detached from any shell.
    done = subprocess.run(["bash", "-c", f"{KAFKACTL} --show-completion; exit $?"], capture_output=True,
                          text=True, timeout=30)
    assert done.returncode == 0 and "_KAFKACTL_COMPLETE" in done.stdout, done.stderr


def test_console_script_help_imports_nothing_heavy():
    # What makes `kafkactl --help` slow is what it imports; counted here, not
    # timed: a test must not depend on the machine's load (bench/cli_describe.py times a
    # whole command, start-up included).
    done = subprocess.run([str(KAFKACTL), "--help"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0
    count = subprocess.run([sys.executable, "-c", "import sys; before = len(sys.modules); "
                            "from kafkactl.cli.main import main; print(len(sys.modules) - before)"],
                           capture_output=True, text=True, timeout=30)
    assert int(count.stdout) < 200, f"importing the CLI loads {count.stdout.strip()} modules"
    probe = ("import sys; from kafkactl.cli.main import main; "
             "heavy = [m for m in ('kazoo', 'kio', 'tabulate', 'kafkactl.cluster.broker', "
             "'kafkactl.cluster.local', 'pyspark', 'matplotlib', 'pandas') if m in sys.modules]; print(heavy)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=30)
    assert done.stdout.strip() == "[]"


def test_bare_command_prints_help_and_exits_2(capsys):
    code, out, err = run(capsys)
    assert code == 2 and out == ""
    assert err.startswith("Usage: kafkactl") and "kafkactl: error" not in err


def test_cluster_commands_find_the_dir_through_an_explicit_context(capsys, tmp_path):
    run(capsys, "context", "set", "remote", "-z", "h:1")
    code, _, err = run(capsys, "cluster", "status", "--context", "remote")
    assert code == 2
    assert_one_line_error(err, "not a local cluster")
    run(capsys, "context", "set", "mine", "-z", "h:2", "--cluster-dir", str(tmp_path / "elsewhere"))
    code, _, err = run(capsys, "--context", "mine", "cluster", "status")
    assert code == 1
    assert_one_line_error(err, f"no local cluster in {tmp_path / 'elsewhere'}")


def test_the_hint_names_where_the_address_came_from():
    from kafkactl.cli.common import unreachable_hint

    assert unreachable_hint("--zookeeper") == "is ZooKeeper running there? (the address is from --zookeeper)"
    assert "kafkactl cluster status" not in unreachable_hint("$KAFKACTL_ZOOKEEPER")
    assert "kafkactl cluster status" in unreachable_hint("current context 'local'")
