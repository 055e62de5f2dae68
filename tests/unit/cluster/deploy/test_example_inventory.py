"""ansible/inventory.example.yml is valid and shows every field."""

from pathlib import Path

from kafkactl.cluster.deploy.inventory import CONNECTION_VARS, KNOWN_VARS, LOG_DIR_KEYS, LogDir, load_inventory

EXAMPLE = Path(__file__).resolve().parents[4] / "ansible" / "inventory.example.yml"


def test_the_example_validates():
    # Its key file is the reader's own (~/.ssh/id_ed25519), not this machine's.
    inventory = load_inventory(str(EXAMPLE), readable=lambda path: True)
    assert [(z.name, z.zookeeper_id) for z in inventory.zookeeper] == [("kafka-1", 1), ("kafka-2", 2), ("kafka-3", 3)]
    assert [(b.name, b.broker_id, b.rack) for b in inventory.brokers] == [
        ("kafka-1", 1, "eu-west-1a"), ("kafka-2", 2, "eu-west-1b"), ("kafka-3", 3, "eu-west-1c")]
    assert inventory.brokers[1].log_dirs == (LogDir("/data/ssd0/kafka", "ssd"), LogDir("/data/hdd0/kafka", "auto"))
    # Each machine runs ZooKeeper and a broker: one connection per host.
    assert {name: (c.address, c.port, c.user) for name, c in inventory.connections().items()} == {
        "kafka-1": ("10.0.1.11", 22, "kafka"), "kafka-2": ("10.0.1.12", 22, "kafka"),
        "kafka-3": ("10.0.1.13", 2222, "kafka")}
    assert inventory.brokers[0].connection.key_file.endswith("/.ssh/id_ed25519")
    assert inventory.broker_config["min.insync.replicas"] == "2"
    assert inventory.zookeeper_config["4lw.commands.whitelist"] == "ruok,srvr,mntr"


def test_the_example_shows_every_field():
    text = EXAMPLE.read_text()
    for name in (*CONNECTION_VARS, *KNOWN_VARS, *LOG_DIR_KEYS, "ssd", "hdd", "auto"):
        assert f"{name}" in text, name
