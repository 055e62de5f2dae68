"""The broker's ZooKeeper side: registration and the metadata it reads.

One thread (`zk-agent`) owns all of it. ZooKeeper watches and connection
state changes never do work themselves: they set a flag (a bounded queue of
one, which also debounces bursts) and the agent thread re-reads what changed.

Until the controller exists (issue 3), the agent also carries out the
interim leadership rule: the first replica of a partition leads it when the
state znode is absent or names a broker that is not alive.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from typing import Callable

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError
from kazoo.protocol.states import KazooState

from kafkactl.cluster.admin import topics as admin_topics
from kafkactl.cluster.broker.config import BrokerConfig, advertised_endpoint
from kafkactl.cluster.broker.leadership import LeadershipClaim, interim_leadership_claims
from kafkactl.cluster.broker.metadata import MetadataSnapshot, TopicMetadata
from kafkactl.cluster.broker.replica_manager import PartitionStateConflict, PartitionStateStore
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
        on_metadata: Callable[[MetadataSnapshot, set[tuple[str, int]]], None],
        clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    ) -> None:
        self.config = config
        self.on_metadata = on_metadata
        self.clock_ms = clock_ms
        self.client = None
        self.zk: zk_client.BoundedZk | None = None
        self.broker_epoch = -1
        self.cluster_id: str | None = None
        self._dirty = threading.Event()
        self._session_lost = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._led_this_incarnation: set[tuple[str, int]] = set()

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
        # Host our partitions' logs before announcing ourselves; claim
        # leadership only once registered (a leftover registration of our
        # previous process must not count as being alive).
        self.refresh(claim_leadership=False)
        self._register()
        self.refresh()
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
                    self.refresh()
            except Exception:
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
        self._led_this_incarnation.clear()
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

    def refresh(self, claim_leadership: bool = True) -> None:
        snapshot = self._read_snapshot()
        self.on_metadata(snapshot, set(self._led_this_incarnation))
        if not claim_leadership:
            return
        claims = interim_leadership_claims(
            snapshot, self.config.broker_id, self._led_this_incarnation
        )
        if claims:
            self._write_claims(claims, snapshot.controller_epoch)
            self.on_metadata(self._read_snapshot(), set(self._led_this_incarnation))

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

    def _read_snapshot(self) -> MetadataSnapshot:
        broker_ids = [int(b) for b in self._children(layout.BROKER_IDS) if b.isdigit()]
        topic_names = self._children(layout.BROKER_TOPICS)
        deleting = frozenset(self._children(layout.DELETE_TOPICS))
        self._children(layout.CONFIG_CHANGES)  # a config change re-reads topic configs
        brokers = self._read_brokers(broker_ids)
        assignments = self._read_assignments(topic_names)
        topics = self._read_partition_states(assignments)
        controller = self._get_all([layout.CONTROLLER, layout.CONTROLLER_EPOCH], watch=True)
        controller_id = codecs.decode_controller(controller[layout.CONTROLLER][0]) if controller[layout.CONTROLLER] else -1
        epoch_node = controller[layout.CONTROLLER_EPOCH]
        controller_epoch = codecs.decode_controller_epoch(epoch_node[0]) if epoch_node else 0
        return MetadataSnapshot(
            cluster_id=self.cluster_id,
            controller_id=controller_id,
            controller_epoch=controller_epoch,
            brokers=brokers,
            topics=topics,
            deleting_topics=deleting,
        )

    def _read_brokers(self, broker_ids: list[int]) -> dict[int, codecs.BrokerRegistration]:
        nodes = self._get_all([layout.broker(b) for b in broker_ids], watch=False)
        brokers = {}
        for broker_id in broker_ids:
            node = nodes[layout.broker(broker_id)]
            if node is None:
                continue
            try:
                brokers[broker_id] = codecs.decode_broker(broker_id, node[0], node[1].czxid)
            except codecs.ZnodeFormatError as error:
                log.warning("ignoring broker registration: %s", error)
        return brokers

    def _read_assignments(self, topic_names: list[str]) -> dict[str, tuple[codecs.TopicAssignment, dict]]:
        topic_nodes = self._get_all([layout.topic(t) for t in topic_names], watch=True)
        config_nodes = self._get_all([layout.topic_config(t) for t in topic_names], watch=False)
        assignments = {}
        for topic in topic_names:
            node = topic_nodes[layout.topic(topic)]
            if node is None:
                continue
            try:
                assignment = codecs.decode_topic(topic, node[0])
            except codecs.ZnodeFormatError as error:
                log.warning("ignoring topic: %s", error)
                continue
            config_node = config_nodes[layout.topic_config(topic)]
            config = {}
            if config_node is not None:
                try:
                    config = codecs.decode_entity_config(layout.topic_config(topic), config_node[0])
                except codecs.ZnodeFormatError as error:
                    log.warning("ignoring topic config: %s", error)
            assignments[topic] = (assignment, config)
        return assignments

    def _read_partition_states(self, assignments) -> dict[str, TopicMetadata]:
        paths = [
            layout.partition_state(topic, p)
            for topic, (assignment, _) in assignments.items()
            for p in assignment.partitions
        ]
        nodes = self._get_all(paths, watch=True)
        topics = {}
        for topic, (assignment, config) in assignments.items():
            states = {}
            for p in assignment.partitions:
                path = layout.partition_state(topic, p)
                node = nodes[path]
                if node is None:
                    continue
                try:
                    states[p] = codecs.decode_partition_state(path, node[0], node[1].version)
                except codecs.ZnodeFormatError as error:
                    log.warning("ignoring partition state: %s", error)
            topics[topic] = TopicMetadata(topic, assignment, states, config)
        return topics

    # --- interim leadership writes

    def _write_claims(self, claims: list[LeadershipClaim], controller_epoch: int) -> None:
        for claim in claims:
            path = layout.partition_state(claim.topic, claim.partition)
            data = codecs.encode_partition_state(claim.state)
            try:
                if claim.expected_zk_version is None:
                    self.zk.ensure_path(layout.partition(claim.topic, claim.partition))
                    self.zk.create(path, data)
                else:
                    self.zk.set(path, data, version=claim.expected_zk_version)
                self._led_this_incarnation.add((claim.topic, claim.partition))
                log.info("leading %s-%s at leader epoch %s", claim.topic, claim.partition, claim.state.leader_epoch)
            except (NodeExistsError, BadVersionError):
                log.info("lost the race to lead %s-%s; re-reading", claim.topic, claim.partition)
                self._dirty.set()

    # --- topic creation (auto-create)

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
        )

    def _write_partition_state(self, topic: str, partition: int, state: codecs.PartitionState,
                               expected_zk_version: int) -> int:
        path = layout.partition_state(topic, partition)
        try:
            return self.zk.set(path, codecs.encode_partition_state(state), expected_zk_version).version
        except (BadVersionError, NoNodeError) as error:
            raise PartitionStateConflict(f"{path}: {type(error).__name__}") from None

    def _read_partition_state(self, topic: str, partition: int) -> codecs.PartitionState | None:
        path = layout.partition_state(topic, partition)
        try:
            data, stat = self.zk.get(path)
        except NoNodeError:
            return None
        return codecs.decode_partition_state(path, data, stat.version)

    def _notify_isr_change(self, topic: str, partition: int) -> None:
        # One notification per change: the controller reads and deletes them.
        # Kafka batched them for seconds; prompt metadata matters more here.
        self.zk.create(layout.ISR_CHANGE_PREFIX, codecs.encode_partition_list([(topic, partition)]),
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


def _resolved(config: BrokerConfig):
    endpoint = advertised_endpoint(config)
    return [endpoint] + [e for e in config.advertised_listeners if e.listener_name != endpoint.listener_name]
