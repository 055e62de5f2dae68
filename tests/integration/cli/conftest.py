"""Fixtures for the CLI integration tests: real ZooKeeper, real processes.

Each test gets its own config file, state dir and cluster dir under tmp_path,
and a finalizer that stops whatever the test started, even when it failed.
Brokers are the stand-in `fake_broker` (next to this file) unless a test
asks for the real one, so these tests check the CLI and the launcher whether
or not the broker works yet.
"""

import json
import os
import signal
from dataclasses import dataclass
from pathlib import Path

import pytest
from support import local_cluster

from kafkactl.cluster.local import LocalCluster, procs

HERE = Path(__file__).resolve().parent
CLI_TIMEOUT_S = 120


@dataclass
class CliResult:
    code: int
    out: str
    err: str

    def json(self):
        return json.loads(self.out)


class Cli(local_cluster.Cli):
    """support.local_cluster's Cli, answering CliResults."""

    def __call__(self, *args: str, extra_env: dict[str, str] | None = None) -> CliResult:
        done = super().__call__(*args, timeout_s=CLI_TIMEOUT_S, extra_env=extra_env)
        return CliResult(done.returncode, done.stdout, done.stderr)

    def ok(self, *args: str, **kwargs) -> CliResult:
        result = self(*args, **kwargs)
        assert result.code == 0, f"kafkactl {' '.join(args)} failed:\n{result.err}"
        return result


@pytest.fixture
def home(tmp_path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def cli_env(home) -> dict[str, str]:
    env = local_cluster.isolated_env(home)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH")]))
    return env


@pytest.fixture
def cli(cli_env) -> Cli:
    """kafkactl with the stand-in broker."""
    return Cli({**cli_env, "KAFKACTL_BROKER_MODULE": "fake_broker"})


@pytest.fixture
def real_cli(cli_env) -> Cli:
    """kafkactl with the project's real broker."""
    return Cli(cli_env)


@pytest.fixture
def cluster_dir(tmp_path):
    """A cluster directory whose processes are stopped when the test ends."""
    root = tmp_path / "cluster"
    yield root
    _stop_everything(root)


def _stop_everything(root: Path) -> None:
    if not (root / "cluster.json").exists():
        return
    try:
        LocalCluster(root).down(timeout_s=5)
    except Exception:
        # Last resort: the recorded pids, whatever state the cluster is in.
        data = json.loads((root / "cluster.json").read_text())
        for entry in [data["zookeeper"], *data["brokers"]]:
            procs.signal_proc(procs.Proc(entry.get("pid"), entry["config_file"]), signal.SIGKILL)
        raise
