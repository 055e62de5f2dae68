"""Every controller operation, one import away.

Each is a pure function `(context, input) -> Decision`; see execution.py for
how a Decision is carried out and __init__.py for the overall style.
"""

from kafkactl.cluster.controller.broker_change import on_broker_change, on_broker_failure, on_broker_startup
from kafkactl.cluster.controller.deletion import on_delete_topics, on_stop_replica_response
from kafkactl.cluster.controller.failover import ClusterSnapshot, load_context, on_controller_failover
from kafkactl.cluster.controller.isr_change import on_isr_change
from kafkactl.cluster.controller.log_dir_events import on_log_dir_event
from kafkactl.cluster.controller.offline_dirs import on_leader_and_isr_response
from kafkactl.cluster.controller.preferred import on_auto_leader_rebalance, on_preferred_replica_election
from kafkactl.cluster.controller.reassignment import on_partition_reassignment
from kafkactl.cluster.controller.shutdown import on_controlled_shutdown
from kafkactl.cluster.controller.topic_change import on_topic_change, on_topic_config_change

__all__ = [
    "ClusterSnapshot", "load_context", "on_controller_failover",
    "on_broker_change", "on_broker_startup", "on_broker_failure",
    "on_topic_change", "on_topic_config_change",
    "on_delete_topics", "on_stop_replica_response",
    "on_partition_reassignment",
    "on_preferred_replica_election", "on_auto_leader_rebalance",
    "on_controlled_shutdown",
    "on_isr_change",
    "on_leader_and_isr_response",
    "on_log_dir_event",
]
