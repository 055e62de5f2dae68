"""Shared options, and the argv pre-pass that lets them appear anywhere.

Click only accepts a group's options before the subcommand name, but users
write `kafkactl cluster status -o json` as often as `kafkactl -o json cluster
status`. So `main()` first runs `lift_shared_options(argv)`: it walks argv,
removes every shared option (with its value) wherever it appears, and
returns them as a `SharedOptions` plus the remaining argv, which typer then
parses as usual. Commands read the shared values from `ctx.obj`.

Rules (mirroring click's own parsing):
- `--output json`, `--output=json`, `-o json` and `-ojson` are all accepted;
- a later occurrence wins over an earlier one;
- everything after a bare `--` is left untouched (the `--` too), so a
  positional argument that happens to look like a shared option can be
  passed after it;
- the shared option names are therefore reserved: no subcommand may define
  an option called -z/--zookeeper, -b/--bootstrap-server, --context,
  -o/--output, --timeout or --debug, and a subcommand option's *value*
  cannot be one of those words;
- -z and -b name two ways to the same cluster, so giving both is refused.
"""

from collections.abc import Sequence
from dataclasses import dataclass, replace

from kafkactl.cli.errors import CliUsageError

OUTPUT_FORMATS = ("table", "json", "yaml")


@dataclass(frozen=True, slots=True)
class SharedOptions:
    zookeeper: str | None = None   # --zookeeper/-z HOST:PORT[,HOST:PORT][/chroot]
    bootstrap_server: str | None = None  # --bootstrap-server/-b HOST:PORT[,HOST:PORT]: the Admin API
    context: str | None = None     # --context NAME
    output: str = "table"          # --output/-o table|json|yaml
    timeout_s: float | None = None  # --timeout SECONDS; None: the command's default
    debug: bool = False            # --debug: tracebacks and debug logging


@dataclass(frozen=True, slots=True)
class _Spec:
    field: str
    takes_value: bool
    names: tuple[str, ...]


_SPECS = (
    _Spec("zookeeper", True, ("--zookeeper", "-z")),
    _Spec("bootstrap_server", True, ("--bootstrap-server", "-b")),
    _Spec("context", True, ("--context",)),
    _Spec("output", True, ("--output", "-o")),
    _Spec("timeout_s", True, ("--timeout",)),
    _Spec("debug", False, ("--debug",)),
)
_LONG = {name: spec for spec in _SPECS for name in spec.names if name.startswith("--")}
_SHORT = {name: spec for spec in _SPECS for name in spec.names if not name.startswith("--")}
SHARED_OPTION_NAMES = frozenset(_LONG) | frozenset(_SHORT)


def lift_shared_options(argv: Sequence[str]) -> tuple[SharedOptions, list[str]]:
    """Split argv into the shared options and everything else (see module doc)."""
    raw: dict[str, str | bool] = {}
    rest: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            rest.extend(argv[i:])
            break
        spec, inline = _match(arg)
        if spec is None:
            rest.append(arg)
        elif not spec.takes_value:
            if inline is not None:
                raise CliUsageError(f"option {spec.names[0]} takes no value (got {arg!r})")
            raw[spec.field] = True
        elif inline is not None:
            raw[spec.field] = inline
        else:
            if i + 1 >= len(argv) or _looks_like_option(argv[i + 1]):
                raise CliUsageError(f"option {_label(spec)} requires a value")
            i += 1
            raw[spec.field] = argv[i]
        i += 1
    return _build(raw), rest


def merge(options: SharedOptions, **given: object) -> SharedOptions:
    """Overlay values typer parsed itself (root-level options) onto `options`."""
    changes = {k: v for k, v in given.items() if v is not None and v is not False}
    if "output" in changes:
        changes["output"] = _check_output(str(changes["output"]))
    if "timeout_s" in changes:
        changes["timeout_s"] = _check_timeout(str(changes["timeout_s"]))
    return _check_one_backend(replace(options, **changes))


def _match(arg: str) -> tuple[_Spec | None, str | None]:
    """The shared option `arg` names, and its inline value if it carries one."""
    if arg.startswith("--"):
        name, eq, value = arg.partition("=")
        spec = _LONG.get(name)
        return spec, (value if eq else None)
    if arg.startswith("-") and len(arg) >= 2:
        spec = _SHORT.get(arg[:2])
        if spec is None or len(arg) == 2:
            return spec, None
        # click reads "-ojson" as "-o json"; "-o=json" is accepted as a courtesy.
        return spec, arg[2:].removeprefix("=")
    return None, None


def _looks_like_option(arg: str) -> bool:
    return arg.startswith("-") and arg != "-"


def _label(spec: _Spec) -> str:
    return "/".join(reversed(spec.names)) if len(spec.names) > 1 else spec.names[0]


def _build(raw: dict[str, str | bool]) -> SharedOptions:
    values: dict[str, object] = dict(raw)
    if "output" in values:
        values["output"] = _check_output(str(values["output"]))
    if "timeout_s" in values:
        values["timeout_s"] = _check_timeout(str(values["timeout_s"]))
    for key in ("zookeeper", "bootstrap_server", "context"):
        if key in values and not str(values[key]).strip():
            raise CliUsageError(f"option --{key.replace('_', '-')} needs a non-empty value")
    return _check_one_backend(SharedOptions(**values))


def _check_one_backend(options: SharedOptions) -> SharedOptions:
    if options.zookeeper and options.bootstrap_server:
        raise CliUsageError("give -z/--zookeeper or -b/--bootstrap-server, not both "
                            "(two ways to one cluster; pick the one to use)")
    return options


def _check_output(value: str) -> str:
    if value not in OUTPUT_FORMATS:
        raise CliUsageError(f"invalid --output {value!r}: choose one of {', '.join(OUTPUT_FORMATS)}")
    return value


def _check_timeout(value: str) -> float:
    try:
        timeout_s = float(value)
    except ValueError:
        raise CliUsageError(f"invalid --timeout {value!r}: expected a number of seconds") from None
    if not timeout_s > 0 or timeout_s == float("inf"):
        raise CliUsageError(f"invalid --timeout {value!r}: must be a positive number of seconds")
    return timeout_s
