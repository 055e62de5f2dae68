"""`kafkactl deploy`: install and run the reference cluster on the hosts of an inventory.

The inventory (-i) is an Ansible YAML inventory (docs/deploy.md); it is
checked whole before any host is contacted, and a problem in it exits 2.
Hosts are reached over SSH with their keys checked against known_hosts
(paramiko's RejectPolicy); `--trust-on-first-use` accepts and records the
key of a host seen for the first time. Every command prints one row per
host (or per host and service) and exits 1 when any host failed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from kafkactl.cli.common import SHARED_EPILOG, shared

app = typer.Typer(help="Install and run the cluster on the hosts of an inventory, over SSH.",
                  no_args_is_help=True, epilog=SHARED_EPILOG)

INVENTORY = typer.Option(..., "--inventory", "-i", metavar="FILE",
                         help="The Ansible YAML inventory (docs/deploy.md).")
KNOWN_HOSTS = typer.Option(Path("~/.ssh/known_hosts"), "--known-hosts", metavar="FILE",
                           help="Host keys to check hosts against.")
TOFU = typer.Option(False, "--trust-on-first-use",
                    help="Accept the key of a host not in known_hosts and record it (a changed key is "
                         "always refused).")
PARALLEL = typer.Option(8, "--parallel", min=1, max=64, help="Hosts worked at once.")
CONNECT_TIMEOUT = typer.Option(10.0, "--connect-timeout", min=0.1, metavar="SECONDS",
                               help="Bound on connecting to and logging in to each host.")
HOSTS = typer.Option(None, "--host", metavar="NAME", help="Only this host (repeatable).")
WHEELHOUSE = typer.Option(None, "--wheelhouse", metavar="DIR",
                          help="Install these wheels (built with `kafkactl deploy wheelhouse`) instead of "
                               "building them from this kafkactl.")
WHEELHOUSE_TIMEOUT_S = 900.0
WAIT_TIMEOUT_S = 120.0


def _deployment(ctx: typer.Context, inventory: str, known_hosts: Path, trust_on_first_use: bool, parallel: int,
                connect_timeout: float, hosts: list[str] | None):
    from kafkactl.cli.errors import CliUsageError
    from kafkactl.cli.extras import DEPLOY_MODULES, require

    require(DEPLOY_MODULES, "deploy", "kafkactl deploy")
    from kafkactl.cluster.deploy.inventory import InventoryError, load_inventory
    from kafkactl.cluster.deploy.operations import Deployment
    from kafkactl.cluster.deploy.ssh import SshOptions

    try:
        loaded = load_inventory(inventory)
    except InventoryError as error:
        raise CliUsageError(str(error)) from None
    unknown = sorted(set(hosts or ()) - set(loaded.connections()))
    if unknown:
        raise CliUsageError(f"--host {unknown[0]}: not a host of {inventory}")
    options = SshOptions(known_hosts=known_hosts.expanduser(), trust_on_first_use=trust_on_first_use,
                         connect_timeout_s=connect_timeout)
    return Deployment(loaded, options, parallel=parallel, hosts=frozenset(hosts) if hosts else None)


def _wheelhouse(path: Path | None):
    from kafkactl.cli.errors import CliError
    from kafkactl.cluster.deploy.operations import wheelhouse_for
    from kafkactl.cluster.deploy.wheelhouse import WheelhouseError

    try:
        return wheelhouse_for(path, WHEELHOUSE_TIMEOUT_S)
    except WheelhouseError as error:
        raise CliError(str(error)) from None


@app.command(epilog=SHARED_EPILOG)
def wheelhouse(ctx: typer.Context,
               path: Path = typer.Option(None, "--wheelhouse", metavar="DIR",
                                         help="Check this wheelhouse instead of building one.")) -> None:
    """Build (or check) the wheels a host installs: kafkactl and its runtime dependencies, no extras.

    Built from the kafkactl you run, and cached under ~/.cache/kafkactl."""
    from kafkactl.cli.output import emit, render_table

    built = _wheelhouse(path)
    data = {"path": str(built.path), "release": built.release, "kafkactl_version": built.kafkactl_version,
            "files": [{"name": f.name, "sha256": f.sha256, "size": f.size} for f in built.files]}
    emit(data, shared(ctx).output, lambda: f"release {built.release}: {len(built.files)} wheels in {built.path}\n"
         + render_table([[f.name, f.size] for f in built.files], ["WHEEL", "BYTES"]))


@app.command(epilog=SHARED_EPILOG)
def plan(ctx: typer.Context, inventory: str = INVENTORY, known_hosts: Path = KNOWN_HOSTS,
         trust_on_first_use: bool = TOFU, parallel: int = PARALLEL, connect_timeout: float = CONNECT_TIMEOUT,
         host: list[str] = HOSTS, wheelhouse_dir: Path = WHEELHOUSE) -> None:
    """What `install` would change on each host, and each log dir's media. Changes nothing."""
    from kafkactl.cli.deploy_report import plan_report
    from kafkactl.cluster.deploy.operations import plan as plan_hosts
    from kafkactl.cluster.deploy.operations import release_of

    deployment = _deployment(ctx, inventory, known_hosts, trust_on_first_use, parallel, connect_timeout, host)
    release = release_of(_wheelhouse(wheelhouse_dir))
    plan_report(plan_hosts(deployment, release), release.name, shared(ctx).output)


@app.command(epilog=SHARED_EPILOG)
def install(ctx: typer.Context, inventory: str = INVENTORY, known_hosts: Path = KNOWN_HOSTS,
            trust_on_first_use: bool = TOFU, parallel: int = PARALLEL, connect_timeout: float = CONNECT_TIMEOUT,
            host: list[str] = HOSTS, wheelhouse_dir: Path = WHEELHOUSE) -> None:
    """Install the release, configs, log dirs and services on every host (idempotent).

    Every host is checked first; if any cannot be installed, none is
    changed. Running services keep running: a new release or config takes
    effect at their next restart (`deploy rolling-restart`)."""
    from kafkactl.cli.deploy_report import install_report
    from kafkactl.cluster.deploy.operations import InstallRefused, install_all

    deployment = _deployment(ctx, inventory, known_hosts, trust_on_first_use, parallel, connect_timeout, host)
    built = _wheelhouse(wheelhouse_dir)
    try:
        plans, outcomes = install_all(deployment, built)
    except InstallRefused as refused:
        install_report(refused.plans, None, built.release, shared(ctx).output)
        return
    install_report(plans, outcomes, built.release, shared(ctx).output)


def _services_command(ctx: typer.Context, action: str, deployment: Any) -> None:
    from kafkactl.cli.deploy_report import services_report
    from kafkactl.cli.errors import CliError
    from kafkactl.cluster.deploy import operations

    if action == "start":
        problems = [p for o in operations.check_log_dirs(deployment) for p in (o.value if o.ok else [o.error])]
        if problems:
            raise CliError(problems[0], "\n".join(problems[1:]) + "\nnothing was started")
        try:
            results = operations.start_all(deployment, WAIT_TIMEOUT_S)
        except operations.WaitTimedOut as error:
            raise CliError(str(error)) from None
    elif action == "stop":
        results = operations.stop_all(deployment)
    else:
        results = operations.stop_all(deployment)
        if all(outcome.ok for _, _, outcome in results):
            results = operations.start_all(deployment, WAIT_TIMEOUT_S)
    services_report(results, shared(ctx).output)


@app.command(epilog=SHARED_EPILOG)
def start(ctx: typer.Context, inventory: str = INVENTORY, known_hosts: Path = KNOWN_HOSTS,
          trust_on_first_use: bool = TOFU, parallel: int = PARALLEL, connect_timeout: float = CONNECT_TIMEOUT,
          host: list[str] = HOSTS) -> None:
    """Start ZooKeeper everywhere, wait for its quorum, then start the brokers and wait for them to register.

    Refuses to start anything while a broker's log dir is missing or cannot be written."""
    _services_command(ctx, "start", _deployment(ctx, inventory, known_hosts, trust_on_first_use, parallel,
                                                connect_timeout, host))


@app.command(epilog=SHARED_EPILOG)
def stop(ctx: typer.Context, inventory: str = INVENTORY, known_hosts: Path = KNOWN_HOSTS,
         trust_on_first_use: bool = TOFU, parallel: int = PARALLEL, connect_timeout: float = CONNECT_TIMEOUT,
         host: list[str] = HOSTS) -> None:
    """Stop the brokers (controlled shutdown), then ZooKeeper."""
    _services_command(ctx, "stop", _deployment(ctx, inventory, known_hosts, trust_on_first_use, parallel,
                                               connect_timeout, host))


@app.command(epilog=SHARED_EPILOG)
def restart(ctx: typer.Context, inventory: str = INVENTORY, known_hosts: Path = KNOWN_HOSTS,
            trust_on_first_use: bool = TOFU, parallel: int = PARALLEL, connect_timeout: float = CONNECT_TIMEOUT,
            host: list[str] = HOSTS) -> None:
    """Stop everything, then start everything: the cluster is down in between (see rolling-restart)."""
    _services_command(ctx, "restart", _deployment(ctx, inventory, known_hosts, trust_on_first_use, parallel,
                                                  connect_timeout, host))


@app.command(epilog=SHARED_EPILOG)
def status(ctx: typer.Context, inventory: str = INVENTORY, known_hosts: Path = KNOWN_HOSTS,
           trust_on_first_use: bool = TOFU, parallel: int = PARALLEL, connect_timeout: float = CONNECT_TIMEOUT,
           host: list[str] = HOSTS) -> None:
    """Each service on each host: running or not, pid, release, uptime, whether a restart is pending."""
    from kafkactl.cli.deploy_report import status_report
    from kafkactl.cluster.deploy.operations import status_all

    deployment = _deployment(ctx, inventory, known_hosts, trust_on_first_use, parallel, connect_timeout, host)
    status_report(status_all(deployment), shared(ctx).output)


@app.command("rolling-restart", epilog=SHARED_EPILOG)
def rolling_restart(ctx: typer.Context, inventory: str = INVENTORY, known_hosts: Path = KNOWN_HOSTS,
                    trust_on_first_use: bool = TOFU, connect_timeout: float = CONNECT_TIMEOUT,
                    zookeeper_timeout: float = typer.Option(120.0, "--zookeeper-timeout", min=1,
                                                            metavar="SECONDS",
                                                            help="Bound on each ZooKeeper server's return."),
                    broker_timeout: float = typer.Option(600.0, "--broker-timeout", min=1, metavar="SECONDS",
                                                         help="Bound on each broker's return to every ISR.")) -> None:
    """Restart every service, one at a time, without losing availability.

    ZooKeeper followers, then its leader; then the brokers by controlled
    shutdown, the controller last. After each: wait until it is back (a
    broker: registered, no partition under-replicated or leaderless). The
    first failure or timeout stops the roll and leaves the rest untouched.
    This is how a newly installed release or config is switched to."""
    from kafkactl.cli.deploy_report import rolling_report
    from kafkactl.cli.errors import CliError
    from kafkactl.cluster.deploy.operations import SshCluster
    from kafkactl.cluster.deploy.rolling_restart import RollingRestart, RollSettings, RollStopped

    deployment = _deployment(ctx, inventory, known_hosts, trust_on_first_use, 1, connect_timeout, None)
    settings = RollSettings(zookeeper_timeout_s=zookeeper_timeout, broker_timeout_s=broker_timeout)
    output = shared(ctx).output
    roll = RollingRestart(deployment.inventory, SshCluster(deployment), settings,
                          report=lambda restarted: rolling_report([restarted], output, progress=True))
    try:
        done = roll.run()
    except RollStopped as stopped:
        raise CliError(str(stopped)) from None
    rolling_report(done, output, progress=False)


@app.command(epilog=SHARED_EPILOG)
def uninstall(ctx: typer.Context, inventory: str = INVENTORY, known_hosts: Path = KNOWN_HOSTS,
              trust_on_first_use: bool = TOFU, parallel: int = PARALLEL, connect_timeout: float = CONNECT_TIMEOUT,
              host: list[str] = HOSTS,
              purge_data: bool = typer.Option(False, "--purge-data",
                                              help="Also delete ZooKeeper's data and every log dir's contents: "
                                                   "all messages are lost."),
              yes: bool = typer.Option(False, "--yes", help="Do not ask before --purge-data.")) -> None:
    """Stop the services and remove what the deploy installed. Data stays unless --purge-data."""
    from kafkactl.cli.deploy_report import uninstall_report
    from kafkactl.cluster.deploy.operations import uninstall_all

    deployment = _deployment(ctx, inventory, known_hosts, trust_on_first_use, parallel, connect_timeout, host)
    if purge_data and not yes:
        typer.confirm(f"Delete all data of {len(deployment.targets())} hosts, every message included?", abort=True)
    uninstall_report(uninstall_all(deployment, purge_data), shared(ctx).output)
