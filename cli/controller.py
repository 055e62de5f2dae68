"""`kafkactl controller`: which broker is the active controller, and its epoch."""

from __future__ import annotations

import typer

from kafkactl.cli.common import SHARED_EPILOG, cluster_backend, shared

app = typer.Typer(help="The active controller.", no_args_is_help=True, epilog=SHARED_EPILOG)


@app.command(epilog=SHARED_EPILOG)
def show(ctx: typer.Context) -> None:
    """The controller's broker id, the controller epoch, and when it was elected (/controller).

    Through the Admin API (-b) only the id: Metadata says neither the epoch
    nor the time (null with -o json, "unknown" in the table)."""
    import time

    from kafkactl.cluster.admin.inspect import format_time_ms

    from kafkactl.cli.output import emit

    with cluster_backend(ctx) as backend:
        info = backend.controller()
    epoch = info.epoch if info.epoch >= 0 or info.elected_ms else None
    data = {"controller_id": info.broker_id, "controller_epoch": epoch, "elected_ms": info.elected_ms or None}

    def text() -> str:
        shown_epoch = "unknown" if epoch is None else epoch
        if info.broker_id < 0:
            return f"no active controller (controller epoch {shown_epoch})"
        elected = format_time_ms(info.elected_ms, int(time.time() * 1000)) if info.elected_ms else "unknown"
        return (f"controller:        broker {info.broker_id}\n"
                f"controller epoch:  {shown_epoch}\n"
                f"elected:           {elected}")

    emit(data, shared(ctx).output, text)
