"""What a host has, for the deploy to decide what to change: run ON the host.

Sent as the standard input of `python3 - REQUEST_JSON` (`facts_command`),
like media_probe.py, so it imports only the standard library, keeps to
Python 3.6's language, and always prints one JSON document (an unreadable
fact is null, never an exception):

    {"version": 1, "hostname": ..., "machine": "x86_64", "glibc": "2.36",
     "python": {"executable": ..., "version": "3.11.2", "venv": true},
     "systemd": false, "java": "/usr/bin/java",
     "jars": {"/usr/share/java/zookeeper.jar": true, ...},
     "files": {PATH: SHA256 or null, ...},
     "releases": {RELEASE: true if complete (installed.json exists), ...},
     "current": RELEASE or null,
     "in_use": [RELEASE, ...],   # named by a service definition or a running service
     "dirs": [{"path", "exists", "is_dir", "writable", "read_only"}, ...]}

The request names the install root, the files to checksum and the dirs to
check. A dir that does not exist yet is checked where it would be created:
its nearest existing parent. "writable" means the process may write there
(os.access) on a file system that is not mounted read-only (statvfs): root
passes os.access everywhere, even on a read-only mount.

systemd counts only when it is the host's init (pid 1) and has booted the
system (/run/systemd/system): in a container, or a PID namespace as on the
test hosts, systemctl exists but starts nothing.
"""

import hashlib
import json
import os
import platform
import shutil
import socket
import subprocess
import sys

VERSION = 1
CHUNK_BYTES = 1 << 20
VENV_CHECK_TIMEOUT_S = 20


def sha256_of(path):
    try:
        digest = hashlib.sha256()
        with open(path, "rb") as source:
            for chunk in iter(lambda: source.read(CHUNK_BYTES), b""):
                digest.update(chunk)
        return digest.hexdigest()
    except (OSError, ValueError):
        return None


def python_facts():
    """The host's python3 (not this interpreter, which may be another one)."""
    executable = shutil.which("python3")
    facts = {"executable": executable, "version": None, "venv": False}
    if executable is None:
        return facts
    try:
        out = subprocess.run(
            [executable, "-c", "import sys, venv, ensurepip; print('%d.%d.%d' % sys.version_info[:3])"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=VENV_CHECK_TIMEOUT_S,
            universal_newlines=True)
        if out.returncode == 0:
            facts.update(version=out.stdout.strip(), venv=True)
        else:
            version = subprocess.run([executable, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
                                     stdout=subprocess.PIPE, timeout=VENV_CHECK_TIMEOUT_S,
                                     universal_newlines=True)
            facts["version"] = version.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        pass
    return facts


def glibc_version():
    """e.g. "2.36"; null on a host whose C library is not glibc (musl)."""
    try:
        library, version = platform.libc_ver()
    except (OSError, ValueError):
        return None
    return version if library == "glibc" and version else None


def systemd_is_init():
    try:
        with open("/proc/1/comm") as comm:
            init = comm.read().strip()
    except OSError:
        return False
    return init == "systemd" and os.path.isdir("/run/systemd/system")


def releases(install_root):
    versions = os.path.join(install_root, "versions")
    try:
        names = sorted(os.listdir(versions))
    except OSError:
        return {}
    return {name: os.path.isfile(os.path.join(versions, name, "installed.json")) for name in names}


def current_release(install_root):
    try:
        return os.path.basename(os.readlink(os.path.join(install_root, "current")).rstrip("/"))
    except OSError:
        return None


def releases_in_use(install_root):
    """Releases named by a service definition or by a running service's copy of one."""
    found = set()
    for folder, suffix in (("etc/services", ".json"), ("run", ".running.json")):
        try:
            names = os.listdir(os.path.join(install_root, folder))
        except OSError:
            continue
        for name in names:
            if not name.endswith(suffix):
                continue
            try:
                with open(os.path.join(install_root, folder, name)) as source:
                    release = json.load(source).get("release")
            except (OSError, ValueError, AttributeError):
                continue
            if isinstance(release, str):
                found.add(release)
    return sorted(found)


def dir_facts(path):
    exists = os.path.lexists(path)
    place = path
    while not os.path.exists(place) and place not in ("/", ""):
        place = os.path.dirname(place)
    writable = os.access(place, os.W_OK | os.X_OK)
    read_only = False
    try:
        read_only = bool(os.statvfs(place).f_flag & os.ST_RDONLY)
    except OSError:
        writable = False
    return {"path": path, "exists": exists, "is_dir": os.path.isdir(path),
            "writable": writable and not read_only, "read_only": read_only}


def facts(request):
    install_root = request["install_root"]
    return {
        "version": VERSION,
        "hostname": socket.gethostname(),
        "machine": platform.machine(),
        "glibc": glibc_version(),
        "python": python_facts(),
        "systemd": systemd_is_init(),
        "java": shutil.which("java"),
        "jars": {path: os.path.isfile(path) for path in request.get("jars", [])},
        "files": {path: sha256_of(path) for path in request.get("files", [])},
        "releases": releases(install_root),
        "current": current_release(install_root),
        "in_use": releases_in_use(install_root),
        "dirs": [dir_facts(path) for path in request.get("dirs", [])],
    }


def main(argv):
    if len(argv) != 1:
        sys.stderr.write("usage: python3 - REQUEST_JSON < host_facts.py\n")
        return 2
    json.dump(facts(json.loads(argv[0])), sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
