"""A command whose extra is not installed says which, in one line, exit 2.

Here the planner's modules are installed (make setup installs every extra),
so a missing one is simulated by asking for a module that does not exist, or
by hiding the planner's from the check; tests/integration/deploy/
test_wheelhouse.py runs `kafkactl plan` in a real core-only install.
"""

import subprocess
import sys

import pytest

from kafkactl.cli import extras
from kafkactl.cli.errors import EXIT_USAGE, CliUsageError
from kafkactl.cli.main import main


def test_installed_modules_pass():
    extras.require(("json", "typer"), extra="planner", what="the planner")
    extras.require("json", extra="deploy", what="kafkactl deploy")


def test_a_missing_module_names_the_extra_and_how_to_install_it():
    with pytest.raises(CliUsageError) as raised:
        extras.require(("json", "no_such_module_kafkactl", "no_such_other"), extra="deploy", what="kafkactl deploy")
    assert raised.value.exit_code == EXIT_USAGE
    assert raised.value.message == ("kafkactl deploy needs the 'deploy' extra: pip install 'kafkactl[deploy]' "
                                     "(not installed: no_such_module_kafkactl, no_such_other)")


def test_the_check_imports_nothing():
    probe = ("import sys; from kafkactl.cli.extras import PLANNER_MODULES, missing_modules; "
             "assert missing_modules(PLANNER_MODULES) == []; print([m for m in PLANNER_MODULES if m in sys.modules])")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_plan_without_the_planner_extra_is_one_line_and_exit_2(capsys, monkeypatch, tmp_path):
    hidden = {"pyspark", "matplotlib"}
    real = extras.missing_modules
    monkeypatch.setattr(extras, "missing_modules", lambda names: [n for n in names if n in hidden or real([n])])
    code = main(["plan", "--snapshot", str(tmp_path), "--out", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err == ("kafkactl: error: the planner needs the 'planner' extra: pip install 'kafkactl[planner]' "
                   "(not installed: pyspark, matplotlib)\n")
    assert not (tmp_path / "out").exists()
