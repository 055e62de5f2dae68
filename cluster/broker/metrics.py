"""Broker metrics: counters on the data path, meter rates, and `GET /metrics`.

What the data path pays: a produce adds the appended bytes to its
partition's counter, a fetch adds the bytes it returns, and the dispatcher
adds one request's count and latency to its API's statistics. Each is an
integer (or float) add on an object found with one or two dict lookups; no
lock, nothing allocated after a partition's first byte. Under the GIL a
`counter.x += n` with no call in between is not interrupted by another
thread (CPython checks for thread switches at calls and backward jumps), so
no increments are lost in practice; these are metrics, not accounting.

Rates are Kafka's (Yammer) meters: an exponentially weighted moving average
over a one-minute window, ticked every TICK_INTERVAL_S by the broker's
housekeeping thread; the first tick of a new counter takes the instant rate.

The page is built on request from what the broker holds (partitions, logs,
log dirs) in the Prometheus text format 0.0.4 and served by a small
ThreadingHTTPServer: bounded concurrency, a socket timeout, bound to the
broker's listener host. docs/snapshot.md lists every metric.
"""

from __future__ import annotations

import logging
import math
import os
import socket
import threading
import time
from bisect import bisect_left
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from kafkactl.cluster import fatal

log = logging.getLogger(__name__)

TICK_INTERVAL_S = 5.0          # Yammer's meters tick every 5 s
RATE_WINDOW_S = 60.0           # the one-minute rate
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
METRICS_PATH = "/metrics"
MAX_CONCURRENT_SCRAPES = 4
HTTP_TIMEOUT_S = 10.0
# Upper bounds (seconds) of the request latency histogram's buckets.
LATENCY_BUCKETS_S = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

# Kafka's request names (kafka.network:type=RequestMetrics,request=...).
API_NAMES = {
    0: "Produce", 1: "Fetch", 2: "ListOffsets", 3: "Metadata", 4: "LeaderAndIsr", 5: "StopReplica",
    6: "UpdateMetadata", 7: "ControlledShutdown", 10: "FindCoordinator", 18: "ApiVersions",
    22: "InitProducerId", 23: "OffsetForLeaderEpoch", 32: "DescribeConfigs", 35: "DescribeLogDirs",
}
UNKNOWN_API = "Unknown"


# --- counters on the data path ---------------------------------------------------

class PartitionCounters:
    """One partition's byte counters and their one-minute rates."""

    __slots__ = ("bytes_in", "bytes_out", "replication_bytes_out",
                 "bytes_in_per_s", "bytes_out_per_s", "_last_in", "_last_out", "_ticked")

    def __init__(self) -> None:
        self.bytes_in = 0                 # appended as leader (Produce)
        self.bytes_out = 0                # returned to consumers
        self.replication_bytes_out = 0    # returned to followers
        self.bytes_in_per_s = 0.0
        self.bytes_out_per_s = 0.0
        self._last_in = 0
        self._last_out = 0
        self._ticked = False

    def tick(self, elapsed_s: float, alpha: float) -> None:
        bytes_in, bytes_out = self.bytes_in, self.bytes_out
        instant_in = (bytes_in - self._last_in) / elapsed_s
        instant_out = (bytes_out - self._last_out) / elapsed_s
        self._last_in, self._last_out = bytes_in, bytes_out
        if self._ticked:
            self.bytes_in_per_s += alpha * (instant_in - self.bytes_in_per_s)
            self.bytes_out_per_s += alpha * (instant_out - self.bytes_out_per_s)
        else:  # as Yammer's EWMA: the first tick starts from the instant rate
            self.bytes_in_per_s, self.bytes_out_per_s, self._ticked = instant_in, instant_out, True


class PartitionMeters:
    """Byte counters per partition, kept as {topic: {partition: counters}} so
    the data path builds no key tuple."""

    def __init__(self, clock_s: Callable[[], float] = time.monotonic) -> None:
        self._by_topic: dict[str, dict[int, PartitionCounters]] = {}
        self._create_lock = threading.Lock()
        self._clock_s = clock_s
        self._last_tick_s = clock_s()

    def counters(self, topic: str, index: int) -> PartitionCounters:
        partitions = self._by_topic.get(topic)
        if partitions is not None:
            counters = partitions.get(index)
            if counters is not None:
                return counters
        return self._create(topic, index)

    def _create(self, topic: str, index: int) -> PartitionCounters:
        with self._create_lock:   # once per partition: two threads must not both create
            return self._by_topic.setdefault(topic, {}).setdefault(index, PartitionCounters())

    def add_bytes_in(self, topic: str, index: int, size: int) -> None:
        self.counters(topic, index).bytes_in += size

    def add_bytes_out(self, topic: str, index: int, size: int) -> None:
        self.counters(topic, index).bytes_out += size

    def add_replication_bytes_out(self, topic: str, index: int, size: int) -> None:
        self.counters(topic, index).replication_bytes_out += size

    def get(self, topic: str, index: int) -> PartitionCounters | None:
        partitions = self._by_topic.get(topic)
        return None if partitions is None else partitions.get(index)

    def tick(self, hosted: Iterable[tuple[str, int]] | None = None) -> None:
        """Update every rate (housekeeping, about every TICK_INTERVAL_S); with
        `hosted`, drop the counters of partitions no longer on this broker."""
        now_s = self._clock_s()
        elapsed_s = now_s - self._last_tick_s
        if elapsed_s <= 0:
            return
        self._last_tick_s = now_s
        alpha = 1.0 - math.exp(-elapsed_s / RATE_WINDOW_S)
        for partitions in list(self._by_topic.values()):
            for counters in list(partitions.values()):
                counters.tick(elapsed_s, alpha)
        if hosted is not None:
            self._retain(set(hosted))

    def _retain(self, hosted: set[tuple[str, int]]) -> None:
        with self._create_lock:
            for topic, partitions in list(self._by_topic.items()):
                for index in [i for i in partitions if (topic, i) not in hosted]:
                    del partitions[index]
                if not partitions:
                    del self._by_topic[topic]


class RequestStats:
    """One API's request count, failures and latency histogram."""

    __slots__ = ("count", "errors", "latency_sum_s", "buckets")

    def __init__(self) -> None:
        self.count = 0
        self.errors = 0
        self.latency_sum_s = 0.0
        self.buckets = [0] * (len(LATENCY_BUCKETS_S) + 1)   # the last is +Inf

    def observe(self, seconds: float) -> None:
        self.count += 1
        self.latency_sum_s += seconds
        self.buckets[bisect_left(LATENCY_BUCKETS_S, seconds)] += 1


class RequestMetrics:
    def __init__(self) -> None:
        self._by_api = {key: RequestStats() for key in API_NAMES}
        self._unknown = RequestStats()

    def stats(self, api_key: int) -> RequestStats:
        return self._by_api.get(api_key) or self._unknown

    def items(self) -> list[tuple[str, RequestStats]]:
        return [(API_NAMES[k], s) for k, s in sorted(self._by_api.items())] + [(UNKNOWN_API, self._unknown)]


class BrokerMetrics:
    """Everything the broker measures; the handlers reach it as services.metrics."""

    def __init__(self, clock_s: Callable[[], float] = time.monotonic) -> None:
        self.partitions = PartitionMeters(clock_s)
        self.requests = RequestMetrics()


# --- the exposition format -----------------------------------------------------------

def escape_label_value(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def format_value(value: float) -> str:
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(value)


class Family:
    """One metric family: its HELP and TYPE lines, then sample lines."""

    __slots__ = ("name", "kind", "help", "lines")

    def __init__(self, name: str, kind: str, help_text: str) -> None:
        self.name, self.kind, self.help, self.lines = name, kind, help_text, []

    def add(self, labels: str, value: float, suffix: str = "") -> None:
        body = f"{{{labels}}}" if labels else ""
        self.lines.append(f"{self.name}{suffix}{body} {format_value(value)}")

    def render(self) -> str:
        head = f"# HELP {self.name} {_escape_help(self.help)}\n# TYPE {self.name} {self.kind}\n"
        return head + ("\n".join(self.lines) + "\n" if self.lines else "")


# --- the page -------------------------------------------------------------------------

def render_page(broker_id: int, rack: str | None, partitions: Iterable, log_dirs: Iterable,
                dir_of: Callable[[str, int], str | None], meters: PartitionMeters,
                requests: RequestMetrics, statvfs: Callable[[str], os.statvfs_result] = os.statvfs) -> str:
    """The whole /metrics page.

    `partitions`: the broker's partition.Partition objects (topic,
    index, log, is_leader, isr, replicas); `log_dirs`: LogDir (path, media);
    `dir_of(topic, partition)`: the path of the dir holding a log.
    """
    families, dir_used = _partition_families(partitions, dir_of, meters)
    families += _log_dir_families(log_dirs, dir_used, statvfs)
    families += _broker_families(broker_id, rack)
    families += _request_families(requests)
    return "".join(f.render() for f in families)


def _partition_families(partitions: Iterable, dir_of, meters: PartitionMeters):
    size = Family("kafka_log_size_bytes", "gauge",
                  "Bytes of the partition's log segments on this broker; log_dir is the dir holding them.")
    end = Family("kafka_log_end_offset", "gauge", "The offset after the last record of the replica's log.")
    start = Family("kafka_log_start_offset", "gauge", "The first offset of the replica's log.")
    bytes_in = Family("kafka_partition_bytes_in_total", "counter",
                      "Bytes produced to the partition and appended by this broker as leader.")
    bytes_out = Family("kafka_partition_bytes_out_total", "counter",
                       "Bytes of the partition returned to consumers (followers' fetches excluded).")
    replication_out = Family("kafka_partition_replication_bytes_out_total", "counter",
                             "Bytes of the partition returned to followers' fetches.")
    in_rate = Family("kafka_partition_bytes_in_per_second", "gauge",
                     "One-minute exponentially weighted rate of kafka_partition_bytes_in_total.")
    out_rate = Family("kafka_partition_bytes_out_per_second", "gauge",
                      "One-minute exponentially weighted rate of kafka_partition_bytes_out_total.")
    count = leaders = under_replicated = 0
    dir_used: dict[str, int] = {}
    topic_labels: dict[str, str] = {}   # label values escaped once per topic and dir, not per line
    dir_labels: dict[str, str] = {}
    for partition in partitions:
        topic, index, log_ = partition.topic, partition.index, partition.log
        escaped = topic_labels.get(topic)
        if escaped is None:
            escaped = topic_labels[topic] = escape_label_value(topic)
        path = dir_of(topic, index)
        if path is None:
            continue   # its log was deleted a moment ago
        labels = f'topic="{escaped}",partition="{index}"'
        size_bytes = log_.size_bytes
        dir_used[path] = dir_used.get(path, 0) + size_bytes
        dir_label = dir_labels.get(path)
        if dir_label is None:
            dir_label = dir_labels[path] = escape_label_value(path)
        size.lines.append(f'kafka_log_size_bytes{{{labels},log_dir="{dir_label}"}} {size_bytes}')
        end.lines.append(f"kafka_log_end_offset{{{labels}}} {log_.log_end_offset}")
        start.lines.append(f"kafka_log_start_offset{{{labels}}} {log_.log_start_offset}")
        count += 1
        if partition.is_leader:
            leaders += 1
            if len(partition.isr) < len(partition.replicas):
                under_replicated += 1
        counters = meters.get(topic, index)
        if counters is None:
            continue   # as Prometheus clients do: a counter's series appears with its first count
        bytes_in.lines.append(f"kafka_partition_bytes_in_total{{{labels}}} {counters.bytes_in}")
        bytes_out.lines.append(f"kafka_partition_bytes_out_total{{{labels}}} {counters.bytes_out}")
        replication_out.lines.append(
            f"kafka_partition_replication_bytes_out_total{{{labels}}} {counters.replication_bytes_out}")
        in_rate.lines.append(f"kafka_partition_bytes_in_per_second{{{labels}}} {counters.bytes_in_per_s!r}")
        out_rate.lines.append(f"kafka_partition_bytes_out_per_second{{{labels}}} {counters.bytes_out_per_s!r}")
    totals = [
        _single("kafka_partition_count", "Partitions (replicas) hosted by this broker.", count),
        _single("kafka_leader_count", "Partitions this broker leads.", leaders),
        _single("kafka_under_replicated_partitions",
                "Partitions this broker leads whose ISR is smaller than their replica set.", under_replicated),
    ]
    return [size, end, start, bytes_in, bytes_out, replication_out, in_rate, out_rate, *totals], dir_used


def _single(name: str, help_text: str, value: float) -> Family:
    family = Family(name, "gauge", help_text)
    family.add("", value)
    return family


def _log_dir_families(log_dirs: Iterable, dir_used: dict[str, int], statvfs) -> list[Family]:
    capacity = Family("kafka_log_dir_capacity_bytes", "gauge", "Size of the file system holding the log dir.")
    used = Family("kafka_log_dir_used_bytes", "gauge", "Bytes of the partition logs in the log dir.")
    free = Family("kafka_log_dir_free_bytes", "gauge",
                  "Bytes available to the broker on the file system holding the log dir.")
    for log_dir in log_dirs:
        labels = f'path="{escape_label_value(log_dir.path)}",media="{escape_label_value(log_dir.media or "hdd")}"'
        try:
            stats = statvfs(log_dir.path)
        except OSError as error:   # a failed disk: leave its capacity out rather than fail the page
            log.warning("log dir %s: cannot stat: %s", log_dir.path, error)
        else:
            capacity.add(labels, stats.f_blocks * stats.f_frsize)
            free.add(labels, stats.f_bavail * stats.f_frsize)
        used.add(labels, dir_used.get(log_dir.path, 0))
    return [capacity, used, free]


def _broker_families(broker_id: int, rack: str | None) -> list[Family]:
    info = Family("kafka_broker_info", "gauge", "The broker's id and rack (empty when none); always 1.")
    info.add(f'broker_id="{broker_id}",rack="{escape_label_value(rack or "")}"', 1)
    return [info]


def _request_families(requests: RequestMetrics) -> list[Family]:
    total = Family("kafka_requests_total", "counter", "Requests handled, per API.")
    errors = Family("kafka_request_errors_total", "counter",
                    "Requests that failed as a whole (unsupported version, internal error), per API; "
                    "error codes inside responses are not counted.")
    latency = Family("kafka_request_latency_seconds", "histogram",
                     "Time from a request's arrival to its response being ready (long polls included), per API.")
    bounds = [format_value(b) for b in LATENCY_BUCKETS_S] + ["+Inf"]
    for name, stats in requests.items():
        label = f'api="{name}"'
        total.add(label, stats.count)
        errors.add(label, stats.errors)
        cumulative = 0
        for bound, bucket in zip(bounds, list(stats.buckets)):
            cumulative += bucket
            latency.add(f'{label},le="{bound}"', cumulative, "_bucket")
        latency.add(label, stats.latency_sum_s, "_sum")
        latency.add(label, cumulative, "_count")
    return [total, errors, latency]


# --- the HTTP server -----------------------------------------------------------------

class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, address, handler, max_concurrent: int) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        self._slots = threading.BoundedSemaphore(max_concurrent)
        super().__init__(address, handler)

    def process_request(self, request, client_address) -> None:
        if not self._slots.acquire(blocking=False):
            _refuse_busy(request)
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request, client_address) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


def _refuse_busy(request) -> None:
    try:
        request.settimeout(1.0)
        request.sendall(b"HTTP/1.0 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    except OSError:
        pass


def _handler(render: Callable[[], str], timeout_s: float):
    class MetricsHandler(BaseHTTPRequestHandler):
        timeout = timeout_s   # applied to the socket: a slow client cannot hold a thread

        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            if self.path.split("?", 1)[0] != METRICS_PATH:
                self._reply(404, b"not found; try /metrics\n", "text/plain; charset=utf-8")
                return
            try:
                body = render().encode("utf-8")
            except Exception as error:
                fatal.halt_if_fatal(error, "metrics page")
                log.exception("building the metrics page failed")
                self._reply(500, b"internal error\n", "text/plain; charset=utf-8")
                return
            self._reply(200, body, CONTENT_TYPE)

        def _reply(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args) -> None:  # noqa: A002 (http.server's signature)
            log.debug("metrics %s: " + format, self.address_string(), *args)

    return MetricsHandler


class MetricsServer:
    """`GET /metrics` on host:port (port 0: any free port, see .port)."""

    def __init__(self, host: str, port: int, render: Callable[[], str],
                 max_concurrent: int = MAX_CONCURRENT_SCRAPES, timeout_s: float = HTTP_TIMEOUT_S,
                 poll_interval_s: float = 0.5) -> None:
        self._server = _Server((host or "0.0.0.0", port), _handler(render, timeout_s), max_concurrent)
        self.host = host or "0.0.0.0"
        self.port = self._server.server_address[1]
        # stop() waits up to poll_interval_s for the serving loop to notice
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": poll_interval_s}, name="metrics-http", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join(timeout=5)
        self._server.server_close()
