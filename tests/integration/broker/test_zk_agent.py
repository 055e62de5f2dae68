"""The broker's ZooKeeper agent against a real ZooKeeper: what it does before
the broker is registered (and so before any controller can send it an
UpdateMetadata)."""

from kazoo.client import KazooClient

from kafkactl.cluster.broker.config import BrokerConfig, Endpoint
from kafkactl.cluster.broker.zk_agent import ZkAgent
from kafkactl.cluster.zk import layout


def test_the_cluster_id_is_handed_over_before_the_broker_registers(zk_chroot):
    """A controller sends UpdateMetadata as soon as /brokers/ids/<id> exists:
    the broker's metadata must hold the cluster id by then, or setting it
    afterwards would replace the controller's update (seen as a broker
    answering Metadata with no brokers for 30 s)."""
    endpoint = Endpoint("PLAINTEXT", "127.0.0.1", 9092)
    config = BrokerConfig(broker_id=7, zookeeper_connect=zk_chroot, listeners=(endpoint,),
                          advertised_listeners=(endpoint,), log_dirs=("/unused",))
    server, chroot = zk_chroot.split("/", 1)
    observer = KazooClient(hosts=server, timeout=10)
    observer.start(timeout=10)
    observer.ensure_path(f"/{chroot}")
    observer.chroot = f"/{chroot}"
    seen = []

    def on_cluster_id(cluster_id: str) -> None:
        seen.append((cluster_id, observer.exists(layout.broker(7)) is not None))

    agent = ZkAgent(config, lambda configs: None, on_cluster_id=on_cluster_id)
    try:
        agent.start()
        assert seen == [(agent.cluster_id, False)]
        assert observer.exists(layout.broker(7)) is not None
    finally:
        agent.stop()
        observer.stop()
        observer.close()
