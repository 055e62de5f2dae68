"""Fixtures for the deployment tests: real SSH test hosts (tests/support/ssh_hosts.py).

`ssh_hosts`: three hosts for the module, each a real sshd with its own
address, private install and data roots and an SSD and an HDD log dir.
`known_hosts`: a known_hosts file with their keys, for strict host key checking.
They need root, as CI has: no skip, a missing tool or privilege fails the tests.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from support.ssh_hosts import SshHosts, cleanup_leftovers


@pytest.fixture(scope="module")
def ssh_hosts(tmp_path_factory) -> Iterator[SshHosts]:
    cleanup_leftovers()   # what a killed earlier run left (runs of live processes are kept)
    with SshHosts(3, tmp_path_factory.mktemp("ssh-hosts")) as hosts:
        yield hosts


@pytest.fixture(scope="module")
def known_hosts(ssh_hosts: SshHosts, tmp_path_factory) -> Path:
    return ssh_hosts.write_known_hosts(tmp_path_factory.mktemp("ssh-client") / "known_hosts")
