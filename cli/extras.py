"""Optional parts of kafkactl: a command whose extra is not installed says which.

The core install is what a broker host gets (pyproject.toml's
`dependencies`); the planner's PySpark, pandas, pyarrow and matplotlib are the
`planner` extra, deploy's paramiko the `deploy` extra. A command that needs an
extra calls `require(...)` before it imports anything from it, so a missing
extra is one line and exit 2 (a CliUsageError: the install, not the run, is
what is wrong), never an ImportError traceback.

Only the presence of the top-level modules is checked (importlib's finder:
nothing is imported here), so the check costs no start-up time.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence

from kafkactl.cli.errors import CliUsageError

# The modules each extra brings, as `import` names (pyproject.toml's extras list their distributions).
PLANNER_MODULES = ("pyspark", "pandas", "pyarrow", "matplotlib")
DEPLOY_MODULES = ("paramiko",)


def missing_modules(modules: Sequence[str]) -> list[str]:
    """The top-level modules of `modules` that cannot be found, in the order given."""
    return [name for name in modules if importlib.util.find_spec(name) is None]


def extra_message(what: str, extra: str, missing: Sequence[str]) -> str:
    """The one line for a missing extra (pure)."""
    return (f"{what} needs the '{extra}' extra: pip install 'kafkactl[{extra}]' "
            f"(not installed: {', '.join(missing)})")


def require(modules: str | Sequence[str], extra: str, what: str) -> None:
    """Raise CliUsageError (exit 2) naming the extra when any of `modules` is not installed.

    `what` names the needing part for the message, e.g. "the planner" or
    "kafkactl deploy"."""
    names = (modules,) if isinstance(modules, str) else tuple(modules)
    missing = missing_modules(names)
    if missing:
        raise CliUsageError(extra_message(what, extra, missing))
