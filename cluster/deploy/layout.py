"""Where a deployed cluster lives on each host (docs/deploy.md, "What is installed where").

`kafkactl deploy` and the Ansible roles (ansible/roles/*) install the same
files at the same places, so either tool can take over a host from the other.

    /opt/kafkactl/                          install root
      versions/<release>/                   one release: never changed once complete
        wheelhouse/*.whl, SHA256SUMS          the wheels it was installed from
        venv/                                 a virtual environment with kafkactl
        installed.json                        written last: the release is complete
      current -> versions/<release>         the newest complete release (for operators'
                                            own use: /opt/kafkactl/current/venv/bin/kafkactl)
      etc/server.properties                 the broker's config (broker hosts)
      etc/zoo.cfg                           ZooKeeper's config (ZooKeeper hosts)
      etc/services/<service>.json           how to run `broker` / `zookeeper`
      run/<service>.pid, ...                the supervisor's state (hosts without systemd)
    /var/lib/kafkactl/                      data root
      zookeeper/myid, version-2/            ZooKeeper's dataDir
      logs/<service>.log                    each service's output

A release is named `<kafkactl version>-<first 12 hex of the wheelhouse
manifest's sha256>`: the same wheels give the same name on every host and
in both tools, and any change of code or of a dependency gives a new one.

Services run from their release's own directory, never through `current`:
a running broker that imports a module late must get it from the release it
started with. Installing a new release therefore changes no running
process: it rewrites the service definitions, and the service switches at
its next restart (`deploy rolling-restart`), which `deploy status` shows as
a pending restart.

Ports: brokers listen on 9092 on every interface and advertise the host's
inventory address; ZooKeeper serves clients on 2181 and its peers on 2888
(quorum) and 3888 (leader election), Kafka's and ZooKeeper's defaults.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

INSTALL_ROOT = "/opt/kafkactl"
DATA_ROOT = "/var/lib/kafkactl"
BROKER, ZOOKEEPER = "broker", "zookeeper"
SERVICES = (ZOOKEEPER, BROKER)     # start order on a host: ZooKeeper first
BROKER_PORT = 9092
ZOOKEEPER_CLIENT_PORT = 2181
ZOOKEEPER_QUORUM_PORT = 2888
ZOOKEEPER_ELECTION_PORT = 3888
RELEASE = re.compile(r"^[0-9A-Za-z.+_-]{1,64}-[0-9a-f]{12}$")
KEPT_RELEASES = 2                  # the running one and one to go back to


@dataclass(frozen=True, slots=True)
class HostLayout:
    install_root: str = INSTALL_ROOT
    data_root: str = DATA_ROOT

    def release_dir(self, release: str) -> str:
        if not RELEASE.match(release):
            raise ValueError(f"not a release name: {release!r}")
        return posixpath.join(self.install_root, "versions", release)

    def wheelhouse_dir(self, release: str) -> str:
        return posixpath.join(self.release_dir(release), "wheelhouse")

    def venv_dir(self, release: str) -> str:
        return posixpath.join(self.release_dir(release), "venv")

    def python(self, release: str) -> str:
        return posixpath.join(self.venv_dir(release), "bin", "python")

    def release_marker(self, release: str) -> str:
        return posixpath.join(self.release_dir(release), "installed.json")

    @property
    def versions_dir(self) -> str:
        return posixpath.join(self.install_root, "versions")

    @property
    def current_link(self) -> str:
        return posixpath.join(self.install_root, "current")

    @property
    def etc_dir(self) -> str:
        return posixpath.join(self.install_root, "etc")

    @property
    def server_properties(self) -> str:
        return posixpath.join(self.etc_dir, "server.properties")

    @property
    def zoo_cfg(self) -> str:
        return posixpath.join(self.etc_dir, "zoo.cfg")

    def service_definition(self, service: str) -> str:
        return posixpath.join(self.etc_dir, "services", f"{service}.json")

    @property
    def run_dir(self) -> str:
        return posixpath.join(self.install_root, "run")

    @property
    def zookeeper_data_dir(self) -> str:
        return posixpath.join(self.data_root, "zookeeper")

    @property
    def myid(self) -> str:
        return posixpath.join(self.zookeeper_data_dir, "myid")

    @property
    def logs_dir(self) -> str:
        return posixpath.join(self.data_root, "logs")

    def service_log(self, service: str) -> str:
        return posixpath.join(self.logs_dir, f"{service}.log")
