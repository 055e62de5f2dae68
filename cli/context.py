"""`kafkactl context`: named cluster addresses (ZooKeeper, or bootstrap servers) in the user's config file."""

import typer

from kafkactl.cli.common import SHARED_EPILOG, shared

app = typer.Typer(help="Manage named contexts (ZooKeeper addresses or bootstrap servers) in the config file.",
                  no_args_is_help=True, epilog=SHARED_EPILOG)


@app.command("list", epilog=SHARED_EPILOG)
def list_contexts(ctx: typer.Context) -> None:
    """List contexts; the current one is marked with *."""
    from kafkactl.cli.config import load_config
    from kafkactl.cli.output import emit, render_table

    config = load_config()
    data = {"current_context": config.current_context, "config_file": str(config.path),
            "contexts": [{"name": name, "current": name == config.current_context, **entry}
                         for name, entry in sorted(config.contexts.items())]}
    rows = [["*" if c["current"] else "", c["name"], c.get("zookeeper", ""), c.get("bootstrap_servers", ""),
             c.get("cluster_dir", "")] for c in data["contexts"]]
    emit(data, shared(ctx).output,
         lambda: render_table(rows, ["", "NAME", "ZOOKEEPER", "BOOTSTRAP SERVERS", "CLUSTER DIR"]))


@app.command("use", epilog=SHARED_EPILOG)
def use_context(ctx: typer.Context, name: str = typer.Argument(..., help="Context to make current.")) -> None:
    """Make NAME the current context."""
    from kafkactl.cli.config import context_entry, load_config, save_config

    config = load_config()
    context_entry(config, name)  # refuses unknown names
    config.current_context = name
    save_config(config)
    _done(ctx, f"current context is now {name!r}", {"current_context": name})


@app.command("set", epilog=SHARED_EPILOG)
def set_context(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="Context to create or update."),
    cluster_dir: str | None = typer.Option(None, "--cluster-dir", metavar="DIR",
                                           help="Local cluster directory this context belongs to."),
    use: bool = typer.Option(False, "--use", help="Also make it the current context."),
) -> None:
    """Create or update NAME; its address comes from the shared --zookeeper
    or --bootstrap-server option, and replaces the other kind.

    Examples: kafkactl context set prod --zookeeper zk1:2181,zk2:2181/kafka --use;
    kafkactl context set kraft --bootstrap-server k1:9092,k2:9092
    """
    from pathlib import Path

    from kafkactl.cli.config import (
        BOOTSTRAP_KEY, check_bootstrap, check_context_name, check_zookeeper, load_config, save_config,
    )
    from kafkactl.cli.errors import CliUsageError

    check_context_name(name)
    config = load_config()
    entry = dict(config.contexts.get(name, {}))
    options = shared(ctx)
    if options.zookeeper:
        entry["zookeeper"] = check_zookeeper(options.zookeeper)
        entry.pop(BOOTSTRAP_KEY, None)   # a context holds one way to its cluster
    if options.bootstrap_server:
        entry[BOOTSTRAP_KEY] = check_bootstrap(options.bootstrap_server)
        entry.pop("zookeeper", None)
    if cluster_dir:
        entry["cluster_dir"] = str(Path(cluster_dir).expanduser().absolute())
    if "zookeeper" not in entry and BOOTSTRAP_KEY not in entry:
        raise CliUsageError(f"context {name!r} needs an address: add --zookeeper HOST:PORT[/chroot] "
                            f"or --bootstrap-server HOST:PORT")
    config.contexts[name] = entry
    if use or config.current_context is None:
        config.current_context = name
    save_config(config)
    _done(ctx, f"context {name!r} saved", {"name": name, **entry,
                                            "current": config.current_context == name})


@app.command("delete", epilog=SHARED_EPILOG)
def delete_context(ctx: typer.Context, name: str = typer.Argument(..., help="Context to delete.")) -> None:
    """Delete NAME (and unset it if it was current)."""
    from kafkactl.cli.config import context_entry, load_config, save_config

    config = load_config()
    context_entry(config, name)
    del config.contexts[name]
    if config.current_context == name:
        config.current_context = None
    save_config(config)
    _done(ctx, f"context {name!r} deleted", {"deleted": name})


@app.command("current", epilog=SHARED_EPILOG)
def current_context(ctx: typer.Context) -> None:
    """Show which cluster address commands would use (ZooKeeper or bootstrap servers), and why."""
    from kafkactl.cli.config import ZOOKEEPER, resolve_target

    target = resolve_target(shared(ctx))
    key = "zookeeper" if target.backend == ZOOKEEPER else "bootstrap_servers"
    data = {key: target.address, "backend": target.backend, "source": target.source}
    _done(ctx, f"{target.address} ({key.replace('_', ' ')}, from {target.source})", data)


def _done(ctx: typer.Context, message: str, data: dict) -> None:
    from kafkactl.cli.output import emit

    emit(data, shared(ctx).output, lambda: message)
