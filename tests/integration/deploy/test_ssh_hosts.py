"""The SSH test hosts work as separate machines for real clients.

OpenSSH and paramiko log in with strict host key checking; a host's install
root, data root and /tmp are its own; hosts reach each other; each host's log
dirs are an SSD and an HDD by what the kernel reports; and teardown (also
after a failed start or a killed test process) leaves nothing behind.
"""

from __future__ import annotations

import io
import subprocess
import sys
import uuid
from pathlib import Path

import paramiko
import pytest

from support.ssh_hosts import PREFIX, REGISTRY_DIR, SHM, SshHostError, SshHosts, cleanup_leftovers, write_known_hosts
from support.waiting import wait_for

TESTS_DIR = Path(__file__).resolve().parents[2]
ROTATIONAL = {"ssd": "0", "hdd": "1"}


def _mounts(mountinfo: str) -> dict[str, tuple[str, str]]:
    """mount point -> (file system type, source) from a /proc/PID/mountinfo text."""
    mounts = {}
    for line in mountinfo.splitlines():
        fields, _, after = line.partition(" - ")
        fstype, source = after.split()[:2]
        mounts[fields.split()[4]] = (fstype, source)
    return mounts


def _traces(rid: str) -> list[str]:
    """Whatever of run `rid` exists on this machine: namespaces, links, loop
    devices, tmpfs files, its registry file."""
    name = f"{PREFIX}{rid}"
    found = [f"netns {line}" for line in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True,
                                                         timeout=10).stdout.splitlines() if name in line]
    found += [f"link {line}" for line in subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True,
                                                        timeout=10).stdout.splitlines() if name in line]
    found += [f"loop {line}" for line in subprocess.run(["losetup", "-a"], capture_output=True, text=True,
                                                        timeout=10).stdout.splitlines() if name in line]
    found += [f"file {path}" for path in SHM.glob(f"{name}*")]
    found += [f"registry {path}" for path in REGISTRY_DIR.glob(f"{name}*")]
    return found


def test_openssh_logs_in_to_each_host_with_strict_host_key_checking(ssh_hosts, known_hosts):
    for host in ssh_hosts.hosts:
        result = subprocess.run(host.ssh_argv(known_hosts, "true"), capture_output=True, text=True, timeout=30)
        assert result.returncode == 0, f"{host.name}: {result.stderr}\n{host.log_tail()}"
        name = subprocess.run(host.ssh_argv(known_hosts, "hostname"), capture_output=True, text=True, timeout=30)
        assert name.stdout.strip() == host.name


def test_openssh_refuses_a_host_whose_key_is_not_the_known_one(ssh_hosts, tmp_path):
    # The check is real: host 1's address with host 2's key is refused.
    first, second = ssh_hosts.hosts[:2]
    wrong = tmp_path / "known_hosts"
    wrong.write_text(f"{first.address} {second.host_public_key}\n")
    result = subprocess.run(first.ssh_argv(wrong, "true"), capture_output=True, text=True, timeout=30)
    assert result.returncode != 0
    assert "Host key verification failed" in result.stderr


def test_paramiko_connects_with_reject_policy_and_uploads_over_sftp(ssh_hosts, known_hosts):
    for host in ssh_hosts.hosts:
        client = paramiko.SSHClient()
        client.load_host_keys(str(known_hosts))
        client.set_missing_host_key_policy(paramiko.RejectPolicy())
        try:
            client.connect(host.address, port=host.port, username=host.user, key_filename=str(host.private_key),
                           look_for_keys=False, allow_agent=False, timeout=10, banner_timeout=10, auth_timeout=10)
            _, stdout, _ = client.exec_command("hostname", timeout=10)
            assert stdout.read().decode().strip() == host.name
            assert stdout.channel.recv_exit_status() == 0
            payload = f"uploaded to {host.name}\n".encode()
            target = f"{host.install_root}/paramiko-{uuid.uuid4().hex[:8]}"
            with client.open_sftp() as sftp:
                sftp.putfo(io.BytesIO(payload), target)
            assert host.run(f"cat {target}").stdout.encode() == payload
        finally:
            client.close()

    stranger = paramiko.SSHClient()   # no known hosts: RejectPolicy refuses the server
    stranger.set_missing_host_key_policy(paramiko.RejectPolicy())
    host = ssh_hosts.hosts[0]
    try:
        with pytest.raises(paramiko.SSHException, match="not found in known_hosts"):
            stranger.connect(host.address, port=host.port, username=host.user, key_filename=str(host.private_key),
                             look_for_keys=False, allow_agent=False, timeout=10)
    finally:
        stranger.close()


def test_each_host_has_its_own_install_root_data_root_and_tmp(ssh_hosts, known_hosts):
    first, second, third = ssh_hosts.hosts
    marker = f"marker-{uuid.uuid4().hex[:8]}"
    for root, backing in ((first.install_root, "install"), (first.data_root, "data"), ("/tmp", "tmp")):
        path = f"{root}/{marker}"
        wrote = subprocess.run(first.ssh_argv(known_hosts, f"echo {first.name} > {path}"),
                               capture_output=True, text=True, timeout=30)
        assert wrote.returncode == 0, wrote.stderr
        assert first.run(f"cat {path}").stdout == f"{first.name}\n"
        for other in (second, third):
            assert other.run(f"test ! -e {path}", check=False).returncode == 0, f"{path} seen on {other.name}"
        assert not Path(path).exists(), f"{path} seen on the test machine"
        # where it really is: the first host's own directory on the test machine
        assert (first.backing_dir / backing / marker).read_text() == f"{first.name}\n"


def test_each_host_looks_like_its_own_machine(ssh_hosts):
    for host in ssh_hosts.hosts:
        assert host.run("hostname").stdout.strip() == host.name
        assert host.run("cat /proc/1/comm").stdout.strip() == "sshd"   # its own PID namespace
        addresses = host.run("ip -4 -o addr show dev eth0").stdout
        assert f"inet {host.address}/24" in addresses
    # nothing is routed beyond the bridge: the hosts reach this machine and each other only
    assert Path(f"/proc/sys/net/ipv4/conf/{ssh_hosts.bridge}/forwarding").read_text().strip() == "0"


def test_hosts_reach_each_other(ssh_hosts):
    first, second, third = ssh_hosts.hosts
    # with the key and global known hosts each host has, as a cluster's machines would
    result = first.run(f"ssh -o BatchMode=yes -o StrictHostKeyChecking=yes -o ConnectTimeout=10 "
                       f"root@{second.address} hostname")
    assert result.stdout.strip() == second.name
    banner = third.run(f"python3 -c \"import socket; print(socket.create_connection(('{first.address}', 22), 5)"
                       f".recv(7).decode())\"")
    assert banner.stdout.strip() == "SSH-2.0"


def test_each_host_has_an_ssd_and_an_hdd_at_its_log_dirs(ssh_hosts):
    seen_devices = set()
    test_machine = _mounts(Path("/proc/self/mountinfo").read_text())
    for host in ssh_hosts.hosts:
        assert sorted(host.expected_media.values()) == ["hdd", "ssd"]
        mounts = _mounts(host.run("cat /proc/self/mountinfo").stdout)
        for disk in host.disks:
            assert mounts.get(disk.path) == ("ext4", disk.device), f"{host.name}: {disk.path}"
            # as media detection does it, from the log dir path alone
            source = host.run(f"findmnt -n -o SOURCE --mountpoint {disk.path}").stdout.strip()
            assert source == disk.device
            rotational = host.run(f"cat /sys/block/{Path(source).name}/queue/rotational").stdout.strip()
            assert rotational == ROTATIONAL[disk.media], f"{host.name}: {disk.path} on {source}"
            assert host.run(f"touch {disk.path}/writable && rm {disk.path}/writable", check=False).returncode == 0
            assert disk.path not in test_machine, f"{disk.path} mounted on the test machine"
            seen_devices.add(disk.device)
    assert len(seen_devices) == 2 * len(ssh_hosts.hosts)


def test_teardown_leaves_no_namespace_link_loop_device_process_or_file(tmp_path):
    hosts = SshHosts(1, tmp_path / "hosts")
    with hosts:
        host = hosts.hosts[0]
        # a process the host started outside any session, as a deployed broker would be
        started = host.run("setsid sleep 600 > /dev/null 2>&1 < /dev/null & echo started")
        assert started.stdout.strip() == "started"
        seen = {}

        def sleep_started() -> bool:
            # the backgrounded child may not have exec'd `sleep` yet when the command returns
            seen["pids"] = [int(p) for p in subprocess.run(["ip", "netns", "pids", host.netns], capture_output=True,
                                                           text=True, timeout=10).stdout.split()]
            seen["described"] = {pid: _describe(pid) for pid in seen["pids"]}
            return any("sleep 600" in text for text in seen["described"].values())

        wait_for(sleep_started, 10, "the host's sleep 600 in the namespace")
        pids, described = seen["pids"], seen["described"]
        assert host.pid in pids and len(pids) >= 3      # unshare, sshd, sleep
        started_at = {pid: _start_time(pid) for pid in pids}
        assert _traces(hosts.rid)
        images = [disk.image for disk in host.disks]
        devices = [(disk.device, str(disk.image)) for disk in host.disks]
    assert _traces(hosts.rid) == []
    # a pid now used by another process is not ours; one that had already
    # exited when listed (sshd's child of the readiness probe) has no start time
    survivors = [pid for pid in pids if started_at[pid] is not None and _start_time(pid) == started_at[pid]]
    assert survivors == [], [(described[pid], _describe(pid)) for pid in survivors]
    attached = subprocess.run(["losetup", "--list", "--noheadings", "--output", "NAME,BACK-FILE"],
                              capture_output=True, text=True, timeout=10).stdout
    for device, image in devices:
        assert f"{device} {image}" not in " ".join(attached.split()), attached
    assert not any(path.exists() for path in images)
    assert not host.backing_dir.exists()
    assert hosts.bridge not in subprocess.run(["ip", "-o", "link"], capture_output=True, text=True,
                                              timeout=10).stdout
    hosts.close()   # a second close does nothing and does not fail


def _describe(pid: int) -> str:
    try:
        status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
        command = Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ")
    except OSError:
        return f"{pid}: gone"
    return f"{pid} {command!r} state {status['State'].strip()} parent {status['PPid'].strip()}"


def _start_time(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except OSError:
        return None


def test_a_failed_start_names_the_host_shows_its_log_and_removes_everything(tmp_path):
    hosts = SshHosts(1, tmp_path / "hosts", extra_sshd_config=["NoSuchOption yes"])
    with pytest.raises(SshHostError, match=rf"sshd of host {PREFIX}{hosts.rid}h1 \(10\.231\.\d+\.11\) exited") as error:
        with hosts:
            pass
    assert "NoSuchOption" in str(error.value)     # the log tail says why
    assert _traces(hosts.rid) == []
    assert not list((tmp_path / "hosts").glob("*.img"))


def test_cleanup_leftovers_removes_what_a_killed_test_process_left(tmp_path):
    # A test process killed with SIGKILL runs no teardown: its hosts die with
    # it, the namespaces, links, loop devices and files stay until the next
    # run's cleanup_leftovers().
    script = (
        "import os, sys\n"
        f"sys.path.insert(0, {str(TESTS_DIR)!r})\n"
        "from support.ssh_hosts import SshHosts\n"
        "hosts = SshHosts(1, sys.argv[1])\n"
        "hosts.start()\n"
        "print(hosts.rid, flush=True)\n"
        "os.kill(os.getpid(), 9)\n"
    )
    killed = subprocess.run([sys.executable, "-c", script, str(tmp_path / "hosts")], capture_output=True,
                            text=True, timeout=60)
    assert killed.returncode == -9, killed.stderr
    rid = killed.stdout.strip()
    left = _traces(rid)
    assert any(t.startswith("netns") for t in left) and any(t.startswith("loop") for t in left), left
    cleanup_leftovers()   # (a parallel worker's cleanup may have removed it first)
    assert _traces(rid) == []
    assert not list((tmp_path / "hosts").glob("*.img"))


def test_known_hosts_lines_name_a_port_other_than_22(ssh_hosts, tmp_path):
    host = ssh_hosts.hosts[0]
    assert host.known_hosts_line() == f"{host.address} {host.host_public_key}"
    moved = type(host)(**{**host.__dict__, "port": 2222})
    path = write_known_hosts(tmp_path / "known_hosts", [moved])
    assert path.read_text() == f"[{host.address}]:2222 {host.host_public_key}\n"
