"""What a host installs: a wheelhouse of kafkactl's core install (control side).

Hosts get kafkactl and its runtime dependencies as a directory of wheels
(bare-metal hosts often reach no package index) and install it with
`pip install --no-index --find-links DIR kafkactl==VERSION`. The wheelhouse
holds the core install only (pyproject.toml's `dependencies`): never the
`planner` extra (PySpark, pandas, pyarrow, matplotlib) nor `deploy`
(paramiko), which a broker does not run.

- `build_wheelhouse(cache_dir, source=..., timeout_s=...)` runs `pip wheel`
  for the core install. From a checkout (given, or the one the running
  kafkactl was installed from, per its PEP 610 direct_url.json) the result
  is cached under `cache_dir/<digest>`, the digest covering the checkout's
  source files and the building interpreter, so an unchanged checkout is
  built once; otherwise `kafkactl==<installed version>` comes from the index.
  pip builds from a copy of exactly the digested files (in the checkout
  itself setuptools would also pack whatever an earlier build left in
  build/), into a temporary directory beside the cache entry that is renamed
  into place: the cache never holds half a wheelhouse.
- `load_wheelhouse(path)` takes an operator's own directory: only `.whl`
  files, exactly one kafkactl wheel, none of the extras' packages, and
  complete: an offline `pip install --dry-run` from it alone (no index, no
  pip configuration, nothing already installed counted) must succeed.
- `Wheelhouse` describes one: its files with sizes and SHA-256, the release
  name (version and a digest of the manifest, so two different wheelhouses
  of one version never share a release directory on a host), the
  `sha256sum -c` manifest, and whether its binary wheels fit a host's Python
  and machine (`compatible_with`). kafkactl's own wheel is compiled here and
  tagged `linux_<machine>`, which carries no glibc floor: a host's glibc
  must not be older than this machine's (manylinux wheels state theirs).

Every subprocess has a deadline (its whole process group is killed when it
passes) and its output is kept to a bounded tail; pip's own output reaches
the console only inside a WheelhouseError. The parsing of wheel names and
the tag matching (PEP 427 / PEP 425 names) are pure and live in the
functions at the top.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlparse

PROJECT = "kafkactl"
# The extras' distributions: a broker host must not get them (pyproject.toml's extras).
EXTRAS_ONLY = ("pyspark", "pandas", "pyarrow", "matplotlib", "paramiko")
# What the wheel is built from: a change to any of these rebuilds a checkout's wheelhouse.
SOURCE_PATHS = ("cli", "cluster", "planner", "pyproject.toml", "README.md")
_BUILD_LEFTOVERS = ("__pycache__",)
_BUILD_SUFFIXES = (".pyc", ".so")
OUTPUT_TAIL_BYTES = 64 * 1024       # what is kept of a subprocess's output
GIT_LIST_MAX_BYTES = 4 * 1024 * 1024
ERROR_LINES = 3                    # pip's last lines quoted in a WheelhouseError
ERROR_CHARS = 600
_HASH_CHUNK_BYTES = 1024 * 1024
_KILL_WAIT_S = 5.0


class WheelhouseError(Exception):
    """A wheelhouse could not be built, or a directory is not a usable one; one line."""


# --- wheel names and tags (pure)

@dataclass(frozen=True)
class WheelName:
    """A wheel file name's parts (PEP 427); the tag sets are split at '.'."""

    distribution: str      # normalized: lower case, runs of -_. as one '-'
    version: str
    python_tags: tuple[str, ...]
    abi_tags: tuple[str, ...]
    platform_tags: tuple[str, ...]

    @property
    def is_binary(self) -> bool:
        return self.platform_tags != ("any",) or any(abi != "none" for abi in self.abi_tags)


def normalize_name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_wheel_name(filename: str) -> WheelName:
    """`name-version[-build]-python-abi-platform.whl`; ValueError naming the file otherwise."""
    parts = filename[:-len(".whl")].split("-") if filename.endswith(".whl") else []
    if len(parts) not in (5, 6) or not all(parts):
        raise ValueError(f"{filename}: not a wheel file name (name-version[-build]-python-abi-platform.whl)")
    python, abi, platform = parts[-3:]
    return WheelName(normalize_name(parts[0]), parts[1], tuple(python.split(".")), tuple(abi.split(".")),
                     tuple(platform.split(".")))


def _interpreter_fits(python_tag: str, abi_tag: str, minor: int) -> bool:
    """Whether a CPython 3.<minor> runs a wheel with these tags."""
    match = re.fullmatch(r"(cp|py)3(\d*)", python_tag)
    if match is None:
        return False
    kind, tag_minor = match.group(1), int(match.group(2)) if match.group(2) else None
    if abi_tag not in ("none", "abi3", f"cp3{minor}"):
        return False
    if kind == "py":
        return tag_minor is None or tag_minor <= minor
    if abi_tag == "abi3":   # the stable ABI: built for 3.N, runs on every later 3.x
        return tag_minor is not None and tag_minor <= minor
    return tag_minor == minor


_MANYLINUX_LEGACY = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}


def _platform_fits(platform_tag: str, machine: str, glibc: tuple[int, int] | None) -> bool:
    if platform_tag == "any":
        return True
    if not platform_tag.endswith("_" + machine):
        return False
    base = platform_tag[:-len(machine) - 1]
    if base == "linux":
        return True
    match = re.fullmatch(r"(manylinux|musllinux)_(\d+)_(\d+)", base)
    if match is not None:
        if match.group(1) == "musllinux":
            return glibc is None         # a glibc host cannot load musl builds
        needed = (int(match.group(2)), int(match.group(3)))
    elif base in _MANYLINUX_LEGACY:
        needed = _MANYLINUX_LEGACY[base]
    else:
        return False                     # macOS, Windows, ...: hosts are Linux
    return glibc is None or needed <= glibc


def _version_pair(text: str) -> tuple[int, int] | None:
    match = re.fullmatch(r"(\d+)\.(\d+)(?:\.\S*)?", text.strip())
    return (int(match.group(1)), int(match.group(2))) if match else None


def wheel_problem(wheel: WheelName, filename: str, minor: int, machine: str,
                  glibc: tuple[int, int] | None = None) -> str | None:
    """Why a CPython 3.<minor> on `machine` cannot install this wheel, or None."""
    fits_interpreter = any(_interpreter_fits(py, abi, minor) for py in wheel.python_tags for abi in wheel.abi_tags)
    if not fits_interpreter:
        return (f"{filename} is for {'/'.join(wheel.python_tags)} with ABI {'/'.join(wheel.abi_tags)}, "
                f"not CPython 3.{minor}")
    if not any(_platform_fits(p, machine, glibc) for p in wheel.platform_tags):
        on = machine if glibc is None else f"{machine} with glibc {glibc[0]}.{glibc[1]}"
        return f"{filename} is for {'/'.join(wheel.platform_tags)}, not Linux on {on}"
    return None


# --- the description

@dataclass(frozen=True)
class WheelFile:
    name: str
    size: int
    sha256: str


@dataclass(frozen=True)
class Wheelhouse:
    """A directory of wheels for the core install; `files` sorted by name."""

    path: Path
    files: tuple[WheelFile, ...]
    kafkactl_version: str

    @property
    def kafkactl_wheel(self) -> str:
        return next(f.name for f in self.files if parse_wheel_name(f.name).distribution == PROJECT)

    def manifest_text(self) -> str:
        """`sha256  filename` lines, as sha256sum prints them: a host checks its copy with `sha256sum -c`."""
        return "".join(f"{f.sha256}  {f.name}\n" for f in self.files)

    @property
    def release(self) -> str:
        """`<version>-<first 12 hex of the manifest's SHA-256>`: names the install on a host."""
        digest = hashlib.sha256(self.manifest_text().encode()).hexdigest()[:12]
        return f"{self.kafkactl_version}-{digest}"

    @property
    def python_tags(self) -> tuple[str, ...]:
        """The `python-abi-platform` tags of the binary wheels, distinct and sorted (a host must match them)."""
        tags = {"-".join(".".join(t) for t in (w.python_tags, w.abi_tags, w.platform_tags))
                for w in (parse_wheel_name(f.name) for f in self.files) if w.is_binary}
        return tuple(sorted(tags))

    def compatible_with(self, python_version: str, machine: str, glibc_version: str | None = None) -> str | None:
        """The problem with installing on a host with this Python (`3.11.2`) and `uname -m`, or None.

        Without `glibc_version` (e.g. `2.36`) a manylinux wheel's glibc
        floor is not checked."""
        version = _version_pair(python_version)
        if version is None or version[0] != 3:
            return f"the host's Python version {python_version!r} is not 3.x"
        glibc = None if glibc_version is None else _version_pair(glibc_version)
        if glibc_version is not None and glibc is None:
            return f"the host's glibc version {glibc_version!r} is not MAJOR.MINOR"
        problems = [p for p in (wheel_problem(parse_wheel_name(f.name), f.name, version[1], machine, glibc)
                                for f in self.files) if p is not None]
        if not problems:
            return None
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        return f"wheelhouse {self.path}: {problems[0]}{more}"


def describe(path: Path, names: Iterable[str], hashes: Mapping[str, tuple[int, str]]) -> Wheelhouse:
    """A Wheelhouse from its file names and their (size, sha256); WheelhouseError when it cannot be one."""
    names = sorted(names)
    wheels: dict[str, WheelName] = {}
    for name in names:
        try:
            wheels[name] = parse_wheel_name(name)
        except ValueError as error:
            raise WheelhouseError(f"wheelhouse {path}: {error}") from None
    ours = [n for n, w in wheels.items() if w.distribution == PROJECT]
    if len(ours) != 1:
        found = f"{len(ours)}: {', '.join(ours)}" if ours else "none"
        raise WheelhouseError(f"wheelhouse {path}: needs exactly one {PROJECT} wheel, found {found}")
    extras = [n for n, w in wheels.items() if w.distribution in EXTRAS_ONLY]
    if extras:
        raise WheelhouseError(f"wheelhouse {path}: holds wheels a broker host does not need: {', '.join(extras)} "
                              f"(build it from the core install, without extras)")
    files = tuple(WheelFile(n, *hashes[n]) for n in names)
    return Wheelhouse(path, files, wheels[ours[0]].version)


# --- reading a directory

def _hash_file(path: Path) -> tuple[int, str]:
    digest, size = hashlib.sha256(), 0
    with path.open("rb") as stream:
        while chunk := stream.read(_HASH_CHUNK_BYTES):
            digest.update(chunk)
            size += len(chunk)
    return size, digest.hexdigest()


def read_wheelhouse(path: Path) -> Wheelhouse:
    """Describe a directory of wheels (hashing each); no pip. WheelhouseError naming what is wrong."""
    path = Path(path)
    if not path.is_dir():
        raise WheelhouseError(f"wheelhouse {path}: not a directory")
    entries = sorted(path.iterdir())
    strays = [e.name for e in entries if not (e.is_file() and e.name.endswith(".whl"))]
    if strays:
        raise WheelhouseError(f"wheelhouse {path}: holds more than .whl files: {', '.join(strays[:5])}"
                              f"{' ...' if len(strays) > 5 else ''}")
    return describe(path, [e.name for e in entries], {e.name: _hash_file(e) for e in entries})


def load_wheelhouse(path: Path, *, python: str = sys.executable, timeout_s: float = 120.0) -> Wheelhouse:
    """An operator's prebuilt wheelhouse, checked to install kafkactl offline from it alone."""
    wheelhouse = read_wheelhouse(path)
    command = [python, "-m", "pip", "install", "--dry-run", "--quiet", "--no-index", "--find-links",
               str(wheelhouse.path), "--ignore-installed", f"{PROJECT}=={wheelhouse.kafkactl_version}"]
    done = run_bounded(command, timeout_s=timeout_s, env=offline_pip_env())
    problem = _failure(done, f"wheelhouse {wheelhouse.path}: installing {PROJECT} from it alone", timeout_s)
    if problem:
        raise WheelhouseError(problem)
    return wheelhouse


def offline_pip_env(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The environment minus pip's settings, and no pip configuration file: only the command line counts."""
    env = {k: v for k, v in environ.items() if not k.startswith("PIP_")}
    env["PIP_CONFIG_FILE"] = os.devnull
    return env


# --- subprocesses, bounded

@dataclass(frozen=True)
class Finished:
    returncode: int | None      # None: killed at the deadline
    output: str                 # stdout's tail, then stderr's tail (each bounded)
    stdout: bytes               # up to the caller's max_stdout_bytes

    @property
    def timed_out(self) -> bool:
        return self.returncode is None


def run_bounded(command: Sequence[str], *, timeout_s: float, env: Mapping[str, str] | None = None,
                cwd: Path | None = None, max_stdout_bytes: int = OUTPUT_TAIL_BYTES) -> Finished:
    """Run a command in its own process group; kill the group at the deadline. Output goes to
    temporary files (not memory) and only bounded parts are read back."""
    if timeout_s <= 0:
        return Finished(None, "", b"")   # the caller's deadline passed already: start nothing
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(list(command), stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                   env=None if env is None else dict(env), cwd=cwd, start_new_session=True)
        try:
            returncode: int | None = process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            returncode = None
        finally:
            if process.poll() is None:   # the deadline, or an interrupt: no orphaned pip or compiler
                _kill_group(process)
        stdout = _head(out, max_stdout_bytes, command[0]) if returncode == 0 else b""
        text = (_tail(out, OUTPUT_TAIL_BYTES) + b"\n" + _tail(err, OUTPUT_TAIL_BYTES)).decode(errors="replace")
        return Finished(returncode, text, stdout)


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass                             # it ended between the check and the kill
    process.wait(timeout=_KILL_WAIT_S)


def _failure(done: Finished, what: str, timeout_s: float) -> str | None:
    """The one-line problem of a finished command, or None when it succeeded (pure)."""
    if done.timed_out:
        return f"{what}: not done within {timeout_s:g} s"
    if done.returncode != 0:
        return f"{what} failed (exit {done.returncode}): {last_lines(done.output)}"
    return None


def _head(stream, limit: int, program: str) -> bytes:
    stream.seek(0)
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise WheelhouseError(f"{program} printed over {limit} bytes")
    return data


def _tail(stream, limit: int) -> bytes:
    size = stream.seek(0, os.SEEK_END)
    stream.seek(max(0, size - limit))
    return stream.read(limit)


def last_lines(output: str, count: int = ERROR_LINES) -> str:
    """The last non-empty lines of a tool's output as one line (pure). pip's warnings are left
    out: they are about its configuration (an index it cannot read), seldom why it failed."""
    lines = [line.strip() for line in output.splitlines() if line.strip() and not line.startswith("WARNING:")]
    text = " | ".join(lines[-count:]) or "no output"
    return text if len(text) <= ERROR_CHARS else "..." + text[-ERROR_CHARS:]


# --- where kafkactl comes from

def checkout_from_direct_url(text: str | None) -> Path | None:
    """The local directory in a PEP 610 direct_url.json, or None (an index install, an archive, a VCS URL)."""
    if not text:
        return None
    try:
        record = json.loads(text)
    except ValueError:
        return None
    if not isinstance(record, dict) or "dir_info" not in record:
        return None
    url = record.get("url")
    if not isinstance(url, str) or not url.startswith("file://"):
        return None
    return Path(unquote(urlparse(url).path))


def installed_source() -> tuple[Path | None, str]:
    """(checkout or None, version) of the kafkactl this process runs.

    Only metadata an installer wrote counts (it has an INSTALLER file): run
    from a checkout, the current directory's `kafkactl.egg-info`, left by a
    build, would otherwise be found first and has no direct_url.json."""
    found = list(metadata.distributions(name=PROJECT))
    installed = [d for d in found if d.read_text("INSTALLER") is not None]
    if not installed:
        raise WheelhouseError(f"{PROJECT} is not installed in {sys.executable}: give its checkout")
    for distribution in installed:
        checkout = checkout_from_direct_url(distribution.read_text("direct_url.json"))
        if checkout is not None:
            return checkout, distribution.version
    return None, installed[0].version


# --- the cache key

def _is_source_file(relative: str) -> bool:
    parts = relative.split("/")
    return not any(p in _BUILD_LEFTOVERS for p in parts) and not relative.endswith(_BUILD_SUFFIXES)


def source_files(checkout: Path, *, timeout_s: float) -> list[str]:
    """The checkout's source files (relative, sorted): git's tracked and unignored ones if it is a
    git work tree, else every file under SOURCE_PATHS (build leftovers aside)."""
    if (checkout / ".git").exists():
        done = run_bounded(["git", "-C", str(checkout), "ls-files", "-z", "--cached", "--others",
                            "--exclude-standard", "--", *SOURCE_PATHS],
                           timeout_s=timeout_s, max_stdout_bytes=GIT_LIST_MAX_BYTES)
        problem = _failure(done, f"git ls-files in {checkout}", timeout_s)
        if problem:
            raise WheelhouseError(problem)
        names = {n for n in done.stdout.decode().split("\0") if n}
    else:
        names = set(_files_under(checkout))
    return sorted(n for n in names if _is_source_file(n))


def _files_under(checkout: Path) -> Iterable[str]:
    for top in SOURCE_PATHS:
        path = checkout / top
        candidates = [path] if path.is_file() else path.rglob("*")
        yield from (p.relative_to(checkout).as_posix() for p in candidates if p.is_file())


def source_digest(checkout: Path, files: Sequence[str], interpreter: str) -> str:
    """SHA-256 over each file's name and content and the building interpreter's identity.
    A file listed but absent (deleted, not yet committed) counts as absent."""
    digest = hashlib.sha256(f"interpreter {interpreter}\n".encode())
    for name in files:
        path = checkout / name
        content = _hash_file(path)[1] if path.is_file() else "absent"
        digest.update(f"{name}\0{content}\n".encode())
    return digest.hexdigest()[:24]


def interpreter_identity(python: str, *, timeout_s: float) -> str:
    """E.g. `cpython-311 linux-x86_64`: the wheels pip builds with `python` depend on it."""
    code = "import sys, sysconfig; print(sys.implementation.cache_tag, sysconfig.get_platform())"
    done = run_bounded([python, "-c", code], timeout_s=timeout_s)
    problem = _failure(done, f"{python} -c ...", timeout_s)
    if problem:
        raise WheelhouseError(problem)
    return done.stdout.decode().strip()


# --- building

def default_cache_dir(environ: Mapping[str, str] = os.environ) -> Path:
    base = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / PROJECT / "wheelhouse"


def build_wheelhouse(cache_dir: Path | None = None, *, source: Path | None = None, python: str = sys.executable,
                     timeout_s: float, clock: Callable[[], float] = time.monotonic) -> Wheelhouse:
    """The wheelhouse of the core install, built by `python -m pip wheel` or taken from the cache.

    `cache_dir`: default `~/.cache/kafkactl/wheelhouse`; the wheelhouse is
    `cache_dir/<digest>`. `source`: a kafkactl checkout; None means the one
    the running kafkactl was installed from, or, when it was installed from
    an index, `kafkactl==<its version>` from the index. `timeout_s` bounds
    the whole call."""
    if timeout_s <= 0:
        raise ValueError(f"timeout_s must be positive, not {timeout_s}")
    deadline = clock() + timeout_s

    def left() -> float:
        return deadline - clock()

    cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    version = None
    if source is None:
        source, version = installed_source()
    interpreter = interpreter_identity(python, timeout_s=left())
    if source is None:
        requirement = f"{PROJECT}=={version}"
        final = cache_dir / hashlib.sha256(f"{requirement}\0{interpreter}".encode()).hexdigest()[:24]
        if final.is_dir():
            return read_wheelhouse(final)
        return _build_into(final, python, requirement, requirement, left, timeout_s)
    checkout = Path(source).resolve()
    if not (checkout / "pyproject.toml").is_file():
        raise WheelhouseError(f"{checkout}: not a {PROJECT} checkout (no pyproject.toml)")
    files = source_files(checkout, timeout_s=left())
    # pip builds a local directory in place, and setuptools packs whatever an earlier build
    # left in build/ (a deleted module included): pip gets a copy of exactly these files, and
    # the digest is the copy's, so an edit while this runs cannot file a build under a wrong key.
    with tempfile.TemporaryDirectory(prefix=f"{PROJECT}-source-") as staging:
        copy_files(checkout, files, Path(staging))
        final = cache_dir / source_digest(Path(staging), files, interpreter)
        if final.is_dir():
            return read_wheelhouse(final)
        return _build_into(final, python, staging, str(checkout), left, timeout_s)


def copy_files(checkout: Path, files: Sequence[str], into: Path) -> None:
    """Copy the listed files (relative paths) that exist, keeping their places."""
    for name in files:
        origin = checkout / name
        if origin.is_file():
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(origin, into / name)


def _build_into(final: Path, python: str, requirement: str, label: str, left: Callable[[], float],
                timeout_s: float) -> Wheelhouse:
    """`pip wheel` into a temporary directory beside `final`, renamed into place when complete."""
    final.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
    try:
        command = [python, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check", "--no-input",
                   requirement, "-w", str(building)]
        problem = _failure(run_bounded(command, timeout_s=left()), f"pip wheel {label}", timeout_s)
        if problem:
            raise WheelhouseError(problem)
        built = read_wheelhouse(building)   # one kafkactl wheel, no extras: else the error says so
        try:
            building.rename(final)
        except OSError:
            if not final.is_dir():   # else another build of the same source finished first: use that one
                raise
            return read_wheelhouse(final)
        return replace(built, path=final)
    finally:
        shutil.rmtree(building, ignore_errors=True)
