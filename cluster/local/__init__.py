"""Local clusters: ZooKeeper plus N brokers as background processes under a dir.

The public API (no CLI here; kafkactl.cli.cluster is a thin layer over it):

    from kafkactl.cluster.local import LocalCluster
    cluster = LocalCluster(directory)
    status = cluster.up(brokers=1, overrides={"key": "value"}, timeout_s=60)
    status.zookeeper_connect, status.bootstrap_servers, status.brokers[0].port
    cluster.status()            # live ClusterStatus
    cluster.kill_broker(1)      # SIGKILL (crash); stop_broker(1) is SIGTERM
    cluster.up()                # restarts what is not running, same ports/data
    cluster.down(purge=True)    # brokers, then ZooKeeper; deletes the dir

Importing this package is cheap: kazoo is only imported when ZooKeeper is
actually contacted.
"""

from kafkactl.cluster.local.brokers import parse_overrides
from kafkactl.cluster.local.cluster import DEFAULT_BROKERS, BrokerStatus, ClusterStatus, LocalCluster
from kafkactl.cluster.local.errors import (LocalClusterError, LocalClusterUsageError, NotAClusterDirError,
                     ShapeMismatchError, StartupError)
from kafkactl.cluster.local.zookeeper import ZooKeeperCommand

__all__ = [
    "DEFAULT_BROKERS", "BrokerStatus", "ClusterStatus", "LocalCluster", "LocalClusterError",
    "LocalClusterUsageError", "NotAClusterDirError", "ShapeMismatchError", "StartupError",
    "ZooKeeperCommand", "parse_overrides",
]
