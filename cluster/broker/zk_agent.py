"""The broker's own ZooKeeper side: registration, topic and broker configs, ISR writes.

One thread (`zk-agent`) owns registration, config reads and topic
auto-creation (topic_auto_creation.py). ZooKeeper
watches and connection state changes never do work themselves: they set a
flag (a bounded queue of one, which also debounces bursts) and the agent
thread re-reads what changed. Leadership and metadata are not read here:
the controller sends them (LeaderAndIsr, UpdateMetadata).
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from typing import Callable

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError
from kazoo.protocol.states import KazooState

from kafkactl.cluster import fatal
from kafkactl.cluster.admin import topics as admin_topics
from kafkactl.cluster.admin.replica_assignment import BrokerInfo, assign_replicas
from kafkactl.cluster.broker.config import BrokerConfig, advertised_endpoint
from kafkactl.cluster.broker.isr_writer import PartitionStateConflict, PartitionStateStore
from kafkactl.cluster.broker.topic_auto_creation import TopicAutoCreator
from kafkactl.cluster.zk import codecs, layout
from kafkactl.cluster.zk import client as zk_client

log = logging.getLogger(__name__)

ZK_CALL_TIMEOUT_S = 10.0
REFRESH_FALLBACK_INTERVAL_S = 5.0   # a missed watch heals within this


class RegistrationError(RuntimeError):
    """The broker id is held by another live broker."""


class ZkAgent:
    def __init__(
        self,
        config: BrokerConfig,
        on_topic_configs: Callable[[dict[str, dict[str, str]]], None],
        on_broker_config: Callable[[dict[str, str], dict[str, str]], None] = lambda default, own: None,
        clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
        on_cluster_id: Callable[[str], None] = lambda cluster_id: None,
    ) -> None:
        self.config = config
        self.on_cluster_id = on_cluster_id
        self.on_topic_configs = on_topic_configs
        self.on_broker_config = on_broker_config
        self.clock_ms = clock_ms
        self.client = None
        self.zk: zk_client.BoundedZk | None = None
        self.broker_epoch = -1
        self.cluster_id: str | None = None
        self._dirty = threading.Event()
        # Metadata requests wish topics into existence; this thread creates them.
        self.auto_creator = TopicAutoCreator(self.auto_create_topic, self._dirty.set)
        self._session_lost = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    # --- lifecycle

    def start(self) -> None:
        cfg = self.config
        self.client = zk_client.connect(
            cfg.zookeeper_connect, cfg.zookeeper_session_timeout_ms, cfg.zookeeper_connection_timeout_ms
        )
        self.zk = zk_client.BoundedZk(self.client, ZK_CALL_TIMEOUT_S)
        self.client.add_listener(self._on_connection_state)
        self._ensure_persistent_paths()
        self.cluster_id = self._ensure_cluster_id()
        # Before registering: from then on the controller's UpdateMetadata may
        # come, and must find the cluster id in place, not be replaced by it.
        self.on_cluster_id(self.cluster_id)
        self.refresh()  # topic configs known before any partition is created
        self._register()
        self._thread = threading.Thread(target=self._run, name="zk-agent", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Deregister (deleting our ephemeral node) and close the session."""
        self._stopping.set()
        self._dirty.set()
        if self._thread:
            self._thread.join(timeout=ZK_CALL_TIMEOUT_S)
        if self.client is not None:
            try:
                zk_client.wait(self.client.delete_async(layout.broker(self.config.broker_id)), 2.0)
            except Exception as error:  # the session may already be gone; closing removes it anyway
                fatal.halt_if_fatal(error, "deregistration")
                log.info("deregistration: %s", error)
            zk_client.close(self.client)

    # --- watch and connection callbacks: only flag work for the agent thread

    def _on_connection_state(self, state: str) -> None:
        if state == KazooState.LOST:
            self._session_lost.set()
        self._dirty.set()

    def _on_watch(self, _event=None) -> None:
        self._dirty.set()

    # --- the agent thread

    def _run(self) -> None:
        while not self._stopping.is_set():
            self._dirty.wait(timeout=REFRESH_FALLBACK_INTERVAL_S)
            self._dirty.clear()
            if self._stopping.is_set():
                return
            try:
                if self._session_lost.is_set() and self.client.connected:
                    self._session_lost.clear()
                    log.warning("ZooKeeper session expired: registering again")
                    self._register()
                if self.client.connected:
                    self.auto_creator.create_pending()
                    self.refresh()
            except Exception as error:
                fatal.halt_if_fatal(error, "metadata refresh")
                log.exception("metadata refresh failed; retrying")
                time.sleep(0.5)
                self._dirty.set()

    # --- start-up writes

    def _ensure_persistent_paths(self) -> None:
        for path in layout.PERSISTENT_PATHS:
            self.zk.ensure_path(path)
        if self.zk.exists(layout.FEATURE) is None:
            try:
                self.zk.create(layout.FEATURE, codecs.encode_feature(), makepath=True)
            except NodeExistsError:
                pass

    def _ensure_cluster_id(self) -> str:
        try:
            data, _ = self.zk.get(layout.CLUSTER_ID)
            return codecs.decode_cluster_id(data)
        except NoNodeError:
            pass
        candidate = codecs.new_topic_id()  # the same 22-character base64url uuid
        try:
            self.zk.create(layout.CLUSTER_ID, codecs.encode_cluster_id(candidate), makepath=True)
            return candidate
        except NodeExistsError:  # another broker won the race
            data, _ = self.zk.get(layout.CLUSTER_ID)
            return codecs.decode_cluster_id(data)

    def _register(self) -> None:
        """Create /brokers/ids/<id>; wait out a previous incarnation's node."""
        cfg = self.config
        endpoint = advertised_endpoint(cfg)
        registration = codecs.BrokerRegistration(
            broker_id=cfg.broker_id,
            host=endpoint.host,
            port=endpoint.port,
            endpoints=tuple(e.uri() for e in _resolved(cfg)),
            rack=cfg.broker_rack,
            timestamp_ms=self.clock_ms(),
        )
        path = layout.broker(cfg.broker_id)
        # A killed predecessor's ephemeral node lives until its session times out.
        deadline = time.monotonic() + cfg.zookeeper_session_timeout_ms * 1.5 / 1000
        while True:
            try:
                self.zk.create(path, codecs.encode_broker(registration), ephemeral=True)
                break
            except NodeExistsError:
                stat = self.zk.exists(path)
                if stat is not None and stat.ephemeralOwner == self.client.client_id[0]:
                    break
                if self._remove_own_stale_registration(path, registration):
                    continue
                if time.monotonic() > deadline:
                    raise RegistrationError(
                        f"broker.id {cfg.broker_id} is registered by another live broker"
                    ) from None
                log.info("waiting for the previous registration of broker %s to expire", cfg.broker_id)
                time.sleep(0.5)
        self.broker_epoch = self.zk.exists(path).czxid
        log.info("registered broker %s (broker epoch %s)", cfg.broker_id, self.broker_epoch)

    def _remove_own_stale_registration(self, path: str, registration) -> bool:
        """Delete a leftover registration of this broker's previous process.

        The node is provably stale when it advertises exactly our host and
        port: this process holds that listening port now, so no other live
        broker can be serving there. Deleting it (conditionally on its
        version) saves waiting out the dead session's timeout after a crash.
        """
        try:
            data, stat = self.zk.get(path)
            previous = codecs.decode_broker(self.config.broker_id, data)
        except (NoNodeError, codecs.ZnodeFormatError):
            return False
        if (previous.host, previous.port) != (registration.host, registration.port):
            return False
        try:
            self.zk.delete(path, version=stat.version)
            log.info("removed the stale registration of a previous incarnation of broker %s",
                     self.config.broker_id)
        except (NoNodeError, BadVersionError):
            pass
        return True

    # --- reading the cluster

    def refresh(self) -> None:
        """Topic and dynamic broker configs: the controller decides leadership
        and sends metadata, so configs are all a broker reads from ZooKeeper itself."""
        self.on_topic_configs(self._read_topic_configs())
        self.on_broker_config(*self._read_broker_config())

    def _get_all(self, paths: list[str], watch: bool) -> dict[str, tuple[bytes, object] | None]:
        callback = self._on_watch if watch else None
        pending = {p: self.client.get_async(p, watch=callback) for p in paths}
        results = {}
        for path, result in pending.items():
            try:
                results[path] = zk_client.wait(result, ZK_CALL_TIMEOUT_S)
            except NoNodeError:
                results[path] = None
        return results

    def _children(self, path: str) -> list[str]:
        try:
            return zk_client.wait(self.client.get_children_async(path, watch=self._on_watch), ZK_CALL_TIMEOUT_S)
        except NoNodeError:
            return []

    def _read_broker_config(self) -> tuple[dict[str, str], dict[str, str]]:
        """Dynamic broker config: the cluster-wide defaults and this broker's own
        (kept apart: each level accepts different keys, dynamic_config.py)."""
        paths = [layout.entity_config("brokers", "<default>"),
                 layout.entity_config("brokers", str(self.config.broker_id))]
        nodes = self._get_all(paths, watch=False)
        levels: list[dict[str, str]] = []
        for path in paths:
            config: dict[str, str] = {}
            if nodes[path] is not None:
                try:
                    config = codecs.decode_entity_config(path, nodes[path][0])
                except codecs.ZnodeFormatError as error:
                    log.warning("ignoring broker config: %s", error)
            levels.append(config)
        return levels[0], levels[1]

    def _read_topic_configs(self) -> dict[str, dict[str, str]]:
        topics = self._children(layout.BROKER_TOPICS)
        self._children(layout.CONFIG_CHANGES)  # re-arms the watch: a change re-reads the configs
        nodes = self._get_all([layout.topic_config(t) for t in topics], watch=False)
        configs = {}
        for topic in topics:
            node = nodes[layout.topic_config(topic)]
            try:
                configs[topic] = codecs.decode_entity_config(layout.topic_config(topic), node[0]) if node else {}
            except codecs.ZnodeFormatError as error:
                log.warning("ignoring topic config: %s", error)
        return configs

    # --- topic creation (auto-create)

    def auto_create_topic(self, topic: str, partitions: int, replication_factor: int,
                          config: dict[str, str] | None = None) -> bool:
        """Kafka's assignment over the brokers registered now; AssignmentError if impossible."""
        brokers = [BrokerInfo(b.broker_id, b.rack)
                   for b in admin_topics.live_brokers(self.client, ZK_CALL_TIMEOUT_S)]
        return self.create_topic(topic, assign_replicas(brokers, partitions, replication_factor), config or {})

    def create_topic(self, topic: str, assignment: dict[int, list[int]], config: dict[str, str]) -> bool:
        """Auto-creation, the Kafka way; False if the topic exists already."""
        try:
            admin_topics.create_topic(self.client, topic, assignment, config, ZK_CALL_TIMEOUT_S)
        except admin_topics.TopicExistsError:
            return False
        self._dirty.set()
        return True

    # --- the ISR writes of partition leaders (called from request threads)

    def partition_state_store(self) -> PartitionStateStore:
        return PartitionStateStore(
            write_partition_state=self._write_partition_state,
            read_partition_state=self._read_partition_state,
            notify_isr_change=self._notify_isr_change,
            write_partition_states=self._write_partition_states,
            notify_isr_changes=self._notify_isr_changes,
        )

    def _write_partition_state(self, topic: str, partition: int, state: codecs.PartitionState,
                               expected_zk_version: int) -> int:
        [result] = self._write_partition_states([(topic, partition, state, expected_zk_version)])
        if isinstance(result, Exception):
            raise result
        return result

    def _write_partition_states(self, writes: list[tuple[str, int, codecs.PartitionState, int]]) -> list:
        """Leaders' ISR changes, each conditional on the znode's version and on
        the znode still naming this leader at its epoch: a topic deleted and
        created again restarts its versions at 0, so the version alone could
        match a state this (stale) leader never saw. All reads are sent at
        once, then all writes: one result per write, the new version or the
        exception (PartitionStateConflict when it lost)."""
        results: list = [None] * len(writes)
        reads = [self.client.get_async(layout.partition_state(topic, partition))
                 for topic, partition, _, _ in writes]
        sets = []
        for i, ((topic, partition, state, expected), read) in enumerate(zip(writes, reads)):
            path = layout.partition_state(topic, partition)
            try:
                data, stat = zk_client.wait(read, ZK_CALL_TIMEOUT_S)
                current = codecs.decode_partition_state(path, data, stat.version)
            except Exception as error:
                fatal.halt_if_fatal(error, f"reading {path}")
                results[i] = _conflict_or(error, path)
                continue
            if (stat.version, current.leader, current.leader_epoch) != (expected, state.leader, state.leader_epoch):
                results[i] = PartitionStateConflict(f"{path}: leader {current.leader} at epoch "
                                                    f"{current.leader_epoch}, version {stat.version}")
                continue
            sets.append((i, path, self.client.set_async(path, codecs.encode_partition_state(state), expected)))
        for i, path, future in sets:
            try:
                results[i] = zk_client.wait(future, ZK_CALL_TIMEOUT_S).version
            except Exception as error:
                fatal.halt_if_fatal(error, f"writing {path}")
                results[i] = _conflict_or(error, path)
        return results

    def _read_partition_state(self, topic: str, partition: int) -> codecs.PartitionState | None:
        path = layout.partition_state(topic, partition)
        try:
            data, stat = self.zk.get(path)
        except NoNodeError:
            return None
        return codecs.decode_partition_state(path, data, stat.version)

    def _notify_isr_change(self, topic: str, partition: int) -> None:
        self._notify_isr_changes([(topic, partition)])

    def _notify_isr_changes(self, partitions: list[tuple[str, int]]) -> None:
        # One notification per batch of changes: the controller reads and
        # deletes them. Kafka batched them for seconds; prompt metadata
        # matters more here.
        self.zk.create(layout.ISR_CHANGE_PREFIX, codecs.encode_partition_list(partitions), sequential=True)

    # --- log dir failures (the log dir failure handler's thread)

    def propagate_log_dir_event(self) -> None:
        """Tell the controller a log dir of this broker failed (Kafka's
        propagateLogDirEvent): a persistent sequential notification it reads and deletes."""
        if self.zk is None:
            raise zk_client.ZooKeeperUnavailable("not connected to ZooKeeper yet")
        self.zk.create(layout.LOG_DIR_EVENT_PREFIX, codecs.encode_log_dir_event(self.config.broker_id),
                       sequential=True)

    # --- producer id blocks

    def allocate_producer_id_block(self) -> codecs.ProducerIdBlock:
        for _ in range(10):
            data, stat = self.zk.get(layout.LATEST_PRODUCER_ID_BLOCK)
            current = codecs.decode_producer_id_block(data) if data else None
            block = codecs.next_producer_id_block(current, self.config.broker_id)
            try:
                self.zk.set(
                    layout.LATEST_PRODUCER_ID_BLOCK,
                    codecs.encode_producer_id_block(block),
                    version=stat.version,
                )
                return block
            except BadVersionError:
                time.sleep(secrets.randbelow(50) / 1000)
        raise zk_client.ZooKeeperUnavailable("could not allocate a producer id block after 10 tries")


def _conflict_or(error: Exception, path: str) -> Exception:
    """A lost conditional write as PartitionStateConflict; anything else as it is."""
    if isinstance(error, (BadVersionError, NoNodeError)):
        return PartitionStateConflict(f"{path}: {type(error).__name__}")
    return error


def _resolved(config: BrokerConfig):
    endpoint = advertised_endpoint(config)
    return [endpoint] + [e for e in config.advertised_listeners if e.listener_name != endpoint.listener_name]
