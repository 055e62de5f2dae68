"""`kafkactl cluster`: a local cluster (ZooKeeper + brokers) under a directory.

A thin layer over kafkactl.cluster.local: it resolves the directory, maps the
library's typed errors to exit codes, renders the status, and keeps the
user's current context pointing at the cluster it started.
"""

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import typer

from kafkactl.cli.common import SHARED_EPILOG, shared, timeout_s
from kafkactl.cli.errors import EXIT_FAILED

UP_TIMEOUT_S = 60.0
DOWN_TIMEOUT_S = 15.0
STATUS_TIMEOUT_S = 2.0  # for asking ZooKeeper which brokers are registered
LOG_TAIL_INDENT = "    "
# Test seam: run another module as the broker (e.g. a stand-in that only
# registers in ZooKeeper). Unset in normal use.
ENV_BROKER_MODULE = "KAFKACTL_BROKER_MODULE"

app = typer.Typer(help="Run a local cluster: ZooKeeper and brokers as background processes.",
                  no_args_is_help=True, epilog=SHARED_EPILOG)

_DIR_HELP = ("Cluster directory [default: the --context's (or the current context's) cluster_dir, else "
             "$XDG_STATE_HOME/kafkactl/local].")


@app.command(epilog=SHARED_EPILOG)
def up(
    ctx: typer.Context,
    brokers: int | None = typer.Option(
        None, "--brokers", "-n", min=1, metavar="N",
        help="Brokers in a new cluster [default: 3]; an existing cluster keeps its count."),
    directory: str | None = typer.Option(None, "--dir", metavar="DIR", help=_DIR_HELP),
    config: list[str] | None = typer.Option(
        None, "--config", metavar="KEY=VALUE",
        help="Broker setting for a new cluster (repeatable), e.g. log.segment.bytes=1048576."),
    name: str | None = typer.Option(
        None, "--name", metavar="CONTEXT",
        help="Context to save the cluster as [default: local, or local-<dir name> for a --dir]."),
) -> None:
    """Start ZooKeeper and the brokers (or whatever of them is not running).

    Waits until every broker is registered in ZooKeeper, then leaves them all
    running in the background and makes the cluster the current context.
    """
    from kafkactl.cluster.local import parse_overrides

    root = _directory(ctx, directory)
    context_name = _context_name(name, root)
    with _translated_errors():
        overrides = parse_overrides(config) if config else None
        status = _local_cluster(root).up(brokers=brokers, overrides=overrides,
                                       timeout_s=timeout_s(ctx, UP_TIMEOUT_S))
    _remember_context(context_name, status.zookeeper_connect, status.directory)
    data = {**status.to_dict(), "context": context_name}
    _emit(ctx, data, lambda: _status_table(status) + f"\ncurrent context: {context_name}")


@app.command(epilog=SHARED_EPILOG)
def status(
    ctx: typer.Context,
    directory: str | None = typer.Option(None, "--dir", metavar="DIR", help=_DIR_HELP),
) -> None:
    """Show the cluster's processes, whether they run, and their addresses.

    Exits 1 when any of them is not running (after showing them), so scripts
    and health checks can rely on the exit code."""
    with _translated_errors():
        current = _local_cluster(_directory(ctx, directory)).status(
            zk_timeout_s=timeout_s(ctx, STATUS_TIMEOUT_S))
    _emit(ctx, current.to_dict(), lambda: _status_table(current))
    if not current.all_alive:
        raise typer.Exit(EXIT_FAILED)


@app.command(epilog=SHARED_EPILOG)
def down(
    ctx: typer.Context,
    directory: str | None = typer.Option(None, "--dir", metavar="DIR", help=_DIR_HELP),
    purge: bool = typer.Option(False, "--purge", help="Also delete the directory and its data."),
) -> None:
    """Stop the brokers, then ZooKeeper (SIGTERM, SIGKILL after --timeout)."""
    root = _directory(ctx, directory)
    with _translated_errors():
        final = _local_cluster(root).down(timeout_s=timeout_s(ctx, DOWN_TIMEOUT_S), purge=purge)
    if purge:
        _forget_contexts(str(root))
    data = {"dir": str(root), "existed": final is not None, "stopped": True, "purged": purge}
    if final is None:
        message = f"no local cluster in {root}; nothing to stop"
    else:
        message = f"stopped the local cluster in {root}" + (" and deleted it" if purge else "")
    _emit(ctx, data, lambda: message)


# ---- directory and context bookkeeping ---------------------------------------


def _local_cluster(root: Path):
    from kafkactl.cluster.local import LocalCluster

    module = os.environ.get(ENV_BROKER_MODULE)
    return LocalCluster(root, broker_module=module) if module else LocalCluster(root)


def _directory(ctx: typer.Context, directory: str | None) -> Path:
    """--dir, else the explicit --context's cluster_dir, else the current
    context's if it is a local cluster, else the default state dir."""
    from kafkactl.cli.config import context_entry, default_cluster_dir, load_config
    from kafkactl.cli.errors import CliUsageError

    if directory:
        return Path(directory).expanduser().absolute()
    context = shared(ctx).context
    if context:
        entry = context_entry(load_config(), context)
        if not entry.get("cluster_dir"):
            raise CliUsageError(f"context {context!r} is not a local cluster (no cluster_dir); "
                                f"pass --dir")
        return Path(entry["cluster_dir"])
    config = load_config()
    current = config.contexts.get(config.current_context or "", {})
    if current.get("cluster_dir"):   # the local cluster the user switched to (or last started)
        return Path(current["cluster_dir"])
    return default_cluster_dir()


def _context_name(name: str | None, root: Path) -> str:
    from kafkactl.cli.config import check_context_name, default_cluster_dir

    if name:
        return check_context_name(name)
    if root == default_cluster_dir():
        return "local"
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", root.name).strip("-._")
    return f"local-{slug}" if slug else "local"


def _remember_context(name: str, zookeeper: str, cluster_dir: str) -> None:
    from kafkactl.cli.config import load_config, save_config

    config = load_config()
    config.contexts[name] = {**config.contexts.get(name, {}),
                             "zookeeper": zookeeper, "cluster_dir": cluster_dir}
    config.current_context = name
    save_config(config)


def _forget_contexts(cluster_dir: str) -> None:
    """After a purge, contexts pointing at the deleted cluster would only mislead."""
    from kafkactl.cli.config import load_config, save_config

    config = load_config()
    stale = [n for n, e in config.contexts.items() if e.get("cluster_dir") == cluster_dir]
    if not stale:
        return
    for name in stale:
        del config.contexts[name]
    if config.current_context in stale:
        config.current_context = None
    save_config(config)


# ---- errors and output -------------------------------------------------------


@contextmanager
def _translated_errors() -> Iterator[None]:
    """The local-cluster library's typed errors, as CLI errors with exit codes."""
    from kafkactl.cluster.local import LocalClusterError, LocalClusterUsageError, StartupError

    from kafkactl.cli.errors import CliError, CliUsageError

    try:
        yield
    except LocalClusterUsageError as exc:
        raise CliUsageError(str(exc)) from exc
    except StartupError as exc:
        details = ""
        if exc.log_tail:
            tail = "\n".join(LOG_TAIL_INDENT + line for line in exc.log_tail.splitlines())
            details = f"last lines of {exc.log_file}:\n{tail}"
        raise CliError(str(exc), details) from exc
    except LocalClusterError as exc:
        raise CliError(str(exc)) from exc


def _emit(ctx: typer.Context, data: dict, table) -> None:
    from kafkactl.cli.output import emit

    emit(data, shared(ctx).output, table)


def _status_table(status) -> str:
    from kafkactl.cli.output import render_table

    zk_state = f"pid {status.zookeeper_pid}, running" if status.zookeeper_alive else "not running"
    rows = [[b.id, b.address, b.pid or "-", "running" if b.alive else "stopped",
             _yes_no(b.registered), _log_dirs(b)]
            for b in status.brokers]
    header = [
        f"cluster dir:       {status.directory}",
        f"zookeeper:         {status.zookeeper_connect} ({zk_state})",
        f"bootstrap servers: {status.bootstrap_servers}",
    ]
    if status.overrides:
        header.append("config overrides:  " + " ".join(f"{k}={v}" for k, v in sorted(status.overrides.items())))
    table = render_table(rows, ["ID", "ADDRESS", "PID", "STATE", "REGISTERED", "LOG DIRS"])
    return "\n".join(header) + "\n\n" + table


def _log_dirs(broker) -> str:
    return ", ".join(f"{path} ({broker.log_dir_media.get(path, '?')})" for path in broker.log_dirs)


def _yes_no(value: bool | None) -> str:
    return "?" if value is None else ("yes" if value else "no")
