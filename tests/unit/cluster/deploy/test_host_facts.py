"""host_facts.py run here, as the deploy runs it on a host: `python3 - REQUEST < host_facts.py`."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from importlib import resources

SCRIPT = resources.files("kafkactl.cluster.deploy").joinpath("host_facts.py").read_text()


def run_facts(request: dict) -> dict:
    result = subprocess.run(["/usr/bin/python3", "-", json.dumps(request)], input=SCRIPT, capture_output=True,
                            text=True, timeout=60, check=True)
    return json.loads(result.stdout)


def test_facts_of_this_machine(tmp_path):
    root = tmp_path / "opt"
    (root / "versions" / "0.1.0-aaaaaaaaaaaa").mkdir(parents=True)
    (root / "versions" / "0.1.0-aaaaaaaaaaaa" / "installed.json").write_text("{}")
    (root / "versions" / "0.2.0-bbbbbbbbbbbb").mkdir()
    os.symlink("versions/0.1.0-aaaaaaaaaaaa", root / "current")
    (root / "etc" / "services").mkdir(parents=True)
    (root / "etc" / "services" / "broker.json").write_text(json.dumps({"release": "0.0.9-999999999999"}))
    (root / "run").mkdir()
    (root / "run" / "broker.running.json").write_text(json.dumps({"release": "0.0.8-888888888888"}))
    config = root / "etc" / "server.properties"
    config.write_text("broker.id=1\n")
    facts = run_facts({"install_root": str(root), "files": [str(config), str(root / "missing")],
                       "dirs": [str(tmp_path / "a" / "b"), str(config)], "jars": ["/usr/share/java/zookeeper.jar"]})
    assert facts["version"] == 1
    assert facts["python"]["executable"] and facts["python"]["version"].startswith("3.") and facts["python"]["venv"]
    assert facts["releases"] == {"0.1.0-aaaaaaaaaaaa": True, "0.2.0-bbbbbbbbbbbb": False}
    assert facts["current"] == "0.1.0-aaaaaaaaaaaa"
    assert facts["in_use"] == ["0.0.8-888888888888", "0.0.9-999999999999"]
    assert facts["files"] == {str(config): hashlib.sha256(b"broker.id=1\n").hexdigest(), str(root / "missing"): None}
    missing, a_file = facts["dirs"]
    assert missing == {"path": str(tmp_path / "a" / "b"), "exists": False, "is_dir": False, "writable": True,
                       "read_only": False}
    assert a_file["exists"] and not a_file["is_dir"]
    assert facts["jars"] == {"/usr/share/java/zookeeper.jar": True}   # make setup installs zookeeper
