"""Real SSH test hosts for the deployment tests, made and removed by the test.

Each host is Debian's OpenSSH `sshd` that looks like a separate machine to a
client and to whatever the client runs on it:

- network: its own network namespace with `eth0` (one end of a veth pair) on
  a bridge of this run in the root namespace, its own address 10.231.S.(10+i)
  and a default route via the bridge's 10.231.S.1. The bridge does not forward
  (`conf/<bridge>/forwarding` = 0), so a host reaches the test machine and the
  other hosts of its run, nothing beyond them.
- files: its own mount namespace in which per-host directories are bind-mounted
  over the install root and data root (/opt/kafkactl and /var/lib/kafkactl by
  default), /root, /tmp and /etc/ssh, so what one host installs or uploads is
  not seen by another host nor by the test machine, as on separate machines.
- disks: two loop devices per host mounted inside its mount namespace only, at
  `<data root>/ssd0` and `<data root>/hdd0`. The SSD's backing file is on tmpfs
  (/dev/shm), so the loop device reports queue/rotational = 0; the HDD's is on
  the root disk, which reports 1. Detection therefore finds their media with no
  override; setup checks both values and fails loudly otherwise.
- its own hostname (UTS namespace) and PID namespace, where sshd is pid 1: when
  it dies the kernel kills everything the host started (brokers, sessions).

Nothing outlives the test: the launcher of each host gets SIGKILL when the test
process dies (`setpriv --pdeathsig`), it kills sshd (`unshare --kill-child`),
and sshd's death kills the host's processes and releases its mounts. `close()`
kills by network namespace (`ip netns pids`), detaches the loop devices, deletes
the namespaces, links and files (only the small sshd logs stay in the work dir,
to be read after a failure), by what was recorded and by name, so it works
after a partial setup and when called twice. Every run writes what it makes to
a registry file under /run/kafkactl-test-hosts before making it;
`cleanup_leftovers()` removes whatever a run whose process is gone left behind.

Needs root and `make setup`'s Debian packages (openssh-server, iproute2,
util-linux, mount, e2fsprogs). The empty mount points of the install and data
roots are created on the test machine if missing and left there: deleting a
directory that is a mount point in another mount namespace would silently
unmount it there, under a parallel test's hosts.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import random
import re
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Sequence

PREFIX = "kth"                       # every interface, namespace and file name of ours starts with it
RUN_ID = re.compile(PREFIX + r"([0-9a-f]{6})")
REGISTRY_DIR = Path("/run/kafkactl-test-hosts")
SHM = Path("/dev/shm")
SUBNET = "10.231"                    # 10.231.S.0/24 per run, S chosen free at setup
SSHD = "/usr/sbin/sshd"              # sshd re-executes itself: it must be started by absolute path
TOOLS = ("ip", "ssh-keygen", "losetup", "mkfs.ext4", "mount", "nsenter", "unshare", "setpriv", "hostname")
COMMAND_TIMEOUT_S = 30.0
KILL_TIMEOUT_S = 10.0
# What a host's processes get instead of the test's environment: a separate
# machine would not inherit PYTEST_*, VIRTUAL_ENV and the like.
HOST_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}


class SshHostError(RuntimeError):
    pass


def _run(argv: Sequence[str], timeout_s: float = COMMAND_TIMEOUT_S, check: bool = True,
         input: str | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    try:
        result = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout_s,
                                input=input, env=env, stdin=None if input is not None else subprocess.DEVNULL)
    except subprocess.TimeoutExpired as error:
        raise SshHostError(f"`{shlex.join(argv)}` did not finish within {timeout_s:g} s") from error
    if check and result.returncode != 0:
        raise SshHostError(f"`{shlex.join(argv)}` exited {result.returncode}: "
                           f"{(result.stderr or result.stdout).strip()}")
    return result


@contextlib.contextmanager
def _locked(path: Path, timeout_s: float = 60.0) -> Iterator[None]:
    """An exclusive flock on `path` shared with the other test processes of
    this machine, waited for at most `timeout_s`."""
    with open(path, "a") as lock:
        for _ in _deadline_loop(timeout_s, 0.05):
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                continue
        else:
            raise SshHostError(f"{path} still locked by another test process after {timeout_s:g} s")
        yield   # the lock goes with the file's closing


def _deadline_loop(timeout_s: float, interval_s: float = 0.05) -> Iterator[None]:
    """Yields until `timeout_s` has passed, sleeping `interval_s` between turns."""
    deadline = time.monotonic() + timeout_s
    while True:
        yield
        if time.monotonic() >= deadline:
            return
        time.sleep(interval_s)


@dataclass(frozen=True)
class Disk:
    """One log dir of a host: a loop device mounted at `path` inside the host."""
    path: str        # the mount point inside the host, a log dir path
    media: str       # "ssd" or "hdd": what media detection must report for it
    device: str      # /dev/loopN (loop devices are global: the same name on the test machine)
    image: Path      # its backing file on the test machine

    @property
    def rotational_file(self) -> str:
        return f"/sys/block/{Path(self.device).name}/queue/rotational"


@dataclass
class SshHost:
    name: str                  # also its hostname
    address: str
    port: int
    user: str
    private_key: Path          # the client key that logs in as `user`
    host_public_key: str       # "ssh-ed25519 AAAA..." of its sshd
    netns: str
    install_root: str
    data_root: str
    disks: tuple[Disk, ...]
    backing_dir: Path          # where its private directories live on the test machine
    log_path: Path             # sshd's log (and the start script's errors); kept after teardown
    pid: int = 0               # sshd on the test machine (pid 1 inside the host)
    launcher: subprocess.Popen | None = field(default=None, repr=False)

    @property
    def log_dirs(self) -> list[str]:
        return [disk.path for disk in self.disks]

    @property
    def expected_media(self) -> dict[str, str]:
        """log dir path -> "ssd" / "hdd"."""
        return {disk.path: disk.media for disk in self.disks}

    def known_hosts_line(self) -> str:
        where = self.address if self.port == 22 else f"[{self.address}]:{self.port}"
        return f"{where} {self.host_public_key}"

    def ssh_argv(self, known_hosts: Path | str, command: str | None = None) -> list[str]:
        """An OpenSSH client command line that logs in with strict host key checking."""
        argv = ["ssh", "-i", str(self.private_key), "-p", str(self.port),
                "-o", f"UserKnownHostsFile={known_hosts}", "-o", "GlobalKnownHostsFile=/dev/null",
                "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes",
                "-o", "ConnectTimeout=10", f"{self.user}@{self.address}"]
        return argv + ([command] if command is not None else [])

    def run(self, command: str, timeout_s: float = COMMAND_TIMEOUT_S, check: bool = True,
            input: str | None = None) -> subprocess.CompletedProcess[str]:
        """`sh -c command` inside the host (its network, mount, UTS and PID
        namespaces, entered through sshd's pid), for a test's own checks: no
        SSH involved, so it also works when what is under test broke SSH."""
        if not self.pid:
            raise SshHostError(f"host {self.name} is not running")
        result = _run(["nsenter", "--target", str(self.pid), "--net", "--mount", "--uts", "--pid",
                       "--wd=/", "sh", "-c", command], timeout_s, check=False, input=input, env=HOST_ENV)
        if check and result.returncode != 0:
            raise SshHostError(f"on {self.name}, `{command}` exited {result.returncode}:\n"
                               f"{result.stdout}{result.stderr}")
        return result

    def log_tail(self, lines: int = 20) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError as error:
            return f"(no log: {error})"
        return "\n".join(text.splitlines()[-lines:])


def write_known_hosts(path: Path | str, hosts: Iterable[SshHost]) -> Path:
    path = Path(path)
    path.write_text("".join(host.known_hosts_line() + "\n" for host in hosts))
    return path


# ---------------------------------------------------------------- registry

def _process_start(pid: int) -> str | None:
    """The start time of a process (field 22 of /proc/PID/stat): with the pid it
    names the process, whose pid alone may have been reused since."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def _registry_path(rid: str) -> Path:
    return REGISTRY_DIR / f"{PREFIX}{rid}.json"


def _load_record(rid: str) -> dict | None:
    try:
        return json.loads(_registry_path(rid).read_text())
    except (OSError, ValueError):
        return None


def _owner_alive(record: dict | None) -> bool:
    if record is None:
        return False
    start = _process_start(int(record.get("owner_pid", 0)))
    return start is not None and start == record.get("owner_start")


# ---------------------------------------------------------------- discovery by name

def _netns_names() -> list[str]:
    out = _run(["ip", "netns", "list"]).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def _link_names() -> list[str]:
    out = _run(["ip", "-o", "link", "show"]).stdout
    # "7: kthab12cdv1@if6: <...": the name ends at "@" (the peer) or ":"
    return [line.split(":")[1].strip().split("@")[0] for line in out.splitlines() if ":" in line]


def _loop_devices() -> list[tuple[str, str]]:
    """(device, backing file) of every attached loop device."""
    out = _run(["losetup", "--list", "--json", "--output", "NAME,BACK-FILE"]).stdout
    if not out.strip():
        return []
    return [(dev["name"], (dev.get("back-file") or "").removesuffix(" (deleted)"))
            for dev in json.loads(out).get("loopdevices", [])]


def _backing_file(device: str) -> str | None:
    try:
        text = Path(f"/sys/block/{Path(device).name}/loop/backing_file").read_text().strip()
    except OSError:
        return None
    return text.removesuffix(" (deleted)")


def _remove_path(path: Path) -> str | None:
    """Removes a file or a directory tree; what is already gone (also while
    this runs) is fine. Returns the reason it could not, if so."""
    for _ in range(3):
        try:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)
            return None
        except FileNotFoundError:   # a part vanished under us: look again
            continue
        except OSError as error:
            return f"{path}: {error}"
    return None if not path.exists() else f"{path}: still there"


def _of_run(name: str, rid: str) -> bool:
    return name.startswith(f"{PREFIX}{rid}")


def _remove_run(rid: str, record: dict | None, launchers: Iterable[subprocess.Popen] = ()) -> list[str]:
    """Removes everything of run `rid`: what `record` lists and whatever carries
    its name; tolerates what is already gone. Returns what could not be removed."""
    record = record or {}
    errors: list[str] = []
    netns = sorted(set(record.get("netns", [])) | {n for n in _netns_names() if _of_run(n, rid)})
    links = set(record.get("links", [])) | {n for n in _link_names() if _of_run(n, rid)}
    loops = {(d, f) for d, f in record.get("loops", [])}
    loops |= {(d, f) for d, f in _loop_devices() if _of_run(Path(f).name, rid)}

    # 1. Processes, by namespace: sshd is pid 1 of its host, so killing it
    # kills everything the host started; its mount namespace goes with them,
    # unmounting the loop devices.
    existing = set(_netns_names())
    for ns in netns:
        if ns not in existing:
            continue
        for _ in _deadline_loop(KILL_TIMEOUT_S):
            pids = [int(p) for p in _run(["ip", "netns", "pids", ns]).stdout.split()]
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        else:
            errors.append(f"processes {pids} of netns {ns} still alive after {KILL_TIMEOUT_S:g} s")
    for launcher in launchers:      # reap our children, so none stays a zombie
        with contextlib.suppress(ProcessLookupError):
            launcher.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            launcher.wait(KILL_TIMEOUT_S)

    # 2. Loop devices: detach only while still bound to our file, since a freed
    # device name may already belong to someone else.
    for device, image in sorted(loops):
        if _backing_file(device) != image:
            continue
        _run(["losetup", "-d", device], check=False)
        for _ in _deadline_loop(KILL_TIMEOUT_S):
            if _backing_file(device) != image:
                break
        else:
            errors.append(f"loop device {device} still attached to {image}")

    # 3. Namespaces, then links (a veth goes with its namespace; the bridge last).
    for ns in netns:
        if ns in _netns_names():
            result = _run(["ip", "netns", "delete", ns], check=False)
            if ns in _netns_names():
                errors.append(f"netns {ns}: {result.stderr.strip()}")
    for link in sorted(links, key=lambda name: name.endswith("br")):
        if link in _link_names():
            result = _run(["ip", "link", "delete", link], check=False)
            if link in _link_names():
                errors.append(f"link {link}: {result.stderr.strip()}")

    # 4. Files: the disk images, the per-host directories, the tmpfs directory.
    for path in [Path(p) for p in record.get("paths", [])] + [SHM / f"{PREFIX}{rid}"]:
        problem = _remove_path(path)
        if problem:
            errors.append(problem)

    if not errors:
        for suffix in (".tmp", ".draft"):
            _registry_path(rid).with_suffix(suffix).unlink(missing_ok=True)
        _registry_path(rid).unlink(missing_ok=True)
    return errors


def cleanup_leftovers() -> list[str]:
    """Removes what earlier runs left behind when their process died (a killed
    pytest, a crashed worker): every run of ours whose owner process is gone.
    Runs of live processes, such as a parallel worker's, are left alone.
    Returns the run ids removed; raises when something could not be removed."""
    REGISTRY_DIR.mkdir(parents=True, exist_ok=True)
    # One cleanup at a time: parallel workers start their modules together.
    with _locked(REGISTRY_DIR / "cleanup.lock"):
        return _cleanup_leftovers()


def _cleanup_leftovers() -> list[str]:
    # Resources first, registries after: a run writes its registry before it
    # creates anything, so a resource seen here with no registry read after it
    # belongs to a run that is gone.
    rids = {m.group(1) for name in _netns_names() + _link_names() if (m := RUN_ID.match(name))}
    rids |= {m.group(1) for _, f in _loop_devices() if (m := RUN_ID.match(Path(f).name))}
    rids |= {m.group(1) for p in SHM.glob(f"{PREFIX}*") if (m := RUN_ID.fullmatch(p.name))}
    rids |= {m.group(1) for p in REGISTRY_DIR.glob(f"{PREFIX}*.json") if (m := RUN_ID.match(p.name))}
    removed, errors = [], []
    for rid in sorted(rids):
        record = _load_record(rid)
        if _owner_alive(record):
            continue
        problems = _remove_run(rid, record)
        errors += problems
        if not problems:
            removed.append(rid)
    if errors:
        raise SshHostError("leftovers of earlier test hosts could not be removed:\n" + "\n".join(errors))
    return removed


# ---------------------------------------------------------------- the hosts

class SshHosts:
    """`with SshHosts(3, tmp_path) as hosts:` -> `hosts.hosts`, three running SSH
    test hosts; everything is removed on leaving the block, even after a failed
    start. Also usable as `start()` / `close()` (`close()` may be called again).

    `disks`: (name under the data root, "ssd" or "hdd") per log dir.
    `extra_sshd_config`: more sshd_config lines (a test may break sshd with one).
    """

    def __init__(self, count: int, work_dir: Path | str, *, install_root: str = "/opt/kafkactl",
                 data_root: str = "/var/lib/kafkactl",
                 disks: Sequence[tuple[str, str]] = (("ssd0", "ssd"), ("hdd0", "hdd")),
                 disk_mib: int = 64, start_timeout_s: float = 15.0,
                 extra_sshd_config: Sequence[str] = ()):
        if not 1 <= count <= 50:
            raise ValueError(f"between 1 and 50 hosts, not {count}")
        for root in (install_root, data_root):
            if not root.startswith("/") or root.rstrip("/") in ("", "/tmp", "/root", "/etc/ssh") \
                    or root.startswith(("/tmp/", "/root/", "/etc/ssh/")):
                raise ValueError(f"{root}: an absolute path outside /tmp, /root and /etc/ssh "
                                 "(those are the host's own already)")
        for name, media in disks:
            if media not in ("ssd", "hdd") or "/" in name or not name:
                raise ValueError(f"disk {name!r}: a name under the data root and 'ssd' or 'hdd'")
        self.count = count
        self.work_dir = Path(work_dir).resolve()
        self.install_root = install_root.rstrip("/")
        self.data_root = data_root.rstrip("/")
        self.disk_specs = list(disks)
        self.disk_mib = disk_mib
        self.start_timeout_s = start_timeout_s
        self.extra_sshd_config = list(extra_sshd_config)
        self.rid = secrets.token_hex(3)
        self.hosts: list[SshHost] = []
        self.client_key = self.work_dir / f"{PREFIX}{self.rid}-client_ed25519"
        self._record: dict = {}
        self._started = False
        self._closed = False

    # names: interface names must fit in 15 characters (kth + 6 + v + 2 = 12)
    @property
    def bridge(self) -> str:
        return f"{PREFIX}{self.rid}br"

    def __enter__(self) -> SshHosts:
        self.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def write_known_hosts(self, path: Path | str, hosts: Iterable[SshHost] | None = None) -> Path:
        return write_known_hosts(path, self.hosts if hosts is None else hosts)

    def _save(self) -> None:
        temporary = _registry_path(self.rid).with_suffix(".tmp")
        temporary.write_text(json.dumps(self._record))
        temporary.replace(_registry_path(self.rid))

    def _note(self, kind: str, value) -> None:
        """Records a resource before it is created, so a crash right after
        creating it still leaves it findable."""
        self._record[kind].append(value)
        self._save()

    def start(self) -> None:
        if self._started:
            raise SshHostError("already started")
        self._started = True
        try:
            self._start()
        except BaseException:
            try:
                self.close()
            except SshHostError as error:   # keep the start's error first
                print(f"cleanup after the failed start: {error}")
            raise

    def _start(self) -> None:
        if os.geteuid() != 0:
            raise SshHostError("SSH test hosts need root (namespaces, loop devices, mounts)")
        missing = [tool for tool in TOOLS if shutil.which(tool) is None]
        if not os.access(SSHD, os.X_OK):
            missing.append(SSHD)
        if missing:
            raise SshHostError(f"missing {missing}: run `make setup` (Debian openssh-server, iproute2, "
                               "util-linux, mount, e2fsprogs)")
        REGISTRY_DIR.mkdir(parents=True, exist_ok=True)
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self._record = {"rid": self.rid, "owner_pid": os.getpid(), "owner_start": _process_start(os.getpid()),
                        "work_dir": str(self.work_dir), "netns": [], "links": [], "loops": [], "paths": []}
        # Created whole (written aside, then linked, which fails if the name is
        # taken): a parallel cleanup_leftovers() never reads it empty and takes
        # this live run for a dead one.
        draft = _registry_path(self.rid).with_suffix(".draft")
        draft.write_text(json.dumps(self._record))
        try:
            os.link(draft, _registry_path(self.rid))
        except FileExistsError:
            raise SshHostError(f"run id {self.rid} is taken: try again") from None
        finally:
            draft.unlink()

        # Mount points on the test machine: the host's own directories are
        # mounted over them inside its namespace. sshd needs its privilege
        # separation dir, which the package's service would create.
        for path in (self.install_root, self.data_root):
            os.makedirs(path, exist_ok=True)
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)

        subnet = self._make_bridge()
        self._note("paths", str(self.client_key))
        self._note("paths", str(self.client_key) + ".pub")
        _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"{PREFIX}{self.rid}-client",
              "-f", str(self.client_key)])
        for i in range(1, self.count + 1):
            self.hosts.append(self._prepare_host(i, subnet))
        for host in self.hosts:
            self._write_host_files(host)
            self._make_network(host, subnet)
        for host in self.hosts:
            self._launch(host)
        self._wait_ready()

    def _make_bridge(self) -> str:
        """A bridge with 10.231.S.1/24, S free on this machine. Chosen under a
        lock so that parallel workers never pick the same subnet."""
        with _locked(REGISTRY_DIR / "subnets.lock"):
            taken = set(re.findall(re.escape(SUBNET) + r"\.(\d+)\.",
                                   _run(["ip", "-4", "-o", "addr", "show"]).stdout
                                   + _run(["ip", "-4", "route", "show", "table", "all"]).stdout))
            free = [s for s in range(1, 255) if str(s) not in taken]
            if not free:
                raise SshHostError(f"no free {SUBNET}.S.0/24 subnet for the test hosts")
            subnet = f"{SUBNET}.{random.choice(free)}"
            self._record["subnet"] = subnet
            self._note("links", self.bridge)
            _run(["ip", "link", "add", self.bridge, "type", "bridge"])
            _run(["ip", "addr", "add", f"{subnet}.1/24", "dev", self.bridge])
        # Traffic from the hosts stays on this machine: no routing beyond the bridge.
        Path(f"/proc/sys/net/ipv4/conf/{self.bridge}/forwarding").write_text("0")
        _run(["ip", "link", "set", self.bridge, "up"])
        return subnet

    def _prepare_host(self, i: int, subnet: str) -> SshHost:
        name = f"{PREFIX}{self.rid}h{i}"
        backing = self.work_dir / name
        self._note("paths", str(backing))
        for sub in ("etc-ssh", "root/.ssh", "tmp", "install", "data"):
            (backing / sub).mkdir(parents=True, exist_ok=True)
        os.chmod(backing / "root", 0o700)      # sshd's StrictModes checks the key's directories
        os.chmod(backing / "root/.ssh", 0o700)
        os.chmod(backing / "tmp", 0o1777)
        host_key = backing / "etc-ssh/ssh_host_ed25519_key"
        _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(host_key)])
        public = " ".join(Path(str(host_key) + ".pub").read_text().split()[:2])

        disks = []
        shm_dir = SHM / f"{PREFIX}{self.rid}"
        shm_dir.mkdir(exist_ok=True)
        for disk_name, media in self.disk_specs:
            (backing / "data" / disk_name).mkdir()
            # The SSD's file on tmpfs, the HDD's on the work dir's (root) disk:
            # the loop device takes its rotational flag from the backing store.
            folder = shm_dir if media == "ssd" else self.work_dir
            image = folder / f"{name}-{disk_name}.img"
            self._note("paths", str(image))
            with open(image, "wb") as file:
                file.truncate(self.disk_mib << 20)
            _run(["mkfs.ext4", "-q", "-F", "-L", disk_name, str(image)])
            device = self._attach(image)
            disks.append(Disk(f"{self.data_root}/{disk_name}", media, device, image))
        return SshHost(name=name, address=f"{subnet}.{10 + i}", port=22, user="root",
                       private_key=self.client_key, host_public_key=public, netns=f"{PREFIX}{self.rid}n{i}",
                       install_root=self.install_root, data_root=self.data_root, disks=tuple(disks),
                       backing_dir=backing, log_path=self.work_dir / f"{name}-sshd.log")

    def _attach(self, image: Path) -> str:
        device = _run(["losetup", "--find", "--show", str(image)]).stdout.strip()
        self._note("loops", [device, str(image)])
        expected = "0" if image.is_relative_to(SHM) else "1"
        rotational = Path(f"/sys/block/{Path(device).name}/queue/rotational").read_text().strip()
        if rotational != expected:
            raise SshHostError(
                f"{device} (backed by {image}) reports queue/rotational={rotational}, expected {expected}: "
                "a file on tmpfs should make an SSD and one on the root disk an HDD; media detection "
                "would not find the disks the tests expect")
        return device

    def _write_host_files(self, host: SshHost) -> None:
        etc = host.backing_dir / "etc-ssh"
        config = [
            f"# SSH test host {host.name}: written by tests/support/ssh_hosts.py",
            f"ListenAddress {host.address}",
            f"Port {host.port}",
            "HostKey /etc/ssh/ssh_host_ed25519_key",
            "PidFile /etc/ssh/sshd.pid",
            "AuthorizedKeysFile .ssh/authorized_keys",
            "PermitRootLogin prohibit-password",
            "PubkeyAuthentication yes",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "UsePAM no",
            "PrintMotd no",
            "LogLevel VERBOSE",
            "Subsystem sftp internal-sftp",   # paramiko's SFTP uploads
            "MaxStartups 100",                # parallel deploy connections are not an attack here
            *self.extra_sshd_config,
        ]
        (etc / "sshd_config").write_text("\n".join(config) + "\n")
        if Path("/etc/ssh/moduli").is_file():   # diffie-hellman group exchange, as a packaged sshd has
            shutil.copy("/etc/ssh/moduli", etc / "moduli")
        # Like the machines of one cluster, each host can log in to the others:
        # the client key, and every host's key in the global known hosts.
        write_known_hosts(etc / "ssh_known_hosts", self.hosts)
        ssh_dir = host.backing_dir / "root/.ssh"
        shutil.copy(str(self.client_key) + ".pub", ssh_dir / "authorized_keys")
        shutil.copy(self.client_key, ssh_dir / "id_ed25519")
        os.chmod(ssh_dir / "id_ed25519", 0o600)

    def _make_network(self, host: SshHost, subnet: str) -> None:
        i = host.netns.rsplit("n", 1)[1]
        outside, inside = f"{PREFIX}{self.rid}v{i}", f"{PREFIX}{self.rid}p{i}"
        self._note("netns", host.netns)
        _run(["ip", "netns", "add", host.netns])
        self._note("links", outside)
        _run(["ip", "link", "add", outside, "type", "veth", "peer", "name", inside])
        _run(["ip", "link", "set", inside, "netns", host.netns])
        _run(["ip", "link", "set", outside, "master", self.bridge, "up"])
        ns = ["ip", "-n", host.netns]
        _run(ns + ["link", "set", inside, "name", "eth0"])
        _run(ns + ["addr", "add", f"{host.address}/24", "dev", "eth0"])
        _run(ns + ["link", "set", "eth0", "up"])
        _run(ns + ["link", "set", "lo", "up"])
        _run(ns + ["route", "add", "default", "via", f"{subnet}.1"])

    def _launch(self, host: SshHost) -> None:
        b = host.backing_dir
        q = shlex.quote
        steps = [
            "set -e",
            f"hostname {q(host.name)}",
            f"mount --bind {q(str(b / 'etc-ssh'))} /etc/ssh",
            f"mount --bind {q(str(b / 'root'))} /root",
            f"mount --bind {q(str(b / 'install'))} {q(host.install_root)}",
            f"mount --bind {q(str(b / 'data'))} {q(host.data_root)}",
            *(f"mount -t ext4 {q(d.device)} {q(d.path)}" for d in host.disks),
            # last: the sources above live under the test machine's /tmp
            f"mount --bind {q(str(b / 'tmp'))} /tmp",
            # -e: log to stderr, the log file opened on the test machine
            f"exec {SSHD} -D -e -f /etc/ssh/sshd_config",
        ]
        # --pdeathsig follows the thread that starts the host: pytest's main
        # thread, which lives as long as the test process.
        argv = ["setpriv", "--pdeathsig", "KILL", "--",              # dies with the test process
                "ip", "netns", "exec", host.netns,
                "unshare", "--mount", "--uts", "--pid", "--fork", "--kill-child", "--mount-proc",
                "--propagation", "private",                          # mounts never reach the test machine
                "sh", "-c", "\n".join(steps)]
        with open(host.log_path, "ab") as log:
            host.launcher = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                             env=HOST_ENV, start_new_session=True)
        # `ip netns exec` and `unshare` exec in place: the launcher's pid is
        # unshare's, and its one child becomes sh, then sshd (pid 1 inside).
        children = Path(f"/proc/{host.launcher.pid}/task/{host.launcher.pid}/children")
        for _ in _deadline_loop(5.0, 0.01):
            if host.launcher.poll() is not None:
                break
            with contextlib.suppress(OSError):
                if pids := children.read_text().split():
                    host.pid = int(pids[0])
                    return
        code = host.launcher.poll()
        what = "started no child" if code is None else f"exited {code}"
        raise SshHostError(f"host {host.name} ({host.address}): its launcher {what}; "
                           f"log {host.log_path}:\n{host.log_tail()}")

    def _wait_ready(self) -> None:
        """Until every sshd answers with its banner on its address, from the
        test machine over the bridge; fails at once when one exits."""
        waiting = list(self.hosts)
        for _ in _deadline_loop(self.start_timeout_s, 0.05):
            for host in list(waiting):
                assert host.launcher is not None
                if host.launcher.poll() is not None:
                    raise SshHostError(f"sshd of host {host.name} ({host.address}) exited "
                                       f"{host.launcher.returncode} while starting; log {host.log_path}:\n"
                                       f"{host.log_tail()}")
                if _ssh_banner(host.address, host.port):
                    waiting.remove(host)
            if not waiting:
                return
        raise SshHostError("sshd did not accept connections within "
                           f"{self.start_timeout_s:g} s on: " + "; ".join(
                               f"host {h.name} ({h.address}:{h.port}), log {h.log_path}:\n{h.log_tail()}"
                               for h in waiting))

    def close(self) -> None:
        """Removes everything of this run; safe after a partial start and when
        called again. Raises if something could not be removed; it then stays
        in the registry for `cleanup_leftovers()`."""
        if self._closed:
            return
        # sshd first, while its parent (unshare) still runs: unshare reaps it and
        # exits, and we reap unshare, so no process of ours lingers as a zombie
        # for the machine's init to collect.
        for host in self.hosts:
            if host.launcher is not None and host.launcher.poll() is None and host.pid:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(host.pid, signal.SIGKILL)
        for host in self.hosts:
            if host.launcher is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    host.launcher.wait(KILL_TIMEOUT_S)
        launchers = [h.launcher for h in self.hosts if h.launcher is not None]
        errors = _remove_run(self.rid, self._record or _load_record(self.rid), launchers)
        for host in self.hosts:
            host.pid = 0
        self._closed = True
        if errors:
            raise SshHostError(f"test hosts {PREFIX}{self.rid} not fully removed:\n" + "\n".join(errors))


def _ssh_banner(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=0.5) as conn:
            conn.settimeout(1.0)
            return conn.recv(8).startswith(b"SSH-2.0")
    except OSError:
        return False


if __name__ == "__main__":   # `python tests/support/ssh_hosts.py`: remove what crashed runs left
    print("removed runs:", cleanup_leftovers() or "none")
