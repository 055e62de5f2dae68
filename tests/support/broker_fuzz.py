"""A seeded fuzz run against a live broker: real clients' frames, mutated.

    corpus = capture_client_frames({1: (host, port)}, topic)   # kcat, kafka-python, confluent-kafka
    run = FuzzRun(broker, corpus, seed=7, topic=topic)
    report = run.run(cases=2000, batch=250)           # AssertionError with a replay line

Case i of seed s is always the same bytes (random.Random(f"{s}:{i}")), so a
failing batch replays with `scripts/fuzz_broker.py --seed s --first a --count n`.
Each case goes on its own connection, which the fuzzer half-closes after
sending, so the broker sees the end of the stream and every case ends. After
every batch the broker must: be alive; answer ApiVersions and Metadata within
HEALTH_TIMEOUT_S; take a message from kcat with acks=-1 and give back the
whole fuzzed topic to kcat, marker included (a batch acknowledged with garbage
inside would stop kcat there); stay under an RSS bound; and have logged no
traceback.
"""

from __future__ import annotations

import os
import random
import socket
import struct
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.metadata.v12 import request as metadata12

from kafkactl.cluster.broker.broker_client import decode_response, encode_request
from kafkactl.cluster.protocol import apis
from support.frame_fuzz import mutate
from support.recording_proxy import RecordingProxy
from support.sockets import read_exactly

HEALTH_TIMEOUT_S = 5.0
CASE_TIMEOUT_S = 2.0
KCAT_TIMEOUT_S = 30


@dataclass(frozen=True)
class Target:
    host: str
    port: int
    pid: int
    log_file: str


@dataclass
class Report:
    cases: int = 0
    closed_by_broker: int = 0
    answered: int = 0
    seconds: float = 0.0
    checks: int = 0
    max_rss_mb: float = 0.0
    max_threads: int = 0
    kinds: dict[str, int] = field(default_factory=dict)

    @property
    def cases_per_second(self) -> float:
        return self.cases / self.seconds if self.seconds else 0.0


def capture_client_frames(brokers: dict[int, tuple[str, int]], topic: str) -> list[bytes]:
    """Request frames of kcat, kafka-python and confluent-kafka talking to the
    brokers (id -> host, port) through a RecordingProxy: metadata, produce
    (every codec), fetch, list offsets, describe configs."""
    proxy = RecordingProxy(brokers)
    bootstrap = proxy.bootstrap
    try:
        for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
            _kcat(["-P", "-t", topic, "-X", "acks=-1", "-X", f"compression.codec={codec}", "-K", ":",
                   "-H", "h=v"], bootstrap, input=b"".join(b"k%d:%s\n" % (i, b"v" * 200) for i in range(20)))
        _kcat(["-C", "-t", topic, "-e", "-o", "beginning"], bootstrap)
        _kcat(["-L"], bootstrap)
        _kafka_python(bootstrap, topic)
        _confluent(bootstrap, topic)
    finally:
        proxy.close()
    return [frame for frame in proxy.frames if struct.unpack_from(">h", frame, 0)[0] in apis.SUPPORTED]


def _kcat(arguments: list[str], bootstrap: str, input: bytes | None = None) -> bytes:
    result = subprocess.run(["kcat", "-b", bootstrap, *arguments], input=input, capture_output=True,
                            timeout=KCAT_TIMEOUT_S)
    if result.returncode != 0:
        raise AssertionError(f"kcat {arguments} failed: {result.stderr.decode()[-500:]}")
    return result.stdout


def _kafka_python(bootstrap: str, topic: str) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", compression_type="gzip")
    for i in range(10):
        producer.send(topic, key=b"kp%d" % i, value=b"x" * 300, headers=[("h", b"1")])
    producer.flush(timeout=20)
    producer.close(timeout=5)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                             consumer_timeout_ms=2000)
    consumer.assign([TopicPartition(topic, 0)])
    consumer.seek_to_beginning()
    for _ in consumer:
        pass
    consumer.close()


def _confluent(bootstrap: str, topic: str) -> None:
    import confluent_kafka
    from confluent_kafka.admin import AdminClient, ConfigResource

    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "acks": "all",
                                         "compression.type": "lz4", "linger.ms": 5})
    for i in range(10):
        producer.produce(topic, key=b"ck%d" % i, value=b"y" * 300)
    producer.flush(20)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    for future in admin.describe_configs([resource]).values():
        future.result(timeout=20)


class FuzzRun:
    def __init__(self, target: Target, corpus: list[bytes], seed: int, topic: str,
                 rss_limit_mb: float = 1000.0) -> None:
        if not corpus:
            raise ValueError("an empty corpus: no client frames were captured")
        self.target = target
        self.corpus = corpus
        self.seed = seed
        self.topic = topic
        self.rss_limit_mb = rss_limit_mb
        self.report = Report()
        self._log_read = Path(target.log_file).stat().st_size

    def case(self, index: int) -> tuple[bytes, str]:
        rng = random.Random(f"{self.seed}:{index}")
        return mutate(rng.choice(self.corpus), rng)

    def run(self, cases: int, batch: int, first: int = 0) -> Report:
        started = time.monotonic()
        for start in range(first, first + cases, batch):
            count = min(batch, first + cases - start)
            for index in range(start, start + count):
                data, what = self.case(index)
                kind = what.split(" ")[0]
                self.report.kinds[kind] = self.report.kinds.get(kind, 0) + 1
                self._send(data)
                self.report.cases += 1
            self.report.seconds = time.monotonic() - started
            self._check(f"replay: scripts/fuzz_broker.py --seed {self.seed} --first {start} --count {count}")
        return self.report

    def _send(self, data: bytes) -> None:
        with socket.create_connection((self.target.host, self.target.port), timeout=CASE_TIMEOUT_S) as sock:
            try:
                sock.sendall(data)
                sock.shutdown(socket.SHUT_WR)
                answered = b""
                while chunk := sock.recv(65536):
                    answered += chunk[:1]
                self.report.closed_by_broker += 1
                self.report.answered += bool(answered)
            except socket.timeout:
                pass   # a long poll, or a frame the broker still waits for: ours to close
            except OSError:
                self.report.closed_by_broker += 1   # closed (reset) before we were done sending

    # --- health after each batch -------------------------------------------------

    def _check(self, replay: str) -> None:
        self.report.checks += 1
        problems = self._health()
        if problems:
            raise AssertionError(f"{'; '.join(problems)}\n{replay}")

    def _health(self) -> list[str]:
        problems = []
        if not _alive(self.target.pid):
            return ["the broker process died"]
        for name, request in (("ApiVersions", ApiVersionsRequest(client_software_name="fuzz",
                                                                 client_software_version="1")),
                              ("Metadata", metadata12.MetadataRequest(
                                  topics=None, allow_auto_topic_creation=False,
                                  include_topic_authorized_operations=False))):
            error = _answers(self.target, request)
            if error:
                problems.append(f"{name}: {error}")
        problems += self._round_trip()
        rss_mb, threads = _process_status(self.target.pid)
        self.report.max_rss_mb = max(self.report.max_rss_mb, rss_mb)
        self.report.max_threads = max(self.report.max_threads, threads)
        if rss_mb > self.rss_limit_mb:
            problems.append(f"RSS {rss_mb:.0f} MB over the bound {self.rss_limit_mb:.0f} MB")
        problems += self._new_tracebacks()
        return problems

    def _round_trip(self) -> list[str]:
        bootstrap = f"{self.target.host}:{self.target.port}"
        marker = b"marker-%d-%d" % (self.seed, self.report.checks)
        try:
            _kcat(["-P", "-t", self.topic, "-p", "0", "-X", "acks=-1"], bootstrap, input=marker + b"\n")
            consumed = _kcat(["-C", "-t", self.topic, "-p", "0", "-e", "-o", "beginning"], bootstrap)
        except (AssertionError, subprocess.TimeoutExpired) as error:
            return [f"kcat round trip: {error}"]
        if marker not in consumed:
            return [f"kcat read the topic without its acknowledged marker {marker.decode()}"]
        return []

    def _new_tracebacks(self) -> list[str]:
        with open(self.target.log_file, "rb") as log:
            log.seek(self._log_read)
            text = log.read().decode(errors="replace")
            self._log_read = log.tell()
        if "Traceback" in text:
            at = text.index("Traceback")
            return [f"the broker logged a traceback: {text[max(0, at - 300):at + 1500]}"]
        return []


def _answers(target: Target, request) -> str | None:
    try:
        with socket.create_connection((target.host, target.port), timeout=HEALTH_TIMEOUT_S) as sock:
            sock.sendall(encode_request(request, 1, "fuzz-health"))
            (size,) = struct.unpack(">i", read_exactly(sock, 4))
            decode_response(read_exactly(sock, size), _response_class(request), 1)
    except (OSError, ConnectionError) as error:
        return f"no answer within {HEALTH_TIMEOUT_S} s: {error}"
    return None


def _response_class(request):
    from kio.index import load_response_schema
    return load_response_schema(request.__api_key__, request.__version__)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _process_status(pid: int) -> tuple[float, int]:
    """(RSS in MB, thread count) from /proc/<pid>/status."""
    rss_kb = threads = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss_kb = int(line.split()[1])
        elif line.startswith("Threads:"):
            threads = int(line.split()[1])
    return rss_kb / 1024, threads
