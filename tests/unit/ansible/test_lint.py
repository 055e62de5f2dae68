"""ansible/ passes ansible-lint's production profile, offline (no Galaxy: only
ansible.builtin is used, and nothing is downloaded)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
LINT_TIMEOUT_S = 300


def test_ansible_lint_production_profile_passes():
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env["NO_COLOR"] = "1"
    done = subprocess.run([str(Path(sys.executable).parent / "ansible-lint"), "--offline", "--nocolor",
                           "--profile", "production", "ansible/"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=LINT_TIMEOUT_S)
    assert done.returncode == 0, f"ansible-lint exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
