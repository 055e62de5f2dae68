"""Apache Kafka's ZooKeeper paths (ZooKeeper mode), in one place.

See ../shared/reference/zookeeper-layout.md. A chroot is handled by the
client (kazoo's `hosts="h:p/chroot"`), never by these functions.
"""

CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
BROKER_IDS = "/brokers/ids"
BROKER_TOPICS = "/brokers/topics"
BROKER_SEQID = "/brokers/seqid"
CLUSTER_ID = "/cluster/id"
ISR_CHANGE_NOTIFICATION = "/isr_change_notification"
ISR_CHANGE_PREFIX = ISR_CHANGE_NOTIFICATION + "/isr_change_"
REASSIGN_PARTITIONS = "/admin/reassign_partitions"
PREFERRED_REPLICA_ELECTION = "/admin/preferred_replica_election"
DELETE_TOPICS = "/admin/delete_topics"
CONFIG_CHANGES = "/config/changes"
CONFIG_CHANGE_PREFIX = CONFIG_CHANGES + "/config_change_"
LATEST_PRODUCER_ID_BLOCK = "/latest_producer_id_block"
LOG_DIR_EVENT_NOTIFICATION = "/log_dir_event_notification"
LOG_DIR_EVENT_PREFIX = LOG_DIR_EVENT_NOTIFICATION + "/log_dir_event_"
FEATURE = "/feature"
CONSUMERS = "/consumers"

CONFIG_ENTITY_TYPES = ("topics", "brokers", "clients", "users", "ips")

# What a broker creates at start if missing, in Kafka's order.
PERSISTENT_PATHS = (
    CONSUMERS,
    BROKER_IDS,
    BROKER_TOPICS,
    CONFIG_CHANGES,
    "/config/topics",
    "/config/clients",
    "/config/users",
    "/config/brokers",
    "/config/ips",
    DELETE_TOPICS,
    BROKER_SEQID,
    ISR_CHANGE_NOTIFICATION,
    LATEST_PRODUCER_ID_BLOCK,
    LOG_DIR_EVENT_NOTIFICATION,
)


def broker(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


def topic(name: str) -> str:
    return f"{BROKER_TOPICS}/{name}"


def partitions(topic_name: str) -> str:
    return f"{topic(topic_name)}/partitions"


def partition(topic_name: str, partition_index: int) -> str:
    return f"{partitions(topic_name)}/{partition_index}"


def partition_state(topic_name: str, partition_index: int) -> str:
    # One format, not three nested calls: every state write of a failover makes one.
    return f"{BROKER_TOPICS}/{topic_name}/partitions/{partition_index}/state"


def entity_config(entity_type: str, name: str) -> str:
    return f"/config/{entity_type}/{name}"


def topic_config(name: str) -> str:
    return entity_config("topics", name)


def delete_topic(name: str) -> str:
    return f"{DELETE_TOPICS}/{name}"
