"""The wheelhouse a host installs, built from this checkout with real pip and installed offline.

One build for the module (pip's cache and PyPI supply the dependencies'
wheels; kafkactl's own wheel compiles its C extensions). A "host" is a venv
of Debian's /usr/bin/python3 that installs from the wheelhouse alone: no
index, no pip configuration. It must run a broker and lack the extras.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

from support.waiting import wait_for

from kafkactl.cluster.deploy.wheelhouse import (
    WheelhouseError, build_wheelhouse, installed_source, load_wheelhouse, normalize_name, offline_pip_env,
    parse_wheel_name, run_bounded,
)

ROOT = Path(__file__).resolve().parents[3]
HOST_PYTHON = "/usr/bin/python3"      # Debian's, as on a bare-metal host
BUILD_TIMEOUT_S = 900.0
COMMAND_TIMEOUT_S = 300


def requirement_names(requirements: list[str]) -> set[str]:
    return {normalize_name(re.split(r"[<>=!~;\[ ]", r, maxsplit=1)[0]) for r in requirements}


PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
CORE = requirement_names(PROJECT["dependencies"])
EXTRAS = requirement_names(PROJECT["optional-dependencies"]["planner"] + PROJECT["optional-dependencies"]["deploy"])


def run(*command: str | Path, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in command], capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S,
                          env=env, cwd=cwd)


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("wheelhouse-cache")


@pytest.fixture(scope="module")
def built(cache_dir):
    return build_wheelhouse(cache_dir, timeout_s=BUILD_TIMEOUT_S)   # source: the checkout kafkactl runs from


@pytest.fixture(scope="module")
def host(built, tmp_path_factory) -> dict[str, Path]:
    """A Debian-Python venv with kafkactl installed offline from the wheelhouse."""
    root = tmp_path_factory.mktemp("host")
    venv = root / "venv"
    done = run(HOST_PYTHON, "-m", "venv", venv)
    assert done.returncode == 0, done.stderr
    done = run(venv / "bin" / "python", "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
               "--no-index", "--find-links", built.path, f"kafkactl=={built.kafkactl_version}",
               env=offline_pip_env())
    assert done.returncode == 0, done.stdout + done.stderr
    return {"bin": venv / "bin", "cwd": root}


def host_env(host) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "KAFKACTL_"))}
    env["KAFKACTL_CONFIG"] = str(host["cwd"] / "config.json")
    return env


# --- what was built

def test_it_is_built_from_this_checkout_and_holds_the_core_install_only(built):
    assert installed_source() == (ROOT, metadata.version("kafkactl"))
    assert built.kafkactl_version == metadata.version("kafkactl")
    names = {parse_wheel_name(f.name).distribution for f in built.files}
    assert CORE <= names, f"missing: {CORE - names}"
    assert names & (EXTRAS | {"py4j", "numpy"}) == set()
    assert "kafkactl" in names and built.kafkactl_wheel in {f.name for f in built.files}


def test_the_manifest_checks_with_sha256sum(built):
    done = subprocess.run(["sha256sum", "-c", "--strict", "-"], input=built.manifest_text(), text=True,
                          capture_output=True, cwd=built.path, timeout=COMMAND_TIMEOUT_S)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count(": OK") == len(built.files) == len(os.listdir(built.path))


def test_it_fits_the_host_python_and_no_other_minor_version(built):
    done = run(HOST_PYTHON, "-c", "import platform; print(platform.python_version(), platform.machine(), "
                                  "platform.libc_ver()[1])")
    version, machine, glibc = done.stdout.split()
    assert built.compatible_with(version, machine, glibc) is None
    major, minor = version.split(".")[:2]
    other = built.compatible_with(f"{major}.{int(minor) + 1}.0", machine, glibc)
    assert other is not None and f"with ABI cp{major}{minor}, not CPython {major}.{int(minor) + 1}" in other


# --- a host installs it offline

def test_the_host_runs_a_broker_with_its_compiled_record_walkers(host):
    done = run(host["bin"] / "python", "-m", "kafkactl.cluster.broker", "--help", env=host_env(host), cwd=host["cwd"])
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: kafkactl-broker")
    done = run(host["bin"] / "python", "-c", "import kafkactl.cluster.protocol._record_check, "
               "kafkactl.cluster.protocol._record_filter, kafkactl.cluster.broker.broker", env=host_env(host),
               cwd=host["cwd"])
    assert done.returncode == 0, done.stderr


def test_every_module_of_cli_and_cluster_imports_with_the_core_install_alone(host):
    # What the core dependencies must cover: all but the planner, and but the deploy shell's
    # SSH side (cluster/deploy's modules that import paramiko, the deploy extra, which the
    # deploy command reaches only behind cli/extras.py). Nothing else may need an extra.
    probe = ("import importlib, json, pkgutil, kafkactl.cli, kafkactl.cluster\n"
             "names = [m.name for p in (kafkactl.cli, kafkactl.cluster)\n"
             "         for m in pkgutil.walk_packages(p.__path__, p.__name__ + '.')\n"
             "         if not m.name.endswith('.__main__')]\n"
             "failed = {}\n"
             "for name in names:\n"
             "    try:\n"
             "        importlib.import_module(name)\n"
             "    except ModuleNotFoundError as error:\n"
             "        failed[name] = error.name\n"
             "print(json.dumps({'names': len(names), 'failed': failed}))\n")
    done = run(host["bin"] / "python", "-c", probe, env=host_env(host), cwd=host["cwd"])
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["names"] > 100   # the walk found the packages, not an empty path
    beyond_deploy_extra = {name: missing for name, missing in result["failed"].items()
                           if not (name.startswith("kafkactl.cluster.deploy.") and missing == "paramiko")}
    assert beyond_deploy_extra == {}
    assert "kafkactl.cluster.deploy.ssh" in result["failed"]   # the probe did see paramiko missing


@pytest.mark.parametrize("module", ["pyspark", "pandas", "pyarrow", "matplotlib", "paramiko"])
def test_the_host_lacks_the_extras(host, module):
    done = run(host["bin"] / "python", "-c", f"import {module}", env=host_env(host), cwd=host["cwd"])
    assert done.returncode == 1 and f"No module named '{module}'" in done.stderr


def test_plan_on_the_host_names_the_missing_extra(host, tmp_path):
    kafkactl = host["bin"] / "kafkactl"
    done = run(kafkactl, "--help", env=host_env(host), cwd=host["cwd"])
    assert done.returncode == 0 and "plan" in done.stdout, done.stderr
    done = run(kafkactl, "plan", "--help", env=host_env(host), cwd=host["cwd"])
    assert done.returncode == 0 and "--snapshot" in done.stdout, done.stderr
    done = run(kafkactl, "plan", "--snapshot", tmp_path, "--out", tmp_path / "out", env=host_env(host),
               cwd=host["cwd"])
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == ["kafkactl: error: the planner needs the 'planner' extra: "
                                        "pip install 'kafkactl[planner]' "
                                        "(not installed: pyspark, pandas, pyarrow, matplotlib)"]
    assert not (tmp_path / "out").exists()


# --- the cache

def test_the_second_build_reuses_the_first(built, cache_dir):
    before = {p.name: p.stat().st_ino for p in [built.path, *built.path.iterdir()]}
    mtime_ns = built.path.stat().st_mtime_ns
    again = build_wheelhouse(cache_dir, timeout_s=BUILD_TIMEOUT_S)
    assert again == built and again.release == built.release
    assert {p.name: p.stat().st_ino for p in [again.path, *again.path.iterdir()]} == before
    assert again.path.stat().st_mtime_ns == mtime_ns
    assert os.listdir(cache_dir) == [built.path.name]   # no temporary build directory left


def test_an_explicit_checkout_has_the_same_cache_entry(built, cache_dir):
    assert build_wheelhouse(cache_dir, source=ROOT, timeout_s=BUILD_TIMEOUT_S).path == built.path


# --- an operator's own wheelhouse

def test_load_accepts_the_built_wheelhouse(built):
    loaded = load_wheelhouse(built.path, timeout_s=COMMAND_TIMEOUT_S)
    assert loaded == built


def test_load_refuses_an_incomplete_copy_naming_what_is_missing(built, tmp_path):
    copy = tmp_path / "wh"
    shutil.copytree(built.path, copy)
    kazoo = next(copy.glob("kazoo-*.whl"))
    kazoo.unlink()
    with pytest.raises(WheelhouseError) as raised:
        load_wheelhouse(copy, timeout_s=COMMAND_TIMEOUT_S)
    message = str(raised.value)
    assert message.startswith(f"wheelhouse {copy}: installing kafkactl from it alone failed")
    assert "kazoo" in message and "\n" not in message


def test_a_failed_build_names_pip_and_leaves_no_cache_entry(tmp_path):
    checkout = tmp_path / "broken"
    checkout.mkdir()
    (checkout / "pyproject.toml").write_text("[project\nname = \n")
    cache = tmp_path / "cache"
    with pytest.raises(WheelhouseError) as raised:
        build_wheelhouse(cache, source=checkout, timeout_s=BUILD_TIMEOUT_S)
    message = str(raised.value)
    assert re.match(rf"pip wheel {re.escape(str(checkout))} failed \(exit [1-9][0-9]*\): .*TOML", message), message
    assert "\n" not in message
    assert os.listdir(cache) == []


# --- bounded subprocesses

def test_the_deadline_kills_the_whole_process_group(tmp_path):
    pid_file = tmp_path / "pid"
    done = run_bounded(["sh", "-c", f"sleep 300 & echo $! > {pid_file}; wait"], timeout_s=3)
    assert done.timed_out
    grandchild = int(pid_file.read_text())
    wait_for(lambda: not _running(grandchild), 10, f"the background sleep {grandchild} to be killed")


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_output_is_kept_to_a_bounded_tail():
    done = run_bounded([sys.executable, "-c", "import sys; sys.stdout.write('x' * 3_000_000); "
                        "sys.stderr.write('y' * 3_000_000 + 'end'); sys.exit(3)"], timeout_s=COMMAND_TIMEOUT_S)
    assert done.returncode == 3 and done.stdout == b""
    assert len(done.output) <= 2 * 64 * 1024 + 1 and done.output.endswith("yend")
