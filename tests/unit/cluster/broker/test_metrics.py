"""The /metrics page: the exposition format parsed back, what each metric says,
meter rates under an injected clock, request statistics, and the HTTP server's
bounds."""

from __future__ import annotations

import math
import re
import socket
import struct
import threading
import time
import urllib.error
import urllib.request
from types import SimpleNamespace

import pytest

from kafkactl.cluster.broker.config import BrokerConfig, ConfigError, Endpoint, from_properties
from kafkactl.cluster.broker.dispatcher import Dispatcher
from kafkactl.cluster.broker.handlers.services import BrokerServices
from kafkactl.cluster.broker.metadata import MetadataCache
from kafkactl.cluster.broker.metrics import (
    CONTENT_TYPE,
    LATENCY_BUCKETS_S,
    RATE_WINDOW_S,
    MetricsServer,
    PartitionMeters,
    RequestMetrics,
    render_page,
)
from kafkactl.cluster.protocol.framing import FrameError

# --- a small strict reader of the text format 0.0.4, independent of the writer ----

_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_SAMPLE = re.compile(rf"^({_NAME})(?:\{{(.*)\}})? (\S+)$")
_LABEL = re.compile(rf'({_NAME})="((?:[^"\\\n]|\\\\|\\"|\\n)*)"(,|$)')


def _unescape(value: str) -> str:
    return re.sub(r'\\(\\|"|n)', lambda m: {"\\": "\\", '"': '"', "n": "\n"}[m.group(1)], value)


def _labels(text: str) -> dict[str, str]:
    labels, position = {}, 0
    while position < len(text):
        match = _LABEL.match(text, position)
        assert match, f"bad labels at {text[position:]!r}"
        assert match.group(1) not in labels, f"label {match.group(1)} twice"
        labels[match.group(1)] = _unescape(match.group(2))
        position = match.end()
    return labels


def parse(page: str) -> dict[str, dict]:
    """{family: {"type", "help", "samples": [(name, labels, value)]}}; asserts the format's rules."""
    assert page.endswith("\n")
    families: dict[str, dict] = {}
    current = None
    for line in page[:-1].split("\n"):
        if line.startswith("# HELP "):
            name, _, text = line[7:].partition(" ")
            assert name not in families, f"family {name} twice"
            current = families[name] = {"help": text, "type": None, "samples": []}
        elif line.startswith("# TYPE "):
            name, _, kind = line[7:].partition(" ")
            assert current is families.get(name) and kind in ("counter", "gauge", "histogram", "summary")
            current["type"] = kind
        else:
            match = _SAMPLE.match(line)
            assert match and current is not None, f"bad line {line!r}"
            name, labels, value = match.group(1), _labels(match.group(2) or ""), float(match.group(3))
            family = next(f for f in families if name == f or name in (f + "_bucket", f + "_sum", f + "_count"))
            assert families[family] is current, f"{name} outside its family"
            current["samples"].append((name, labels, value))
    return families


def values(families, name: str, **match) -> list[float]:
    family = families.get(name) or families[re.sub(r"_(bucket|sum|count)$", "", name)]
    return [v for n, labels, v in family["samples"]
            if n == name and all(labels.get(k) == str(w) for k, w in match.items())]


def value(families, name: str, **match) -> float:
    [found] = values(families, name, **match)
    return found


# --- fakes for the broker's parts --------------------------------------------------

class FakeLog:
    def __init__(self, size_bytes: int, log_end_offset: int = 0, log_start_offset: int = 0) -> None:
        self.size_bytes, self.log_end_offset, self.log_start_offset = size_bytes, log_end_offset, log_start_offset


def partition(topic, index, size_bytes, leader=True, isr=(1, 2), replicas=(1, 2), end=10, start=0):
    return SimpleNamespace(topic=topic, index=index, log=FakeLog(size_bytes, end, start), is_leader=leader,
                           isr=isr, replicas=replicas)


def statvfs(path):
    return SimpleNamespace(f_blocks=1000, f_frsize=4096, f_bavail=250)


class Clock:
    def __init__(self) -> None:
        self.now_s = 100.0

    def __call__(self) -> float:
        return self.now_s


WEIRD_DIR = '/data/a "quoted"\\dir\nx'


def page(partitions, dirs=None, dir_of=None, meters=None, requests=None, rack="r1") -> dict:
    dirs = dirs or [SimpleNamespace(path="/d/ssd0", media="ssd"), SimpleNamespace(path="/d/hdd0", media="hdd")]
    dir_of = dir_of or (lambda topic, index: "/d/ssd0" if index % 2 == 0 else "/d/hdd0")
    text = render_page(7, rack, partitions, dirs, dir_of, meters or PartitionMeters(),
                       requests or RequestMetrics(), statvfs)
    return parse(text)


# --- the page ----------------------------------------------------------------------

def test_every_family_has_help_and_type_and_names_end_in_their_unit():
    families = page([partition("t", 0, 100)])
    assert all(f["type"] and f["help"] for f in families.values())
    for name, family in families.items():
        assert name.startswith("kafka_")
        if family["type"] == "counter":
            assert name.endswith("_total")
    assert families["kafka_request_latency_seconds"]["type"] == "histogram"


def test_partition_sizes_offsets_and_dirs():
    families = page([partition("t", 0, 100, end=12, start=3), partition("t", 1, 250), partition("u.x-y", 0, 7)])
    assert value(families, "kafka_log_size_bytes", topic="t", partition=0) == 100
    assert values(families, "kafka_log_size_bytes", topic="t", partition=1, log_dir="/d/hdd0") == [250]
    assert values(families, "kafka_log_size_bytes", topic="u.x-y", partition=0, log_dir="/d/ssd0") == [7]
    assert value(families, "kafka_log_end_offset", topic="t", partition=0) == 12
    assert value(families, "kafka_log_start_offset", topic="t", partition=0) == 3


def test_a_partition_whose_log_was_just_deleted_is_left_out():
    families = page([partition("t", 0, 100), partition("gone", 0, 5)],
                    dir_of=lambda topic, index: None if topic == "gone" else "/d/ssd0")
    assert values(families, "kafka_log_size_bytes", topic="gone") == []
    assert value(families, "kafka_partition_count") == 1


def test_log_dirs_capacity_used_free_and_media():
    families = page([partition("t", 0, 100), partition("t", 1, 250), partition("t", 2, 5)])
    assert value(families, "kafka_log_dir_used_bytes", path="/d/ssd0", media="ssd") == 105
    assert value(families, "kafka_log_dir_used_bytes", path="/d/hdd0", media="hdd") == 250
    assert value(families, "kafka_log_dir_capacity_bytes", path="/d/hdd0") == 1000 * 4096
    assert value(families, "kafka_log_dir_free_bytes", path="/d/ssd0") == 250 * 4096


def test_an_empty_log_dir_is_listed_with_zero_used():
    families = page([partition("t", 0, 100)])
    assert value(families, "kafka_log_dir_used_bytes", path="/d/hdd0") == 0


def test_label_values_are_escaped():
    dirs = [SimpleNamespace(path=WEIRD_DIR, media="ssd")]
    families = page([partition("t", 0, 9)], dirs=dirs, dir_of=lambda t, i: WEIRD_DIR, rack='r"1\\')
    assert value(families, "kafka_log_size_bytes", log_dir=WEIRD_DIR) == 9
    assert value(families, "kafka_log_dir_used_bytes", path=WEIRD_DIR) == 9
    assert value(families, "kafka_broker_info", broker_id=7, rack='r"1\\') == 1


def test_broker_counts_leaders_and_under_replicated():
    families = page([
        partition("t", 0, 1, leader=True, isr=(1, 2), replicas=(1, 2)),
        partition("t", 1, 1, leader=True, isr=(1,), replicas=(1, 2)),     # under-replicated
        partition("t", 2, 1, leader=False, isr=(2,), replicas=(1, 2)),    # a follower: its leader counts it
    ])
    assert value(families, "kafka_partition_count") == 3
    assert value(families, "kafka_leader_count") == 2
    assert value(families, "kafka_under_replicated_partitions") == 1
    assert value(families, "kafka_broker_info", broker_id=7, rack="r1") == 1


def test_no_rack_is_an_empty_label():
    assert value(page([], rack=None), "kafka_broker_info", rack="") == 1


def test_byte_counters_appear_with_their_first_count():
    meters = PartitionMeters()
    meters.add_bytes_in("t", 0, 300)
    meters.add_bytes_in("t", 0, 200)
    meters.add_bytes_out("t", 0, 50)
    meters.add_replication_bytes_out("t", 0, 500)
    families = page([partition("t", 0, 1), partition("t", 1, 1)], meters=meters)
    assert value(families, "kafka_partition_bytes_in_total", topic="t", partition=0) == 500
    assert value(families, "kafka_partition_bytes_out_total", topic="t", partition=0) == 50
    assert value(families, "kafka_partition_replication_bytes_out_total", topic="t", partition=0) == 500
    assert values(families, "kafka_partition_bytes_in_total", topic="t", partition=1) == []


# --- rates ---------------------------------------------------------------------------

def test_the_first_tick_takes_the_instant_rate_then_it_decays_as_a_one_minute_ewma():
    clock = Clock()
    meters = PartitionMeters(clock)
    meters.add_bytes_in("t", 0, 5000)
    meters.add_bytes_out("t", 0, 10000)
    clock.now_s += 5
    meters.tick()
    counters = meters.get("t", 0)
    assert counters.bytes_in_per_s == pytest.approx(1000)
    assert counters.bytes_out_per_s == pytest.approx(2000)
    clock.now_s += 5   # nothing more: the rate decays by exp(-5/60)
    meters.tick()
    assert counters.bytes_in_per_s == pytest.approx(1000 * math.exp(-5 / RATE_WINDOW_S))


def test_a_steady_rate_is_reached_whatever_the_tick_spacing():
    clock = Clock()
    meters = PartitionMeters(clock)
    meters.add_bytes_in("t", 0, 1)
    clock.now_s += 5
    meters.tick()
    for step_s in [5, 3, 7, 5, 1, 9] * 40:     # 4000 B/s throughout
        meters.add_bytes_in("t", 0, 4000 * step_s)
        clock.now_s += step_s
        meters.tick()
    assert meters.get("t", 0).bytes_in_per_s == pytest.approx(4000, rel=1e-3)


def test_a_tick_without_time_passing_changes_nothing():
    clock = Clock()
    meters = PartitionMeters(clock)
    meters.add_bytes_in("t", 0, 100)
    meters.tick()
    assert meters.get("t", 0).bytes_in_per_s == 0


def test_rates_are_on_the_page():
    clock = Clock()
    meters = PartitionMeters(clock)
    meters.add_bytes_in("t", 0, 6000)
    clock.now_s += 6
    meters.tick()
    families = page([partition("t", 0, 1)], meters=meters)
    assert value(families, "kafka_partition_bytes_in_per_second", topic="t", partition=0) == pytest.approx(1000)
    assert value(families, "kafka_partition_bytes_out_per_second", topic="t", partition=0) == 0


def test_counters_of_partitions_no_longer_hosted_are_dropped():
    clock = Clock()
    meters = PartitionMeters(clock)
    meters.add_bytes_in("t", 0, 1)
    meters.add_bytes_in("t", 1, 1)
    meters.add_bytes_in("gone", 0, 1)
    clock.now_s += 5
    meters.tick(hosted={("t", 1): None}.keys())
    assert meters.get("t", 0) is None and meters.get("gone", 0) is None
    assert meters.get("t", 1).bytes_in == 1


def test_concurrent_increments_are_not_lost():
    meters = PartitionMeters()

    def produce():
        for _ in range(20000):
            meters.add_bytes_in("t", 0, 1)

    threads = [threading.Thread(target=produce) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert meters.get("t", 0).bytes_in == 80000


# --- requests ------------------------------------------------------------------------

def test_request_histogram_is_cumulative_with_count_and_sum():
    requests = RequestMetrics()
    for seconds in (0.0002, 0.003, 0.003, 0.2, 100.0):
        requests.stats(0).observe(seconds)
    requests.stats(0).errors += 1
    families = page([], requests=requests)
    assert value(families, "kafka_requests_total", api="Produce") == 5
    assert value(families, "kafka_request_errors_total", api="Produce") == 1
    assert value(families, "kafka_request_latency_seconds_count", api="Produce") == 5
    assert value(families, "kafka_request_latency_seconds_sum", api="Produce") == pytest.approx(100.2062)
    buckets = [(labels["le"], v) for n, labels, v in families["kafka_request_latency_seconds"]["samples"]
               if n.endswith("_bucket") and labels["api"] == "Produce"]
    assert [le for le, _ in buckets] == [repr(b) for b in LATENCY_BUCKETS_S] + ["+Inf"]
    by_bound = dict(buckets)
    assert by_bound["0.0005"] == 1 and by_bound["0.0025"] == 1 and by_bound["0.005"] == 3
    assert by_bound["0.25"] == 4 and by_bound["30.0"] == 4 and by_bound["+Inf"] == 5
    assert [v for _, v in buckets] == sorted(v for _, v in buckets)


def _services() -> BrokerServices:
    config = BrokerConfig(broker_id=1, zookeeper_connect="zk:2181",
                          listeners=(Endpoint("PLAINTEXT", "127.0.0.1", 9092),),
                          advertised_listeners=(Endpoint("PLAINTEXT", "127.0.0.1", 9092),), log_dirs=("/x",))
    return BrokerServices(config=config, metadata=MetadataCache(), replica_manager=None, zk_agent=None,
                          producer_ids=None, clock_ms=lambda: 0)


def _frame(api_key: int, api_version: int, client_id: bytes = b"c") -> bytes:
    return struct.pack(">hhih", api_key, api_version, 1, len(client_id)) + client_id


def test_the_dispatcher_counts_requests_and_failures_per_api():
    services = _services()
    dispatcher = Dispatcher(services)
    assert dispatcher.dispatch(_frame(18, 0)) is not None       # ApiVersions
    with pytest.raises(FrameError):
        dispatcher.dispatch(_frame(99, 0))                                  # an API nobody serves
    with pytest.raises(FrameError):
        dispatcher.dispatch(_frame(3, 99))                                  # Metadata v99
    families = page([], requests=services.metrics.requests)
    assert value(families, "kafka_requests_total", api="ApiVersions") == 1
    assert value(families, "kafka_request_errors_total", api="ApiVersions") == 0
    assert value(families, "kafka_requests_total", api="Unknown") == 1
    assert value(families, "kafka_request_errors_total", api="Unknown") == 1
    assert value(families, "kafka_request_errors_total", api="Metadata") == 1


# --- cost ------------------------------------------------------------------------------

def test_building_the_page_for_10000_partitions_is_cheap(capsys):
    meters = PartitionMeters()
    partitions = [partition(f"topic-{i // 100}", i % 100, i * 1000, leader=i % 3 == 0) for i in range(10000)]
    for p in partitions:
        meters.add_bytes_in(p.topic, p.index, 1000)
        meters.add_bytes_out(p.topic, p.index, 1000)
    meters.tick()
    timings_ms = []
    for _ in range(3):
        started = time.perf_counter()
        text = render_page(1, "r1", partitions, [SimpleNamespace(path="/d/ssd0", media="ssd")],
                           lambda t, i: "/d/ssd0", meters, RequestMetrics(), statvfs)
        timings_ms.append((time.perf_counter() - started) * 1000)
    with capsys.disabled():
        print(f"\n/metrics for 10,000 partitions: {len(text) / 1e6:.1f} MB, "
              f"{text.count(chr(10))} lines, built in {min(timings_ms):.0f} ms (best of 3)")
    families = parse(text)
    assert len(families["kafka_log_size_bytes"]["samples"]) == 10000
    assert len(families["kafka_partition_bytes_in_per_second"]["samples"]) == 10000
    assert min(timings_ms) < 1000   # a loose bound: the aim (< 100 ms) is reported above, not asserted


# --- config -----------------------------------------------------------------------------

BASE = {"broker.id": "1", "zookeeper.connect": "127.0.0.1:2181", "log.dirs": "/d/a"}


@pytest.mark.parametrize("value, port", [(None, -1), ("-1", -1), ("0", 0), ("9404", 9404), ("65535", 65535)])
def test_metrics_port_is_off_by_default_and_0_means_any_free_port(value, port):
    properties = dict(BASE) if value is None else {**BASE, "metrics.port": value}
    assert from_properties(properties)[0].metrics_port == port


@pytest.mark.parametrize("value", ["-2", "65536", "x"])
def test_a_bad_metrics_port_is_refused_naming_the_key(value):
    with pytest.raises(ConfigError, match="metrics.port"):
        from_properties({**BASE, "metrics.port": value})


# --- the HTTP server ----------------------------------------------------------------

def _get(port: int, path: str = "/metrics", timeout_s: float = 5):
    return urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout_s)


@pytest.fixture
def serve():
    servers = []

    def start(render, **kwargs) -> MetricsServer:
        server = MetricsServer("127.0.0.1", 0, render, poll_interval_s=0.05, **kwargs)
        server.start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def test_get_metrics_answers_the_page_with_the_format_version(serve):
    server = serve(lambda: "# HELP x y\n# TYPE x gauge\nx 1\n")
    assert server.port > 0
    with _get(server.port) as response:
        assert response.status == 200
        assert response.headers["Content-Type"] == CONTENT_TYPE
        assert response.read() == b"# HELP x y\n# TYPE x gauge\nx 1\n"
    with _get(server.port, "/metrics?name[]=x") as response:
        assert response.status == 200


def test_other_paths_are_not_found_and_a_failing_page_is_a_500(serve):
    def broken():
        raise RuntimeError("boom")

    server = serve(broken)
    with pytest.raises(urllib.error.HTTPError) as missing:
        _get(server.port, "/")
    assert missing.value.code == 404
    with pytest.raises(urllib.error.HTTPError) as failed:
        _get(server.port)
    assert failed.value.code == 500


def test_requests_beyond_the_concurrency_bound_are_refused_busy(serve):
    entered, release = threading.Event(), threading.Event()

    def slow():
        entered.set()
        release.wait(10)
        return "x 1\n"

    server = serve(slow, max_concurrent=1)
    first = threading.Thread(target=lambda: _get(server.port).read())
    first.start()
    try:
        assert entered.wait(5)
        with pytest.raises(urllib.error.HTTPError) as busy:
            _get(server.port)
        assert busy.value.code == 503
    finally:
        release.set()
        first.join(10)
    # The client has its answer a moment before the serving thread gives its
    # slot back, so the slot is free again within a short deadline, not at once.
    assert _status_within(server.port, deadline_s=5) == 200


def _status_within(port, deadline_s):
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            with _get(port) as response:
                return response.status
        except urllib.error.HTTPError as error:
            if error.code != 503 or time.monotonic() > deadline:
                return error.code
            time.sleep(0.02)


def test_a_silent_client_is_dropped_after_the_timeout_and_frees_its_slot(serve):
    server = serve(lambda: "x 1\n", max_concurrent=1, timeout_s=0.3)
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as silent:
        time.sleep(0.1)
        started = time.monotonic()
        assert silent.recv(1024) == b""   # closed by the server without an answer
        assert time.monotonic() - started < 3
    assert _status_within(server.port, deadline_s=5) == 200


def test_stop_closes_the_port(serve):
    server = MetricsServer("127.0.0.1", 0, lambda: "x 1\n")
    server.start()
    port = server.port
    server.stop()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2)
