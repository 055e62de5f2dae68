"""`kafkactl controller`: which broker is the active controller, and its epoch."""

from __future__ import annotations

import typer

from kafkactl.cli.common import SHARED_EPILOG, ZK_TIMEOUT_S, shared, timeout_s, zookeeper

app = typer.Typer(help="The active controller.", no_args_is_help=True, epilog=SHARED_EPILOG)


@app.command(epilog=SHARED_EPILOG)
def show(ctx: typer.Context) -> None:
    """The controller's broker id, the controller epoch, and when it was elected (/controller)."""
    import time

    from kafkactl.cluster.admin.inspect import format_time_ms, read_controller

    from kafkactl.cli.output import emit

    with zookeeper(ctx) as client:
        info = read_controller(client, timeout_s(ctx, ZK_TIMEOUT_S))
    data = {"controller_id": info.broker_id, "controller_epoch": info.epoch,
            "elected_ms": info.timestamp_ms or None}

    def text() -> str:
        if info.broker_id < 0:
            return f"no active controller (controller epoch {info.epoch})"
        elected = format_time_ms(info.timestamp_ms, int(time.time() * 1000))
        return (f"controller:        broker {info.broker_id}\n"
                f"controller epoch:  {info.epoch}\n"
                f"elected:           {elected}")

    emit(data, shared(ctx).output, text)
