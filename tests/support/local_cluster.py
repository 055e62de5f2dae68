"""What the CLI tests against a real local cluster share: `kafkactl` run as an
operator runs it, one cluster per test module, kcat to write and read, and
a dump of the znodes a command may write (to show a refused command wrote
nothing).

`kafkactl cluster up` starts the cluster, so these tests also exercise the
command an operator starts with.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from kafkactl.cluster.local import LocalCluster
from kafkactl.cluster.zk.client import session as zk_session

KAFKACTL = Path(sys.executable).parent / "kafkactl"
CLI_TIMEOUT_S = 180
KCAT_TIMEOUT_S = 60
ZK_TIMEOUT_S = 10


class Cli:
    """The installed `kafkactl` console script with its own config and state."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env

    def __call__(self, *args: str, timeout_s: float = CLI_TIMEOUT_S,
                 extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([str(KAFKACTL), *args], capture_output=True, text=True,
                              env={**self.env, **(extra_env or {})}, timeout=timeout_s)

    def ok(self, *args: str, **kwargs) -> subprocess.CompletedProcess:
        done = self(*args, **kwargs)
        assert done.returncode == 0, f"kafkactl {' '.join(args)} exited {done.returncode}:\n{done.stderr}"
        return done


def isolated_env(home: Path) -> dict[str, str]:
    """This process's environment, minus anything pointing kafkactl elsewhere."""
    env = {k: v for k, v in os.environ.items() if k not in ("KAFKACTL_ZOOKEEPER", "KAFKACTL_BROKER_MODULE")}
    env.update(KAFKACTL_CONFIG=str(home / "config.json"), XDG_STATE_HOME=str(home / "state"))
    return env


@contextmanager
def cluster_up(tmp_path_factory, brokers: int, settings: tuple[str, ...] = ()) -> Iterator[tuple[Cli, LocalCluster, dict]]:
    """`kafkactl cluster up` with `brokers` brokers and `--config` settings;
    yields the CLI, the cluster and the command's JSON status; stops it all."""
    cli = Cli(isolated_env(tmp_path_factory.mktemp("home")))
    directory = tmp_path_factory.mktemp("cluster")
    options = [arg for setting in settings for arg in ("--config", setting)]
    try:
        status = json.loads(cli.ok("cluster", "up", "--brokers", str(brokers), "--dir", str(directory),
                                   *options, "-o", "json").stdout)
        yield cli, LocalCluster(directory), status
    finally:
        LocalCluster(directory).down(timeout_s=10)


def produce(bootstrap: str, topic: str, lines: list[str]) -> None:
    """`key:value` lines, written with acks=all."""
    subprocess.run(["kcat", "-b", bootstrap, "-t", topic, "-P", "-K:", "-X", "acks=all"],
                   input="".join(f"{line}\n" for line in lines), text=True, check=True, timeout=KCAT_TIMEOUT_S)


def consume(bootstrap: str, topic: str, format_: str = "%k:%s\n") -> list[str]:
    """Everything in the topic, sorted, one kcat format string per record."""
    done = subprocess.run(["kcat", "-b", bootstrap, "-t", topic, "-C", "-e", "-o", "beginning", "-f", format_, "-q"],
                          capture_output=True, text=True, check=True, timeout=KCAT_TIMEOUT_S)
    return sorted(done.stdout.split())


def zk_tree(zookeeper: str) -> dict[str, bytes]:
    """Every znode's data under the paths an admin command writes (not the
    brokers' registrations and ISR bookkeeping, which move on their own)."""
    tree = {}
    with zk_session(zookeeper, ZK_TIMEOUT_S) as client:
        def walk(path):
            data, _ = client.get_async(path).get(timeout=ZK_TIMEOUT_S)
            tree[path] = data
            for child in client.get_children_async(path).get(timeout=ZK_TIMEOUT_S):
                walk(f"{path.rstrip('/')}/{child}")
        for root in ("/admin", "/config", "/brokers/topics"):
            if client.exists_async(root).get(timeout=ZK_TIMEOUT_S):
                walk(root)
    return tree
