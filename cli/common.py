"""Helpers every noun module uses: the shared options and the ZooKeeper connection."""

from contextlib import contextmanager

import typer

from kafkactl.cli.options import SharedOptions

# Shown under every noun's and command's --help: typer lists the shared
# options only on the root, yet they are accepted everywhere.
SHARED_EPILOG = ("Shared options -z/--zookeeper, --context, -o/--output, --timeout and "
                 "--debug are accepted here too (see `kafkactl --help`).")


def shared(ctx: typer.Context) -> SharedOptions:
    """The shared options main() lifted from argv (defaults when run otherwise)."""
    obj = ctx.find_root().obj
    return obj if isinstance(obj, SharedOptions) else SharedOptions()


def zookeeper_address(ctx: typer.Context) -> str:
    """Where to find ZooKeeper, by the documented resolution order."""
    from kafkactl.cli.config import resolve_zookeeper

    return resolve_zookeeper(shared(ctx)).zookeeper


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
def completion_zookeeper(ctx: typer.Context, timeout_s: float):
    """ZooKeeper for shell completion, from the -z/--context typed so far
    (completion runs before main() lifts the shared options)."""
    from kafkactl.cli.config import resolve_zookeeper

    root = ctx.find_root().params
    options = SharedOptions(zookeeper=root.get("zookeeper"), context=root.get("context"))
    client = connect_zookeeper(resolve_zookeeper(options).zookeeper, timeout_s)
    try:
        yield client
    finally:
        client.stop()
        client.close()


@contextmanager
def zookeeper(ctx: typer.Context):
    """The cluster's ZooKeeper for the length of a command, bounded by --timeout."""
    from kafkactl.cluster.zk import client as zk_client

    from kafkactl.cli.errors import CliError

    from kafkactl.cli.config import resolve_zookeeper

    resolved = resolve_zookeeper(shared(ctx))
    try:
        client = connect_zookeeper(resolved.zookeeper, timeout_s(ctx, ZK_TIMEOUT_S))
    except zk_client.ZooKeeperUnavailable as error:
        raise CliError(f"{error}; {unreachable_hint(resolved.source)}") from None
    try:
        yield client
    finally:
        zk_client.close(client)
