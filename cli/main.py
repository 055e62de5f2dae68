"""kafkactl's entry point: the root typer app, its nouns, and the error edge.

Adding a noun: write `cli/<noun>.py` exposing `app = typer.Typer(...)` (or,
for a noun that is a single command, a function `command`), then add its
name to NOUNS. Noun modules must keep their top-level imports light
(typer and the stdlib): heavy modules (kazoo, kio, tabulate, the broker) are
imported inside the commands, so `kafkactl --help` stays fast.

Shared options (-z/--zookeeper, -b/--bootstrap-server, --context, -o/--output,
--timeout, --debug)
are lifted out of argv before typer parses it; see options.py.
"""

import importlib
import logging
import sys
import traceback
from collections.abc import Sequence

import typer

from kafkactl.cli.errors import EXIT_FAILED, EXIT_USAGE, CliError
from kafkactl.cli.options import SharedOptions, lift_shared_options, merge

PROG = "kafkactl"
NOUNS = ("cluster", "context", "topics", "isr", "brokers", "controller", "reassign", "elect", "configs",
         "metrics", "plan", "groups", "deploy")

app = typer.Typer(
    name=PROG,
    help="Administer Kafka clusters through ZooKeeper (-z) or the Admin API (-b), and run a local one.",
    no_args_is_help=True,
    # Plain click help: rendering with rich costs more start-up time than it is worth.
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog="Shared options may also be given after the subcommand, "
           "e.g. `kafkactl cluster status -o json`.",
)


@app.callback()
def root(
    ctx: typer.Context,
    zookeeper: str | None = typer.Option(
        None, "--zookeeper", "-z", metavar="HOST:PORT[/chroot]",
        help="ZooKeeper to talk to [env: KAFKACTL_ZOOKEEPER]; overrides --context."),
    bootstrap_server: str | None = typer.Option(
        None, "--bootstrap-server", "-b", metavar="HOST:PORT[,HOST:PORT]",
        help="Brokers to talk to through the Kafka Admin API instead of ZooKeeper (also KRaft clusters) "
             "[env: KAFKACTL_BOOTSTRAP_SERVERS]; overrides --context."),
    context: str | None = typer.Option(None, "--context", metavar="NAME",
                                       help="Use this context from the config file."),
    output: str | None = typer.Option(None, "--output", "-o", metavar="table|json|yaml",
                                      help="Output format.  [default: table]"),
    timeout: float | None = typer.Option(None, "--timeout", metavar="SECONDS",
                                         help="Deadline for the operation."),
    debug: bool = typer.Option(False, "--debug", help="Debug logging; tracebacks on errors."),
) -> None:
    # Via main() these were lifted from argv already and arrive as None; they
    # are declared here for --help, completion, and callers that run `app`
    # directly (e.g. typer's CliRunner), for which they are merged in.
    base = ctx.obj if isinstance(ctx.obj, SharedOptions) else SharedOptions()
    ctx.obj = merge(base, zookeeper=zookeeper, bootstrap_server=bootstrap_server, context=context, output=output,
                    timeout_s=timeout, debug=debug)
    _configure_logging(ctx.obj.debug)


def _register_nouns() -> None:
    from kafkactl.cli.common import SHARED_EPILOG

    for noun in NOUNS:
        module = importlib.import_module(f"{__package__}.{noun}")
        if hasattr(module, "command"):  # a noun that is one command, e.g. `kafkactl plan --snapshot DIR ...`
            app.command(name=noun, epilog=SHARED_EPILOG)(module.command)
        else:
            app.add_typer(module.app, name=noun)


_register_nouns()


def main(argv: Sequence[str] | None = None) -> int:
    """Run kafkactl on argv (default sys.argv[1:]); return the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv[: argv.index("--")] if "--" in argv else "--debug" in argv
    try:
        options, rest = lift_shared_options(argv)
        _configure_logging(options.debug)
        command = typer.main.get_command(app)
        result = command.main(args=rest, prog_name=PROG, standalone_mode=False, obj=options)
        return result if isinstance(result, int) else 0
    except CliError as exc:
        return _report(exc.message, exc.exit_code, exc.details, debug)
    except typer.Abort:
        return _report("aborted", EXIT_FAILED, "", debug)
    except KeyboardInterrupt:
        return _report("interrupted", 130, "", debug)
    except SystemExit as exc:  # typer's completion options exit by themselves
        return _exit_code(exc)
    except Exception as exc:  # click's own errors, then genuine bugs
        return _report_unexpected(exc, debug)


def _exit_code(exc: SystemExit) -> int:
    if exc.code is None or isinstance(exc.code, int):
        return exc.code or 0
    print(exc.code, file=sys.stderr)
    return EXIT_FAILED


def _report_unexpected(exc: Exception, debug: bool) -> int:
    from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError

    if isinstance(exc, NoArgsIsHelpError):  # a bare `kafkactl` or `kafkactl cluster`
        print(exc.format_message(), file=sys.stderr)
        return EXIT_USAGE
    if isinstance(exc, UsageError):
        hint = f" (see `{exc.ctx.command_path} --help`)" if exc.ctx else ""
        return _report(exc.format_message() + hint, EXIT_USAGE, "", debug)
    if isinstance(exc, ClickException):
        return _report(exc.format_message(), exc.exit_code, "", debug)
    if isinstance(exc, BrokenPipeError):
        return EXIT_FAILED  # `kafkactl ... | head`: nothing useful to say
    message = f"internal error: {type(exc).__name__}: {exc}"
    if not debug:
        message += " (rerun with --debug for a traceback)"
    return _report(message, EXIT_FAILED, "", debug)


def _report(message: str, code: int, details: str, debug: bool) -> int:
    if debug and sys.exc_info()[0] is not None:
        traceback.print_exc(file=sys.stderr)
    print(f"{PROG}: error: {message}", file=sys.stderr)
    if details:
        print(details, file=sys.stderr)
    return code


def _configure_logging(debug: bool) -> None:
    root_logger = logging.getLogger()
    if debug:
        if not root_logger.handlers:
            logging.basicConfig(level=logging.DEBUG, stream=sys.stderr,
                                format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        root_logger.setLevel(logging.DEBUG)
    elif not root_logger.handlers:
        # Libraries (kazoo) log connection trouble; without --debug the error
        # that reaches the edge is the one line the user sees.
        root_logger.addHandler(logging.NullHandler())
