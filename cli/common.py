"""Helpers every noun module uses: the shared options, and the way to the
cluster: ZooKeeper (`zookeeper(ctx)`) or either back end (`cluster_backend(ctx)`)."""

from contextlib import contextmanager

import typer

from kafkactl.cli.options import SharedOptions

# Shown under every noun's and command's --help: typer lists the shared
# options only on the root, yet they are accepted everywhere.
SHARED_EPILOG = ("Shared options -z/--zookeeper, -b/--bootstrap-server, --context, -o/--output, --timeout "
                 "and --debug are accepted here too (see `kafkactl --help`).")


def shared(ctx: typer.Context) -> SharedOptions:
    """The shared options main() lifted from argv (defaults when run otherwise)."""
    obj = ctx.find_root().obj
    return obj if isinstance(obj, SharedOptions) else SharedOptions()


def unreachable_hint(source: str) -> str:
    """What to check when ZooKeeper does not answer: the local cluster only
    when the address came from a context, else where the address came from."""
    if source.startswith(("--zookeeper", "$")):
        return f"is ZooKeeper running there? (the address is from {source})"
    return f"is the cluster up? (`kafkactl cluster status`; the address is from the {source})"


def timeout_s(ctx: typer.Context, default_s: float) -> float:
    value = shared(ctx).timeout_s
    return default_s if value is None else value


ZK_TIMEOUT_S = 10.0


def connect_zookeeper(address: str, timeout_s: float):
    """A started kazoo client; unit tests replace this with an in-memory one."""
    from kafkactl.cluster.zk import client as zk_client

    return zk_client.connect(address, connection_timeout_ms=int(timeout_s * 1000))


@contextmanager
def completion_backend(ctx: typer.Context, timeout_s: float):
    """The cluster for shell completion, from the -z/-b/--context typed so far
    (completion runs before main() lifts the shared options)."""
    from kafkactl.cluster.admin.admin_backend import AdminApiBackend
    from kafkactl.cluster.admin.admin_client import AdminClient, parse_bootstrap
    from kafkactl.cluster.admin.backend import ZooKeeperBackend

    from kafkactl.cli.config import ZOOKEEPER, resolve_target

    root = ctx.find_root().params
    options = SharedOptions(zookeeper=root.get("zookeeper"), bootstrap_server=root.get("bootstrap_server"),
                            context=root.get("context"))
    target = resolve_target(options)
    if target.backend != ZOOKEEPER:
        with AdminClient(parse_bootstrap(target.address), timeout_s) as admin:
            yield AdminApiBackend(admin, timeout_s)
        return
    client = connect_zookeeper(target.address, timeout_s)
    try:
        yield ZooKeeperBackend(client, timeout_s)
    finally:
        client.stop()
        client.close()


ADMIN_TIMEOUT_S = 30.0   # the whole command over the Admin API, whatever it asks


def refuse_admin_api(ctx: typer.Context, why: str) -> None:
    """Exit 2 with one line when the cluster is given by bootstrap servers and
    only ZooKeeper can do what was asked (`why` says what it is)."""
    from kafkactl.cli.config import ADMIN_API, resolve_target
    from kafkactl.cli.errors import CliUsageError

    target = resolve_target(shared(ctx))
    if target.backend == ADMIN_API:
        raise CliUsageError(f"{why}: not possible through the Admin API (bootstrap servers from "
                            f"{target.source}); give -z/--zookeeper HOST:PORT")


@contextmanager
def zookeeper(ctx: typer.Context, why: str = "this command works through ZooKeeper only"):
    """The cluster's ZooKeeper for the length of a command, bounded by --timeout;
    exit 2 with `why` when the cluster is given by bootstrap servers."""
    from kafkactl.cluster.zk import client as zk_client

    from kafkactl.cli.errors import CliError

    from kafkactl.cli.config import resolve_zookeeper

    refuse_admin_api(ctx, why)
    resolved = resolve_zookeeper(shared(ctx))
    try:
        client = connect_zookeeper(resolved.zookeeper, timeout_s(ctx, ZK_TIMEOUT_S))
    except zk_client.ZooKeeperUnavailable as error:
        raise CliError(f"{error}; {unreachable_hint(resolved.source)}") from None
    try:
        yield client
    finally:
        zk_client.close(client)


def is_admin_api(ctx: typer.Context) -> bool:
    from kafkactl.cli.config import ADMIN_API, resolve_target

    return resolve_target(shared(ctx)).backend == ADMIN_API


@contextmanager
def cluster_backend(ctx: typer.Context, zk_timeout_s: float = ZK_TIMEOUT_S, admin_extra_s: float = 0.0):
    """The cluster through ZooKeeper or the Admin API, whichever was given,
    as a ClusterBackend (cluster/admin/backend.py), for one command. Failures
    become one-line errors: refused input exit 2, no answer exit 1.
    `admin_extra_s`: added to the Admin API's deadline, for a command that
    waits for up to --timeout and then still asks the cluster."""
    from kafkactl.cluster.admin.admin_client import AdminApiError
    from kafkactl.cluster.admin.backend import RefusedChange, Unsupported, ZooKeeperBackend

    from kafkactl.cli.errors import CliError, CliUsageError

    try:
        if is_admin_api(ctx):
            with admin_backend(ctx, admin_extra_s) as backend:
                yield backend
        else:
            with zookeeper(ctx) as client:
                yield ZooKeeperBackend(client, timeout_s(ctx, zk_timeout_s))
    except (RefusedChange, Unsupported) as error:
        raise CliUsageError(str(error)) from None
    except AdminApiError as error:
        raise CliError(str(error)) from None


@contextmanager
def admin_backend(ctx: typer.Context, extra_s: float = 0.0):
    """An AdminApiBackend on the bootstrap servers, bounded by --timeout (default 30 s) plus `extra_s`."""
    from kafkactl.cluster.admin.admin_backend import AdminApiBackend
    from kafkactl.cluster.admin.admin_client import AdminClient, parse_bootstrap

    from kafkactl.cli.config import resolve_target

    target = resolve_target(shared(ctx))
    deadline_s = timeout_s(ctx, ADMIN_TIMEOUT_S) + extra_s
    with AdminClient(parse_bootstrap(target.address), deadline_s) as client:
        yield AdminApiBackend(client, deadline_s)
