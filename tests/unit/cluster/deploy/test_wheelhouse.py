"""The wheelhouse's description from literal file lists, its refusals, and its cache key.

No pip here: tests/integration/deploy/test_wheelhouse.py builds and installs
a real one.
"""

import hashlib
import json
import subprocess
from pathlib import Path

import pytest

from kafkactl.cluster.deploy.wheelhouse import (
    Finished, WheelhouseError, _failure, checkout_from_direct_url, default_cache_dir, describe, last_lines,
    load_wheelhouse, offline_pip_env, parse_wheel_name, read_wheelhouse, source_digest, source_files,
)

OURS = "kafkactl-0.1.0-cp311-cp311-linux_x86_64.whl"
KAZOO = "kazoo-2.11.0-py2.py3-none-any.whl"
LZ4 = "lz4-4.4.5-cp311-cp311-manylinux2014_x86_64.manylinux_2_17_x86_64.manylinux_2_28_x86_64.whl"
CRAMJAM = "cramjam-2.14.0-cp311-cp311-manylinux_2_28_x86_64.whl"
STABLE_ABI = "cryptography-46.0.0-cp38-abi3-manylinux_2_34_x86_64.whl"


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def house(*names: str, path: Path = Path("/wh")):
    """A Wheelhouse of these names, each file's content standing in as its name."""
    return describe(path, names, {n: (len(n), sha(n)) for n in names})


# --- wheel names

def test_a_wheel_name_splits_into_normalized_name_version_and_tag_sets():
    wheel = parse_wheel_name(LZ4)
    assert (wheel.distribution, wheel.version) == ("lz4", "4.4.5")
    assert wheel.python_tags == ("cp311",) and wheel.abi_tags == ("cp311",)
    assert wheel.platform_tags == ("manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_28_x86_64")
    assert parse_wheel_name("Typing_Extensions-4.16.0-py3-none-any.whl").distribution == "typing-extensions"
    assert parse_wheel_name("pkg-1.0-1build-py3-none-any.whl").version == "1.0"   # with a build tag
    assert parse_wheel_name(KAZOO).is_binary is False and parse_wheel_name(LZ4).is_binary is True


@pytest.mark.parametrize("name", ["kafkactl-0.1.0.tar.gz", "kafkactl-0.1.0-py3.whl", "a-1-2-3-4-5-6.whl",
                                  "kafkactl--py3-none-any.whl"])
def test_what_is_not_a_wheel_name_is_refused_by_name(name):
    with pytest.raises(ValueError, match="not a wheel file name") as raised:
        parse_wheel_name(name)
    assert name in str(raised.value)


# --- the description: files, manifest, release

def test_files_are_sorted_and_the_manifest_is_what_sha256sum_prints():
    wheelhouse = house(LZ4, OURS, KAZOO)
    assert [f.name for f in wheelhouse.files] == sorted([LZ4, OURS, KAZOO])
    assert wheelhouse.kafkactl_version == "0.1.0" and wheelhouse.kafkactl_wheel == OURS
    assert wheelhouse.manifest_text().splitlines() == [f"{sha(n)}  {n}" for n in sorted([LZ4, OURS, KAZOO])]
    assert wheelhouse.files[0].size == len(sorted([LZ4, OURS, KAZOO])[0])


def test_the_release_is_the_version_and_the_manifests_digest():
    wheelhouse = house(OURS, KAZOO)
    version, digest = wheelhouse.release.split("-")
    assert version == "0.1.0"
    assert digest == sha(wheelhouse.manifest_text())[:12]
    assert house(KAZOO, OURS).release == wheelhouse.release            # the order given does not matter
    changed = describe(Path("/wh"), [OURS, KAZOO], {OURS: (1, sha("other")), KAZOO: (len(KAZOO), sha(KAZOO))})
    assert changed.release != wheelhouse.release                      # one file's content changes it
    assert house(OURS, KAZOO, LZ4).release != wheelhouse.release     # and so does one more file


def test_python_tags_are_those_of_the_binary_wheels():
    assert house(OURS, KAZOO, LZ4).python_tags == (
        "cp311-cp311-linux_x86_64",
        "cp311-cp311-manylinux2014_x86_64.manylinux_2_17_x86_64.manylinux_2_28_x86_64")
    assert house(OURS.replace("cp311-cp311-linux_x86_64", "py3-none-any")).python_tags == ()


def test_exactly_one_kafkactl_wheel():
    with pytest.raises(WheelhouseError, match="needs exactly one kafkactl wheel, found none"):
        house(KAZOO)
    with pytest.raises(WheelhouseError, match="found 2: kafkactl-0.1.0-.*, kafkactl-0.2.0-"):
        house(OURS, OURS.replace("0.1.0", "0.2.0"))


def test_the_extras_packages_are_refused_by_name():
    spark = "pyspark-4.0.1-py2.py3-none-any.whl"
    pandas = "pandas-2.2.3-cp311-cp311-manylinux_2_17_x86_64.whl"
    with pytest.raises(WheelhouseError) as raised:
        house(OURS, KAZOO, spark, pandas)
    message = str(raised.value)
    assert spark in message and pandas in message and KAZOO not in message
    assert "\n" not in message and message.startswith("wheelhouse /wh: ")


# --- compatibility with a host

@pytest.mark.parametrize("names, python, machine, glibc, fragment", [
    ((OURS, KAZOO, LZ4), "3.11.2", "x86_64", None, None),
    ((OURS, KAZOO, LZ4), "3.11.2", "x86_64", "2.36", None),
    ((OURS, STABLE_ABI), "3.11.2", "x86_64", "2.36", None),              # abi3 of 3.8 runs on 3.11
    ((OURS, KAZOO), "3.12.1", "x86_64", None, f"{OURS} is for cp311 with ABI cp311, not CPython 3.12"),
    ((OURS, KAZOO), "3.11.2", "aarch64", None, f"{OURS} is for linux_x86_64, not Linux on aarch64"),
    ((OURS, CRAMJAM), "3.11.2", "x86_64", "2.17", f"{CRAMJAM} is for manylinux_2_28_x86_64, not Linux on "
                                                  "x86_64 with glibc 2.17"),
    ((OURS, LZ4), "3.11.2", "x86_64", "2.17", None),                      # manylinux2014 = glibc 2.17
    ((OURS, "x-1-cp311-cp311-musllinux_1_2_x86_64.whl"), "3.11.2", "x86_64", "2.36", "musllinux_1_2_x86_64"),
    ((OURS, "x-1-cp311-cp311-macosx_11_0_x86_64.whl"), "3.11.2", "x86_64", None, "macosx_11_0_x86_64"),
    ((OURS, "x-1-pp311-pypy311_pp73-manylinux_2_17_x86_64.whl"), "3.11.2", "x86_64", None, "pp311"),
    ((OURS,), "2.7.18", "x86_64", None, "the host's Python version '2.7.18' is not 3.x"),
    ((OURS,), "three", "x86_64", None, "'three' is not 3.x"),
    ((OURS,), "3.11.2", "x86_64", "glibc", "the host's glibc version 'glibc' is not MAJOR.MINOR"),
])
def test_compatible_with_names_the_first_wheel_that_does_not_fit(names, python, machine, glibc, fragment):
    problem = house(*names).compatible_with(python, machine, glibc)
    if fragment is None:
        assert problem is None
    else:
        assert problem is not None and fragment in problem and "\n" not in problem


def test_compatible_with_counts_the_other_wheels_that_do_not_fit():
    problem = house(OURS, LZ4, CRAMJAM, KAZOO).compatible_with("3.13.0", "x86_64")
    assert problem is not None and problem.startswith(f"wheelhouse /wh: {CRAMJAM} is for cp311")
    assert problem.endswith("(and 2 more)")


# --- a directory: what is refused before pip runs

def write_wheels(directory: Path, *names: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name in names:
        (directory / name).write_bytes(f"fake {name}".encode())
    return directory


def test_a_directory_is_described_with_real_sizes_and_hashes(tmp_path):
    wheelhouse = read_wheelhouse(write_wheels(tmp_path / "wh", OURS, KAZOO))
    assert wheelhouse.path == tmp_path / "wh"
    for entry in wheelhouse.files:
        content = (tmp_path / "wh" / entry.name).read_bytes()
        assert (entry.size, entry.sha256) == (len(content), hashlib.sha256(content).hexdigest())
    done = subprocess.run(["sha256sum", "-c", "--quiet", "-"], input=wheelhouse.manifest_text(), text=True,
                          cwd=tmp_path / "wh", capture_output=True, timeout=30)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("extra, fragment", [
    ("README.txt", "holds more than .whl files: README.txt"),
    ("sub.whl/", "holds more than .whl files: sub.whl"),
    ("kafkactl.whl", "kafkactl.whl: not a wheel file name"),
    ("pyspark-4.0.1-py2.py3-none-any.whl", "pyspark-4.0.1-py2.py3-none-any.whl"),
    ("paramiko-3.5.0-py3-none-any.whl", "does not need: paramiko-3.5.0-py3-none-any.whl"),
])
def test_load_wheelhouse_refuses_before_running_pip(tmp_path, extra, fragment):
    directory = write_wheels(tmp_path / "wh", OURS, KAZOO)
    if extra.endswith("/"):
        (directory / extra).mkdir()
    else:
        (directory / extra).write_text("x")
    # python names a program that cannot run: pip is never reached
    with pytest.raises(WheelhouseError) as raised:
        load_wheelhouse(directory, python=str(tmp_path / "no-python"), timeout_s=30)
    assert fragment in str(raised.value) and str(directory) in str(raised.value)


def test_load_wheelhouse_refuses_what_is_not_a_directory(tmp_path):
    with pytest.raises(WheelhouseError, match="not a directory"):
        load_wheelhouse(tmp_path / "none", timeout_s=30)


# --- pip's output and environment

def test_a_failure_is_one_line_of_pips_last_words_without_its_warnings():
    output = ("Collecting kazoo\nWARNING: Location 'file:///x/simple/kazoo/' is ignored\n\n"
              "ERROR: Could not find a version that satisfies the requirement kazoo>=2.11\n"
              "ERROR: No matching distribution found for kazoo>=2.11\n")
    assert last_lines(output, 2) == ("ERROR: Could not find a version that satisfies the requirement kazoo>=2.11 | "
                                     "ERROR: No matching distribution found for kazoo>=2.11")
    assert last_lines("") == "no output"
    assert len(last_lines("x" * 5000)) <= 603
    assert _failure(Finished(1, output, b""), "pip wheel /src", 60).startswith("pip wheel /src failed (exit 1): ")
    assert _failure(Finished(None, "", b""), "pip wheel /src", 60) == "pip wheel /src: not done within 60 s"
    assert _failure(Finished(0, output, b""), "pip wheel /src", 60) is None


def test_the_offline_check_reads_no_pip_settings():
    env = offline_pip_env({"PATH": "/bin", "PIP_FIND_LINKS": "/opt/wheels", "PIP_INDEX_URL": "http://x"})
    assert env["PATH"] == "/bin" and env["PIP_CONFIG_FILE"] == "/dev/null"
    assert "PIP_FIND_LINKS" not in env and "PIP_INDEX_URL" not in env


def test_the_cache_is_under_xdg_cache_home_or_the_home_cache():
    assert default_cache_dir({"XDG_CACHE_HOME": "/c"}) == Path("/c/kafkactl/wheelhouse")
    assert default_cache_dir({}) == Path.home() / ".cache" / "kafkactl" / "wheelhouse"


# --- where kafkactl was installed from (PEP 610)

@pytest.mark.parametrize("record, expected", [
    ({"url": "file:///work/kafkactl", "dir_info": {"editable": True}}, Path("/work/kafkactl")),
    ({"url": "file:///src/my%20kafkactl", "dir_info": {}}, Path("/src/my kafkactl")),
    ({"url": "file:///tmp/kafkactl-0.1.0.tar.gz", "archive_info": {}}, None),
    ({"url": "https://github.com/x/kafkactl", "vcs_info": {"vcs": "git", "commit_id": "ab"}}, None),
    ({"url": "https://example.com/src", "dir_info": {}}, None),
    (["not", "a", "record"], None),
])
def test_the_checkout_comes_from_a_local_directory_record(record, expected):
    assert checkout_from_direct_url(json.dumps(record)) == expected


def test_no_record_or_a_broken_one_means_no_checkout():
    assert checkout_from_direct_url(None) is None
    assert checkout_from_direct_url("{broken") is None


# --- the cache key: the checkout's source files and the interpreter

def make_checkout(root: Path) -> Path:
    for name, text in {"pyproject.toml": "[project]\n", "cli/main.py": "x = 1\n",
                       "cluster/broker/__main__.py": "y = 2\n", "docs/notes.md": "notes\n",
                       "cluster/__pycache__/m.cpython-311.pyc": "compiled",
                       "cluster/protocol/_walk.cpython-311-x86_64-linux-gnu.so": "built"}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def git(checkout: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(checkout), *args], check=True, capture_output=True, timeout=30)


def test_the_source_files_of_a_plain_directory_leave_out_build_leftovers_and_other_folders(tmp_path):
    checkout = make_checkout(tmp_path / "src")
    assert source_files(checkout, timeout_s=30) == ["cli/main.py", "cluster/broker/__main__.py", "pyproject.toml"]


def test_the_source_files_of_a_git_checkout_are_its_tracked_and_unignored_ones(tmp_path):
    checkout = make_checkout(tmp_path / "src")
    (checkout / ".gitignore").write_text("*.so\n__pycache__/\n")
    git(checkout, "init", "-q")
    git(checkout, "add", "pyproject.toml", "cli/main.py", ".gitignore")
    (checkout / "cli" / "ignored.so").write_text("built")
    # cluster/broker/__main__.py is not added yet: setuptools would still pack it, so it counts
    assert source_files(checkout, timeout_s=30) == ["cli/main.py", "cluster/broker/__main__.py", "pyproject.toml"]


def test_the_digest_changes_with_a_source_file_and_the_interpreter_only(tmp_path):
    checkout = make_checkout(tmp_path / "src")
    files = source_files(checkout, timeout_s=30)
    first = source_digest(checkout, files, "cpython-311 linux-x86_64")
    assert source_digest(checkout, files, "cpython-311 linux-x86_64") == first
    (checkout / "docs" / "notes.md").write_text("changed\n")                 # not a source file
    (checkout / "cluster" / "__pycache__" / "m.cpython-311.pyc").write_text("recompiled")
    assert source_digest(checkout, source_files(checkout, timeout_s=30), "cpython-311 linux-x86_64") == first
    assert source_digest(checkout, files, "cpython-312 linux-x86_64") != first
    (checkout / "cli" / "main.py").write_text("x = 2\n")
    assert source_digest(checkout, files, "cpython-311 linux-x86_64") != first
    (checkout / "cli" / "main.py").unlink()                                   # listed by git, deleted
    assert source_digest(checkout, files, "cpython-311 linux-x86_64") != first
