"""One broker process: wiring, start-up order, periodic work, shutdown.

Start-up: logs are loaded and recovered before the broker registers in
ZooKeeper, so it never advertises partitions it cannot serve. Shutdown
(SIGTERM): stop taking requests, deregister, flush and checkpoint, then
write the clean-shutdown marker (done by the log manager).
"""

from __future__ import annotations

import gc
import logging
import socket
import threading
import time
from collections.abc import Callable

from kafkactl.cluster import fatal
from kafkactl.cluster.broker import dynamic_config
from kafkactl.cluster.broker.admin_work import AdminWork
from kafkactl.cluster.broker.config import BrokerConfig
from kafkactl.cluster.broker.controlled_shutdown import controlled_shutdown
from kafkactl.cluster.broker.dispatcher import Dispatcher
from kafkactl.cluster.broker.fetch_session import FetchSessionCache
from kafkactl.cluster.broker.handlers.init_producer_id import ProducerIdManager
from kafkactl.cluster.broker.handlers.services import BrokerServices
from kafkactl.cluster.broker.log_dir_failure import LogDirFailureHandler
from kafkactl.cluster.broker.log_dir_mover import LogDirMover
from kafkactl.cluster.broker.metadata import MetadataCache, MetadataSnapshot
from kafkactl.cluster.broker.metrics import TICK_INTERVAL_S, BrokerMetrics, MetricsServer, render_page
from kafkactl.cluster.broker.network import SocketServer
from kafkactl.cluster.broker.replica_manager import ReplicaManager
from kafkactl.cluster.broker.zk_agent import ZkAgent
from kafkactl.cluster.controller.context import ControllerConfig
from kafkactl.cluster.controller.controller import Controller
from kafkactl.cluster.coordinator.coordinator import GroupCoordinator
from kafkactl.cluster.log.cleaner import CleanerConfig, LogCleaner
from kafkactl.cluster.log.manager import LogDir, LogManager

log = logging.getLogger(__name__)

# How long a (re)started broker holds clients' Metadata answers for the
# controller's first UpdateMetadata (cluster/broker/metadata.py): the
# controller sends it within a second of the broker's registration, and
# clients' Metadata timeouts are tens of seconds.
METADATA_HOLD_S = 5.0

# Kafka's defaults: replica.high.watermark.checkpoint.interval.ms,
# log.flush.offset.checkpoint.interval.ms, log.flush.start.offset.checkpoint.interval.ms.
HIGH_WATERMARK_CHECKPOINT_INTERVAL_MS = 5000
RECOVERY_POINT_CHECKPOINT_INTERVAL_MS = 60000
LOG_START_OFFSET_CHECKPOINT_INTERVAL_MS = 60000
HOUSEKEEPING_TICK_S = 1.0


class BrokerHosts:
    """The addresses of the registered brokers' hosts, for the network layer's
    per-IP rule (connections from them beyond `max.connections.per.ip` are
    taken on probation, see network/__init__.py). This broker's own host is
    one: on a shared host the other brokers connect from it. Host names are
    resolved by `refresh` on the housekeeping thread when the metadata
    changed, never on the network thread, which only reads the last set."""

    def __init__(self, config: BrokerConfig, metadata: MetadataCache) -> None:
        self._metadata = metadata
        own = {e.host for e in (*config.listeners, *config.advertised_listeners)}
        if "" in own or "0.0.0.0" in own:
            own.add(socket.gethostname())
        self._own = _addresses(own)
        self._snapshot = None
        self._hosts = self._own

    def __call__(self) -> frozenset[str]:
        return self._hosts

    def refresh(self, _now_ms: int = 0) -> None:
        snapshot = self._metadata.snapshot
        if snapshot is not self._snapshot:
            self._snapshot = snapshot
            self._hosts = self._own | _addresses({b.host for b in snapshot.brokers.values()})


def _addresses(hosts) -> frozenset[str]:
    addresses = set()
    for host in hosts:
        if host in ("", "0.0.0.0", "::"):
            continue
        try:
            addresses.update(info[4][0] for info in socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP))
        except OSError:
            log.warning("cannot resolve broker host %s", host)
    return frozenset(addresses)


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


class Broker:
    def __init__(self, config: BrokerConfig, clock_ms=wall_clock_ms) -> None:
        self.config = config
        self.clock_ms = clock_ms
        self.log_manager = LogManager(self._log_dirs(), config.default_log_config(), clock_ms)
        for log_dir in self.log_manager.log_dirs:
            log.info("log dir %s: %s", log_dir.path, log_dir.media)
        self.metadata = MetadataCache(hold_until_controller_update_s=METADATA_HOLD_S)
        self.metrics = BrokerMetrics()
        self.replica_manager = ReplicaManager(config, self.log_manager, clock_ms)
        self.log_dir_mover = LogDirMover(self.replica_manager, self.log_manager,
                                         config.replica_alter_log_dirs_io_max_bytes_per_second)
        self.log_cleaner = LogCleaner(self.log_manager, cleaner_config(config), self._high_watermark_of, clock_ms)
        self.zk_agent = ZkAgent(config, self.replica_manager.update_topic_configs, clock_ms=clock_ms,
                                on_broker_config=self._update_broker_config,
                                on_cluster_id=lambda cluster_id: self.metadata.replace(
                                    MetadataSnapshot(cluster_id=cluster_id)))
        self.replica_manager.set_partition_state_store(self.zk_agent.partition_state_store())
        self.log_dir_failures = LogDirFailureHandler(config.broker_id, self.log_manager.failures,
                                                     self.replica_manager, self.zk_agent.propagate_log_dir_event)
        self.services = BrokerServices(
            config=config,
            metadata=self.metadata,
            replica_manager=self.replica_manager,
            zk_agent=self.zk_agent,
            producer_ids=ProducerIdManager(self.zk_agent.allocate_producer_id_block),
            clock_ms=clock_ms,
            metrics=self.metrics,
            fetch_sessions=FetchSessionCache(config.max_incremental_fetch_session_cache_slots,
                                             config.min_incremental_fetch_session_eviction_ms, clock_ms,
                                             changes=self.replica_manager.changes),
        )
        # Listens for __consumer_offsets leadership from its start (before the
        # first LeaderAndIsr can arrive), so no partition is missed.
        self.group_coordinator = GroupCoordinator(config, self.replica_manager, self.metadata, clock_ms)
        self.services.group_coordinator = self.group_coordinator
        self.admin_work = AdminWork(lambda: self.zk_agent.zk)
        self.services.admin_work = self.admin_work
        listener = config.listeners[0]
        self.broker_hosts = BrokerHosts(config, self.metadata)
        self.server = SocketServer(
            listener.host, listener.port, Dispatcher(self.services),
            config.max_connections, config.socket_request_max_bytes,
            max_connections_per_ip=config.max_connections_per_ip,
            per_ip_overrides=config.max_connections_per_ip_overrides,
            connections_max_idle_ms=config.connections_max_idle_ms,
            queued_max_request_bytes=config.queued_max_request_bytes,
            broker_hosts=self.broker_hosts,
        )
        # The dynamic broker config in effect, and the znodes' contents it came from
        # (the zk-agent re-reads them on every refresh; unchanged ones are not applied again).
        self.dynamic = dynamic_config.static(config)
        self._stored_broker_config: tuple[dict, dict] | None = None
        self.metrics_server: MetricsServer | None = None
        self.controller: Controller | None = None
        self._stopping = threading.Event()
        self._housekeeping = threading.Thread(target=self._housekeeping_loop, name="housekeeping", daemon=True)

    def _log_dirs(self) -> list[LogDir]:
        dirs = []
        for path in self.config.log_dirs:
            dirs.append(LogDir(path, self.config.media_of(path)))  # None: detected
        return dirs

    def start(self) -> None:
        self.log_manager.startup()
        # A broker of 10,000 partitions holds millions of long-lived objects
        # (logs, segments, indexes, partitions). A full collection walks them
        # all: ~100-150 ms, and a 10,000-partition LeaderAndIsr allocates enough
        # to trigger one in the middle of a failover. Frozen objects are left
        # out of collections; they are freed as usual when no longer referenced
        # (only reference cycles among them would stay). Frozen again after
        # every LeaderAndIsr that created partitions or moved many roles: the
        # next failover then finds the follower and partition states frozen.
        gc.freeze()
        self.replica_manager.after_large_change = gc.freeze
        self.group_coordinator.start()
        self.admin_work.start()
        self.server.start()
        self._start_metrics_server()
        self.zk_agent.start()
        # After the zk-agent: its notification needs the session. A dir that
        # failed before waits in the channel's queue until now.
        self.log_dir_failures.start()
        self.controller = Controller(self.config.broker_id, self.zk_agent.client, controller_config(self.config),
                                     leader_imbalance_check_interval_s=self.config.leader_imbalance_check_interval_seconds)
        self.services.controller = self.controller
        self.controller.start()
        self._housekeeping.start()
        self.log_dir_mover.start()
        self.log_cleaner.start()
        log.info("broker %s serving on port %s", self.config.broker_id, self.server.port)

    def _start_metrics_server(self) -> None:
        """`metrics.port` -1: none; 0: any free port (logged, and kept in .metrics_server.port)."""
        if self.config.metrics_port < 0:
            return
        host = self.config.listeners[0].host
        self.metrics_server = MetricsServer(host, self.config.metrics_port, self.render_metrics)
        self.metrics_server.start()
        log.info("broker %s metrics on http://%s:%s/metrics", self.config.broker_id,
                 self.metrics_server.host, self.metrics_server.port)

    def render_metrics(self) -> str:
        """The /metrics page (the HTTP server's threads call this)."""
        log_manager = self.log_manager
        return render_page(self.config.broker_id, self.config.broker_rack,
                           list(self.replica_manager.partitions.values()), log_manager.log_dirs,
                           log_manager.dir_of, self.metrics.partitions, self.metrics.requests)

    def shutdown(self) -> None:
        log.info("broker %s shutting down", self.config.broker_id)
        if self.config.controlled_shutdown_enable:
            controlled_shutdown(self.config, self.metadata, self.zk_agent.broker_epoch)
        self._stopping.set()
        self.server.stop()
        self.group_coordinator.stop()
        self.admin_work.stop()
        # No fetch proposes an ISR change any more; ZooKeeper is closed below.
        self.replica_manager.isr_writer.stop()
        if self.metrics_server is not None:
            self.metrics_server.stop()
        if self.controller is not None:
            self.controller.stop()
        self.log_dir_failures.stop()
        self.zk_agent.stop()
        self._housekeeping.join(timeout=5)
        self.log_cleaner.stop()          # before the logs it cleans close
        self.log_dir_mover.stop()        # before the logs it copies close
        self.replica_manager.shutdown()  # fetchers stop before their logs close
        self.log_manager.write_high_watermarks(self.replica_manager.high_watermarks())
        self.log_manager.shutdown()
        log.info("broker %s stopped cleanly", self.config.broker_id)

    def _high_watermark_of(self, topic: str, index: int) -> int | None:
        """What the cleaner may clean up to: the hosted partition's high watermark (leader or follower)."""
        partition = self.replica_manager.partitions.get((topic, index))
        return None if partition is None else partition.high_watermark

    def _update_broker_config(self, default: dict[str, str], own: dict[str, str]) -> None:
        """Dynamic broker config (zk-agent thread, after a config change is
        announced): each changed setting goes to the thread that owns it. Log
        defaults are applied here, on the zk-agent thread that applies topic
        configs too; connection limits are queued for the network thread;
        throttle rates are single values the fetch paths read."""
        if (default, own) == self._stored_broker_config:
            return
        self._stored_broker_config = (default, own)
        try:
            resolved, warnings = dynamic_config.resolve(self.config, default, own,
                                                        self.dynamic.config.log_cleaner_threads)
        except dynamic_config.UpdateRefused as error:
            log.error("dynamic broker config not applied, the previous one stays: %s", error)
            return
        for warning in warnings:
            log.warning("dynamic broker config, %s", warning)
        before, self.dynamic = self.dynamic, resolved
        self.services.dynamic = resolved      # what DescribeConfigs reports
        changed = resolved.changed_attributes(before)
        config = resolved.config
        if changed & dynamic_config.LOG_ATTRIBUTES:
            self.replica_manager.update_broker_defaults(config)
        if changed & dynamic_config.CONNECTION_ATTRIBUTES:
            self.server.update_limits(config.max_connections, config.max_connections_per_ip,
                                      config.max_connections_per_ip_overrides)
        if (resolved.leader_rate, resolved.follower_rate) != (before.leader_rate, before.follower_rate):
            self.replica_manager.set_throttle_rates(resolved.leader_rate, resolved.follower_rate)
        if changed & dynamic_config.CLEANER_ATTRIBUTES:
            self.log_cleaner.reconfigure(cleaner_config(config))
        if "replica_alter_log_dirs_io_max_bytes_per_second" in changed:
            self.log_dir_mover.set_rate(config.replica_alter_log_dirs_io_max_bytes_per_second)
        if resolved.sources != before.sources:
            log.info("dynamic broker config in effect: %s", ", ".join(
                f"{key}={value} ({source})" for key, (value, source) in resolved.sources.items()) or "none")

    def _periodic_tasks(self) -> list[tuple[str, int, Callable[[int], None]]]:
        """(name, interval ms, task) run by the housekeeping thread. Each one
        visits every partition, so none runs more often than Kafka runs it:
        with 10,000 partitions a visit costs tens of milliseconds of the CPU
        that replication and the controller need."""
        metrics = []
        if self.config.metrics_port >= 0:   # rates only matter to someone scraping them
            metrics.append(("metrics-rates", int(TICK_INTERVAL_S * 1000),
                            lambda _: self.metrics.partitions.tick(self.replica_manager.partitions.keys())))
        return metrics + [
            # Kafka checks the ISR every replica.lag.time.max.ms / 2.
            ("isr-expiration", max(HOUSEKEEPING_TICK_S * 1000, self.config.replica_lag_time_max_ms // 2),
             self.replica_manager.maybe_shrink_isr),
            ("flush", 0, lambda now_ms: self.log_manager.flush_due(now_ms)),
            ("broker-hosts", 0, self.broker_hosts.refresh),
            ("purge-deleted", 0, self.log_manager.purge_deleted),
            ("high-watermark-checkpoint", HIGH_WATERMARK_CHECKPOINT_INTERVAL_MS,
             lambda _: self.log_manager.write_high_watermarks(self.replica_manager.high_watermarks())),
            ("recovery-point-checkpoint", RECOVERY_POINT_CHECKPOINT_INTERVAL_MS,
             lambda _: self.log_manager.checkpoint_recovery_points()),
            ("log-start-offset-checkpoint", LOG_START_OFFSET_CHECKPOINT_INTERVAL_MS,
             lambda _: self.log_manager.checkpoint_log_start_offsets()),
            ("retention", self.config.log_retention_check_interval_ms, self._run_retention),
        ]

    def _run_retention(self, _now_ms: int) -> None:
        deleted = self.log_manager.run_retention()
        if deleted:
            self.replica_manager.note_log_start_offsets_moved()   # followers and consumers learn the new start
            log.info("retention deleted %s segments", deleted)

    def _housekeeping_loop(self) -> None:
        tasks = self._periodic_tasks()
        last_run_ms = {name: self.clock_ms() for name, _, _ in tasks}
        while not self._stopping.wait(HOUSEKEEPING_TICK_S):
            for name, interval_ms, task in tasks:
                now_ms = self.clock_ms()
                if now_ms - last_run_ms[name] < interval_ms:
                    continue
                last_run_ms[name] = now_ms
                try:
                    task(now_ms)
                except Exception as error:
                    fatal.halt_if_fatal(error, f"housekeeping task {name}")
                    log.exception("housekeeping task %s failed; will retry", name)


def cleaner_config(config: BrokerConfig) -> CleanerConfig:
    return CleanerConfig(
        enable=config.log_cleaner_enable,
        threads=config.log_cleaner_threads,
        backoff_ms=config.log_cleaner_backoff_ms,
        dedupe_buffer_size=config.log_cleaner_dedupe_buffer_size,
        io_max_bytes_per_second=config.log_cleaner_io_max_bytes_per_second,
    )


def controller_config(config: BrokerConfig) -> ControllerConfig:
    return ControllerConfig(
        unclean_leader_election_enable=config.unclean_leader_election_enable,
        auto_leader_rebalance_enable=config.auto_leader_rebalance_enable,
        leader_imbalance_per_broker_percentage=config.leader_imbalance_per_broker_percentage,
        delete_topic_enable=config.delete_topic_enable,
    )
