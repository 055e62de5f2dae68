"""Dynamic broker configs on the broker: precedence (own > cluster default >
server.properties), what is ignored, and each change reaching its owner."""

import dataclasses
import socket
import time
from types import SimpleNamespace

import pytest
from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker import dynamic_config
from kafkactl.cluster.broker.broker import Broker
from kafkactl.cluster.broker.config import from_properties
from kafkactl.cluster.broker.network import SocketServer
from kafkactl.cluster.broker.quota import UNLIMITED
from kafkactl.cluster.broker.role_changes import LeaderAndIsrState
from kafkactl.cluster.log.manager import LogDir, LogManager
from kafkactl.cluster.protocol.record_batch import build_batch
from support.one_broker import one_broker
from support.sockets import closed_by_peer

NOW_MS = 1_700_000_000_000
STATIC, _ = from_properties({"broker.id": "1", "zookeeper.connect": "z:1", "log.retention.ms": "5000",
                             "max.connections": "100"})


def test_the_broker_own_value_wins_over_the_default_which_wins_over_server_properties():
    resolved, warnings = dynamic_config.resolve(
        STATIC, {"log.retention.ms": "1000", "min.insync.replicas": "2", "follower.replication.throttled.rate": "7"},
        {"log.retention.ms": "2000", "leader.replication.throttled.rate": "9"})
    assert warnings == []
    assert resolved.config.log_retention_ms == 2000               # broker 1's own
    assert resolved.config.min_insync_replicas == 2               # the cluster default
    assert resolved.config.max_connections == 100                 # server.properties
    assert (resolved.leader_rate, resolved.follower_rate) == (9, 7)
    assert resolved.sources == {
        "follower.replication.throttled.rate": ("7", "cluster default"),
        "leader.replication.throttled.rate": ("9", "broker 1"),
        "log.retention.ms": ("2000", "broker 1"),
        "min.insync.replicas": ("2", "cluster default")}
    # Removing both brings server.properties back.
    resolved, _ = dynamic_config.resolve(STATIC, {}, {})
    assert resolved.config == STATIC and (resolved.leader_rate, resolved.follower_rate) == (UNLIMITED, UNLIMITED)


def test_keys_kafka_would_not_take_there_are_ignored_with_a_warning_and_the_rest_applies():
    resolved, warnings = dynamic_config.resolve(
        STATIC,
        {"listeners": "PLAINTEXT://:9093", "log.segment.bytes": "1048576", "num.io.threads": "16"},
        {"min.insync.replicas": "zero", "broker.id": "7", "message.max.bytes": "2000"})
    assert warnings == [
        "cluster default: ignored: listeners: a per-broker config: Kafka refuses it cluster-wide, give --broker ID",
        "broker 1: ignored: min.insync.replicas: invalid value 'zero' (not an integer)",
        "broker 1: ignored: broker.id is not dynamically updatable: set it in the broker's server.properties "
        "and restart the broker"]
    assert resolved.config == dataclasses.replace(STATIC, log_segment_bytes=1048576, message_max_bytes=2000)


def test_a_combination_kafka_refuses_leaves_the_update_unapplied():
    with pytest.raises(dynamic_config.UpdateRefused, match="max.connections.per.ip can be 0 only"):
        dynamic_config.resolve(STATIC, {"max.connections.per.ip": "0"}, {})
    resolved, _ = dynamic_config.resolve(STATIC, {"max.connections.per.ip": "0"},
                                         {"max.connections.per.ip.overrides": "10.0.0.1:5"})
    assert resolved.config.max_connections_per_ip_overrides == {"10.0.0.1": 5}


def test_the_log_cleaner_takes_a_thread_count_within_half_and_double_of_the_one_in_effect():
    resolved, _ = dynamic_config.resolve(STATIC, {"log.cleaner.threads": "2"}, {}, cleaner_threads=1)
    assert resolved.config.log_cleaner_threads == 2
    for threads, problem in (("3", "more than double the current value 1"), ("0", "should be at least 1")):
        with pytest.raises(dynamic_config.UpdateRefused, match=f"log.cleaner.threads {threads}: .*{problem}"):
            dynamic_config.resolve(STATIC, {"log.cleaner.threads": threads, "log.retention.ms": "1"}, {},
                                   cleaner_threads=1)
    # The broker's own value is the one that counts.
    resolved, _ = dynamic_config.resolve(STATIC, {"log.cleaner.threads": "8"}, {"log.cleaner.threads": "2"},
                                         cleaner_threads=1)
    assert resolved.config.log_cleaner_threads == 2


def test_the_log_cleaner_keeps_a_mebibyte_per_thread_and_some_io():
    with pytest.raises(dynamic_config.UpdateRefused, match="log.cleaner.dedupe.buffer.size 1048576: must leave"):
        dynamic_config.resolve(STATIC, {"log.cleaner.threads": "2", "log.cleaner.dedupe.buffer.size": "1048576"},
                               {}, cleaner_threads=1)
    with pytest.raises(dynamic_config.UpdateRefused, match="log.cleaner.io.max.bytes.per.second 0: must be"):
        dynamic_config.resolve(STATIC, {"log.cleaner.io.max.bytes.per.second": "0"}, {})
    resolved, _ = dynamic_config.resolve(STATIC, {"log.cleaner.io.max.bytes.per.second": "1e6",
                                                  "log.cleaner.backoff.ms": "50"}, {})
    assert (resolved.config.log_cleaner_io_max_bytes_per_second, resolved.config.log_cleaner_backoff_ms) == (1e6, 50)


def test_the_compaction_defaults_are_log_defaults_in_the_broker_config_s_own_form():
    resolved, warnings = dynamic_config.resolve(
        STATIC, {"log.cleanup.policy": "delete, compact", "log.cleaner.min.cleanable.ratio": "0.2"},
        {"log.cleaner.delete.retention.ms": "60000"})
    assert warnings == []
    log_config = resolved.config.default_log_config()
    assert (log_config.cleanup_policy, log_config.min_cleanable_dirty_ratio, log_config.delete_retention_ms) == (
        "compact,delete", 0.2, 60000)
    resolved, warnings = dynamic_config.resolve(STATIC, {"log.cleanup.policy": ""}, {})
    assert resolved.config.log_cleanup_policy == STATIC.log_cleanup_policy
    assert len(warnings) == 1 and warnings[0].startswith("cluster default: ignored: log.cleanup.policy: ")


# --- each change to its owner (Broker._update_broker_config with recorders for the owners)

class Recorder:
    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        return lambda *args: self.calls.append((name, *args))


def fake_broker():
    return SimpleNamespace(config=STATIC, dynamic=dynamic_config.static(STATIC), _stored_broker_config=None,
                           replica_manager=Recorder(), server=Recorder(), log_dir_mover=Recorder(),
                           log_cleaner=Recorder(), services=SimpleNamespace(dynamic=None))


def test_each_changed_setting_goes_to_its_owner_once():
    broker = fake_broker()
    Broker._update_broker_config(broker, {"log.retention.ms": "1000"}, {"max.connections": "5"})
    [(name, config)] = broker.replica_manager.calls
    assert name == "update_broker_defaults" and config.log_retention_ms == 1000
    assert broker.server.calls == [("update_limits", 5, STATIC.max_connections_per_ip, {})]
    assert broker.log_dir_mover.calls == []
    assert broker.services.dynamic is broker.dynamic       # what DescribeConfigs reports
    # The periodic refresh reads the same znodes again: nothing is applied again.
    Broker._update_broker_config(broker, {"log.retention.ms": "1000"}, {"max.connections": "5"})
    assert len(broker.replica_manager.calls) == 1 and len(broker.server.calls) == 1
    # Only the throttles change.
    Broker._update_broker_config(broker, {"log.retention.ms": "1000"},
                                 {"max.connections": "5", "leader.replication.throttled.rate": "100",
                                  "replica.alter.log.dirs.io.max.bytes.per.second": "200"})
    assert broker.replica_manager.calls[1:] == [("set_throttle_rates", 100, UNLIMITED)]
    assert broker.log_dir_mover.calls == [("set_rate", 200)]
    assert len(broker.server.calls) == 1
    assert broker.log_cleaner.calls == []
    # The log cleaner is reconfigured with its new settings, and then only when they change.
    Broker._update_broker_config(broker, {"log.retention.ms": "1000", "log.cleaner.threads": "2"},
                                 {"max.connections": "5", "leader.replication.throttled.rate": "100",
                                  "replica.alter.log.dirs.io.max.bytes.per.second": "200"})
    [(name, cleaner)] = broker.log_cleaner.calls
    assert name == "reconfigure" and (cleaner.threads, cleaner.backoff_ms) == (2, STATIC.log_cleaner_backoff_ms)
    Broker._update_broker_config(broker, {"log.retention.ms": "1000", "log.cleaner.threads": "5"}, {})
    assert len(broker.log_cleaner.calls) == 1 and broker.dynamic.config.log_cleaner_threads == 2   # refused: > 2 x 2


def test_a_refused_update_keeps_what_was_in_effect():
    broker = fake_broker()
    Broker._update_broker_config(broker, {"log.retention.ms": "1000"}, {})
    before = broker.dynamic
    Broker._update_broker_config(broker, {"log.retention.ms": "2000", "max.connections.per.ip": "0"}, {})
    assert broker.dynamic is before and len(broker.replica_manager.calls) == 1


# --- the owners

def batch():
    return build_batch([(b"k", b"v", None, NOW_MS)])


@pytest.fixture
def manager(tmp_path):
    _, manager = one_broker(f"{tmp_path}/a", lambda: NOW_MS, {"log.dir.media": f"{tmp_path}/a:ssd"})
    yield manager
    manager.shutdown()
    manager.log_manager.shutdown()


def lead(manager, topic):
    state = LeaderAndIsrState(topic=topic, partition=0, controller_epoch=1, leader=1, leader_epoch=0,
                                  isr=(1,), partition_epoch=0, replicas=(1, 2))
    manager.apply_leader_and_isr(1, 1, [state], {2: ("127.0.0.1", 1)})


def test_new_log_defaults_reach_hosted_logs_unless_the_topic_overrides_them(manager):
    manager.update_topic_configs({"plain": {}, "own": {"min.insync.replicas": "1", "retention.ms": "60000"}})
    lead(manager, "plain")
    lead(manager, "own")
    assert manager.append("plain", 0, batch(), required_acks=-1).error == ErrorCode.none

    manager.update_broker_defaults(dataclasses.replace(manager.config, min_insync_replicas=2, log_retention_ms=1000))
    assert manager.append("plain", 0, batch(), required_acks=-1).error == ErrorCode.not_enough_replicas
    assert manager.append("own", 0, batch(), required_acks=-1).error == ErrorCode.none
    manager.update_broker_defaults(dataclasses.replace(manager.config, message_max_bytes=10))
    assert manager.append("plain", 0, batch(), required_acks=1).error == ErrorCode.message_too_large
    assert manager.get("plain", 0).log.config.retention_ms == 1000
    own = manager.get("own", 0).log.config
    assert (own.min_insync_replicas, own.retention_ms, own.max_message_bytes) == (1, 60000, 10)
    # A partition created afterwards starts with the new defaults.
    lead(manager, "later")
    assert manager.get("later", 0).log.config.retention_ms == 1000


def test_a_log_loaded_at_start_up_takes_the_config_known_when_it_is_hosted(tmp_path):
    config = from_properties({"broker.id": "1", "zookeeper.connect": "z:1"})[0].default_log_config()
    logs = LogManager([LogDir(f"{tmp_path}/a", "ssd")], config, lambda: NOW_MS)
    logs.startup()
    logs.get_or_create_log("t", 0)
    logs.shutdown()
    logs = LogManager([LogDir(f"{tmp_path}/a", "ssd")], config, lambda: NOW_MS)
    logs.startup()          # loads t-0 with the server.properties defaults
    try:
        wanted = dataclasses.replace(config, retention_ms=1234)
        assert logs.get_or_create_log("t", 0, wanted).config == wanted
    finally:
        logs.shutdown()


class Silent:
    def dispatch(self, frame, client_ip=""):
        return None


def test_new_connection_limits_are_taken_by_the_network_thread_and_meet_new_connections():
    server = SocketServer("127.0.0.1", 0, Silent(), 100, 1 << 20)
    server.start()
    sockets = []
    try:
        sockets.append(socket.create_connection(("127.0.0.1", server.port), timeout=5))
        server.update_limits(100, 1, {"localhost": 3})
        deadline = time.monotonic() + 5
        while server.limits.max_connections_per_ip != 1:
            assert time.monotonic() < deadline, "the network thread did not take the new limits"
            time.sleep(0.01)
        # The host name was resolved (by the caller) to its addresses.
        assert server.limits.per_ip_overrides.get("127.0.0.1") == 3
        server.update_limits(100, 1, {})
        deadline = time.monotonic() + 5
        while server.limits.per_ip_overrides:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        # The connection held already stays; a second one from its IP is refused.
        sockets.append(socket.create_connection(("127.0.0.1", server.port), timeout=5))
        assert closed_by_peer(sockets[1], 5.0)
        assert not closed_by_peer(sockets[0], 0.3)
    finally:
        for sock in sockets:
            sock.close()
        server.stop()
