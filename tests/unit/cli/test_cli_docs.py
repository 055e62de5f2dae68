"""docs/cli.md cannot drift from the app: every command has an example in
scripts/cli_docs.py, and the help printed in the page is the app's current
help. Regenerate with `make docs` when this fails."""

import importlib.util
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def load_generator():
    spec = importlib.util.spec_from_file_location("cli_docs", REPO / "scripts" / "cli_docs.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module      # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_every_command_has_an_example():
    docs = load_generator()
    missing = set(docs.commands()) - docs.documented_paths()
    assert not missing, f"no example in scripts/cli_docs.py for: {sorted(missing)}"


def test_the_page_has_every_commands_current_help():
    docs = load_generator()
    page = (REPO / "docs" / "cli.md").read_text()
    stale = [" ".join(path) for path in docs.commands()
             if f"### kafkactl {' '.join(path)}\n\n```text\n{docs.help_text(path)}\n```" not in page]
    assert not stale, f"docs/cli.md is stale for {stale}: run `make docs`"
