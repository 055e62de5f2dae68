"""Helpers every noun module uses: the shared options and the ZooKeeper address."""

import typer

from .options import SharedOptions

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
    from .config import resolve_zookeeper

    return resolve_zookeeper(shared(ctx)).zookeeper


def timeout_s(ctx: typer.Context, default_s: float) -> float:
    value = shared(ctx).timeout_s
    return default_s if value is None else value
