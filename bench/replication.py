"""Replication benchmarks of the reference cluster: failover, replicated produce, controlled shutdown.

    .venv/bin/python bench/replication.py                    # all three, ~10 minutes
    .venv/bin/python bench/replication.py --only failover --failover-partitions 1000:3 --no-doc
    .venv/bin/python bench/replication.py --only produce,shutdown --runs 3

Each benchmark starts its own 3-broker local cluster (ZooKeeper + 3 broker
processes) in a temporary directory and always takes it down again:

- failover: one topic of N partitions, replicas [L, F, C] for every partition
  (L and F are not the controller C), so broker L leads all N. L is killed
  with SIGKILL; timed separately: detection (the kill until ZooKeeper deletes
  /brokers/ids/L, seen through a watch; zookeeper.session.timeout.ms=4000),
  election (that deletion until the last partition state znode names the new
  leader: the znodes' mtime, ZooKeeper's own clock) and serving (that deletion
  until every partition answers ListOffsets from F). The controller's and the
  new leader's logs give the steps in between. Then L is restarted, rejoins
  every ISR, and a preferred replica election gives it the N leaderships back
  for the next run.
- produce: replication factor 3, acks=-1, min.insync.replicas=2: kcat with the
  producer settings of bench/throughput.py, 1 KiB records, timed from start to
  exit; the machine's limits (page-cache writes, loopback TCP) measured in the
  same rounds with bench/throughput.py's functions. Then p50/p99 latency at half
  the measured rate with confluent-kafka (a paced loop, linger.ms=1).
- controlled shutdown: broker L leads 5,000 partitions; SIGTERM until the
  process has exited, split with the broker's log lines into the wait for the
  ControlledShutdown request and the rest of the shutdown.

Every figure is the median of several runs (the machine is shared). The
tables are printed and written to docs/benchmarks-replication.md, each
benchmark between its own markers (a run of some of them keeps the others'
sections), with a hand-written notes section kept across runs.

This is a measurement, not a test: nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import datetime
import io
import json
import os
import platform
import re
import resource
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
DOC = REPO / "docs" / "benchmarks-replication.md"
RESULTS = REPO / "docs" / "benchmarks-replication.json"
sys.path.insert(0, str(BENCH))
import throughput  # noqa: E402  (bench/throughput.py: the limits, kcat options, payloads)

NOTES_BEGIN = "<!-- notes: hand-written, kept by bench/replication.py -->"
NOTES_END = "<!-- end of notes -->"
SECTIONS = ("failover", "produce", "shutdown")

MB = throughput.MB
SESSION_TIMEOUT_MS = 4000
ZK_TIMEOUT_S = 30.0
PRODUCE_RECORD_BYTES = 1024
PRODUCE_RECORDS = 250_000              # 256 MB of payload per run, as bench/throughput.py
LATENCY_SECONDS = 6.0                  # per latency run, after a warm-up
LATENCY_WARMUP_S = 1.0
LATENCY_LINGER_MS = 5                 # librdkafka's default
LATENCY_LOADS = (0.5, 0.25, 0.1)      # of the kcat median of RF 3, 1 partition (the brief asks for half)
# (RF, 1 KiB records per request, requests in flight on the connection)
COMMIT_CASES = ((1, 1, 1), (2, 1, 1), (3, 1, 1), (1, 1000, 1), (2, 1000, 1), (3, 1000, 1), (3, 1000, 5))
COMMIT_SECONDS = 2.0
SHUTDOWN_PARTITIONS = 5000
FAILOVER_DEFAULT = "1000:3"            # N:runs; 10000:3 separately (a new cluster per run, ~2 minutes each)
# Enough for every partition's files of the biggest case on every broker
# (children inherit it); raised up to the hard limit, never beyond.
WANTED_NOFILE = 65536

# Kept off in every cluster here: a rebalance timer firing mid-run would move
# leaders at a random moment. Leaderships go back by explicit preferred election.
NOT_LEADER_OR_FOLLOWER = 6

BASE_OVERRIDES = {"auto.leader.rebalance.enable": "false"}


# ---- logs ----------------------------------------------------------------------

LOG_LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) (\w+) \[([^\]]*)\] (\S+): (.*)$")


@dataclass
class LogLine:
    t: float            # wall clock, seconds since the epoch
    level: str
    thread: str
    logger: str
    message: str


def log_size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def read_log(path: str, offset: int) -> list[LogLine]:
    """The broker log lines written after byte `offset` (Python logging's asctime)."""
    lines = []
    with open(path, "rb") as f:
        f.seek(offset)
        for raw in f.read().decode(errors="replace").splitlines():
            m = LOG_LINE.match(raw)
            if m:
                t = datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
                lines.append(LogLine(t, m.group(2), m.group(3), m.group(4), m.group(5)))
    return lines


def first(lines: list[LogLine], pattern: str) -> LogLine | None:
    rx = re.compile(pattern)
    return next((line for line in lines if rx.search(line.message)), None)


def matching(lines: list[LogLine], pattern: str) -> list[LogLine]:
    rx = re.compile(pattern)
    return [line for line in lines if rx.search(line.message)]


# ---- a cluster with a ZooKeeper client ------------------------------------------

@dataclass
class State:
    leader: int
    leader_epoch: int
    isr: list[int]
    version: int
    mtime_s: float          # ZooKeeper's clock (the server's wall clock), seconds


class BenchCluster:
    """A 3-broker LocalCluster, a kazoo client, and pipelined reads of partition states."""

    def __init__(self, root: Path, overrides: dict[str, str], timeout_s: float = 180.0) -> None:
        from kafkactl.cluster.local import LocalCluster

        self.cluster = LocalCluster(root)
        self.zk = None
        self.status = self.cluster.up(brokers=3, overrides={**BASE_OVERRIDES, **overrides},
                                      timeout_s=timeout_s)
        from kazoo.client import KazooClient

        self.zk = KazooClient(hosts=self.status.zookeeper_connect, timeout=10.0)
        self.zk.start(timeout=ZK_TIMEOUT_S)

    def close(self) -> None:
        try:
            if self.zk is not None:
                self.zk.stop()
                self.zk.close()
        finally:
            self.cluster.down(purge=True)

    def refresh(self) -> None:
        self.status = self.cluster.status(check_registration=False)

    def broker(self, broker_id: int):
        return self.status.broker(broker_id)

    def controller_id(self) -> int:
        data, _ = self.zk.get("/controller")
        return json.loads(data)["brokerid"]

    def roles(self) -> tuple[int, int, int]:
        """(leader, follower, controller): the two brokers that are not the controller first."""
        controller = self.controller_id()
        others = sorted(b.id for b in self.status.brokers if b.id != controller)
        return others[0], others[1], controller

    def create_topic(self, topic: str, assignment: dict[int, list[int]], config: dict[str, str]) -> None:
        from kafkactl.cluster.admin.topics import create_topic

        create_topic(self.zk, topic, assignment, config, timeout_s=ZK_TIMEOUT_S)

    def states(self, topic: str, partitions, watch_factory=None) -> dict[int, State | None]:
        """Pipelined reads; with watch_factory(p), each read also sets a data watch."""
        results = {p: self.zk.get_async(f"/brokers/topics/{topic}/partitions/{p}/state",
                                        watch=watch_factory(p) if watch_factory else None)
                   for p in partitions}
        states = {}
        for p, result in results.items():
            try:
                data, stat = result.get(timeout=ZK_TIMEOUT_S)
            except Exception:  # no node yet
                states[p] = None
                continue
            value = json.loads(data)
            states[p] = State(value["leader"], value["leader_epoch"], value["isr"], stat.version,
                              stat.mtime / 1000)
        return states

    def wait_states(self, topic: str, assignment: dict[int, list[int]], leader_of, what: str,
                    timeout_s: float) -> dict[int, State]:
        """Until every partition is led by leader_of(p) with every replica in the ISR."""
        deadline = time.monotonic() + timeout_s
        pending = dict(assignment)
        done: dict[int, State] = {}
        while True:
            states = self.states(topic, pending)
            for p, state in states.items():
                if (state is not None and state.leader == leader_of(p)
                        and sorted(state.isr) == sorted(assignment[p])):
                    done[p] = state
                    del pending[p]
            if not pending:
                return done
            if time.monotonic() > deadline:
                sample = {p: states[p] for p in list(pending)[:3]}
                raise RuntimeError(f"{what}: {len(pending)} of {len(assignment)} partitions not ready "
                                   f"after {timeout_s:.0f} s, e.g. {sample}")
            time.sleep(0.25 if len(pending) < 2000 else 1.0)

    def wait_applied(self, topic: str, assignment: dict[int, list[int]], what: str,
                     timeout_s: float) -> None:
        """Until every replica has applied the leader epoch now in ZooKeeper: the leader answers
        ListOffsets at that epoch, each follower NOT_LEADER_OR_FOLLOWER at that epoch. (The
        controller writes ZooKeeper before it sends LeaderAndIsr; a broker still working
        through a big one would delay the next measurement.)"""
        deadline = time.monotonic() + timeout_s
        states = self.states(topic, assignment)
        pending = {b: sorted(p for p, r in assignment.items() if b in r)
                   for b in {b for r in assignment.values() for b in r}}
        while True:
            for broker_id, parts in list(pending.items()):
                broker = self.broker(broker_id)
                # A spread sample first: asking about thousands of partitions every
                # poll would load a broker that is still busy creating them.
                sample = parts[::max(len(parts) // 16, 1)] + parts[-1:]
                if len(parts) > 64 and not self._applied(broker, topic, sample, states):
                    continue
                answers = list_offsets(broker.host, broker.port, topic, parts)
                left = []
                for p in parts:
                    error, _, epoch = answers[p]
                    expected = 0 if states[p].leader == broker_id else NOT_LEADER_OR_FOLLOWER
                    if error != expected or epoch != states[p].leader_epoch:
                        left.append(p)
                if left:
                    pending[broker_id] = left
                else:
                    del pending[broker_id]
            if not pending:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what}: brokers have not applied the leader epochs of "
                                   f"{ {b: len(p) for b, p in pending.items()} } partitions")
            time.sleep(0.25 if len(assignment) <= 1000 else 1.0)

    def _applied(self, broker, topic: str, parts: list[int], states: dict[int, State]) -> bool:
        answers = list_offsets(broker.host, broker.port, topic, parts)
        return all(answers[p][0] == (0 if states[p].leader == broker.id else NOT_LEADER_OR_FOLLOWER)
                   and answers[p][2] == states[p].leader_epoch for p in parts)

    def wait_quiet(self, topic: str, assignment: dict[int, list[int]], timeout_s: float) -> None:
        """Every partition led by its first replica with every replica in the ISR, applied by every
        broker, no ISR change notification waiting for the controller, and nothing changing for a
        few seconds. (After creating thousands of partitions the brokers are busy long enough for
        followers to drop out of ISRs and come back, and the controller works through one
        notification per change.)"""
        deadline = time.monotonic() + timeout_s
        settle_s = min(max(len(assignment) / 1000, 1.0), 10.0)
        while True:
            self.wait_states(topic, assignment, lambda p: assignment[p][0], "steady state", timeout_s)
            self.wait_applied(topic, assignment, "steady state", timeout_s)
            while self.zk.get_children("/isr_change_notification"):
                if time.monotonic() > deadline:
                    raise RuntimeError("steady state: ISR change notifications are not being consumed")
                time.sleep(0.5)
            versions = {p: s.version for p, s in self.states(topic, assignment).items()}
            time.sleep(settle_s)
            again = self.states(topic, assignment)
            if all(again[p].version == v for p, v in versions.items()):
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"steady state: partition states still changing after {timeout_s:.0f} s")

    def elect_preferred(self, topic: str, assignment: dict[int, list[int]], timeout_s: float) -> int:
        """Preferred replica election until every partition is led by its first replica; returns how
        many elections that took. The controller elects from its own view of the ISRs, which lags
        ZooKeeper while it works through ISR change notifications: a partition whose preferred
        replica it does not see in the ISR yet is skipped and the trigger deleted, so ask again."""
        deadline = time.monotonic() + timeout_s
        for attempt in range(1, 31):
            states = self.states(topic, assignment)
            moving = [p for p, r in assignment.items() if states[p].leader != r[0]]
            if not moving:
                return attempt - 1
            self.preferred_election(topic, moving)
            while self.zk.exists("/admin/preferred_replica_election") is not None:
                if time.monotonic() > deadline:
                    raise RuntimeError("preferred election: the controller did not finish in time")
                time.sleep(0.25)
        raise RuntimeError(f"preferred election: {len(moving)} partitions still not led by their first replica")

    def preferred_election(self, topic: str, partitions) -> None:
        from kafkactl.cluster.zk import codecs

        path = "/admin/preferred_replica_election"
        deadline = time.monotonic() + ZK_TIMEOUT_S
        while self.zk.exists(path) is not None:     # an earlier one still running
            if time.monotonic() > deadline:
                raise RuntimeError(f"{path} was not removed by the controller")
            time.sleep(0.1)
        self.zk.create(path, codecs.encode_partition_list([(topic, p) for p in partitions]))

    def restore_leader(self, topic: str, assignment: dict[int, list[int]], timeout_s: float) -> dict:
        """Restart what is down, wait for full ISRs, give every partition back to its first replica."""
        t0 = time.monotonic()
        self.status = self.cluster.up(timeout_s=timeout_s)
        t_up = time.monotonic()
        states = self.states(topic, assignment)
        current = {p: s.leader for p, s in states.items()}
        self.wait_states(topic, assignment, lambda p: current[p], "ISR expansion after restart", timeout_s)
        t_isr = time.monotonic()
        elections = self.elect_preferred(topic, assignment, timeout_s)
        self.wait_applied(topic, assignment, "preferred election", timeout_s)
        t_led = time.monotonic()
        return {"restart_s": t_up - t0, "isr_full_s": t_isr - t_up, "preferred_s": t_led - t_isr,
                "preferred_elections": elections}

    def end_offsets(self, topic: str, partitions) -> dict[int, int]:
        """Log end offsets (ListOffsets latest) from each partition's leader."""
        states = self.states(topic, partitions)
        by_leader: dict[int, list[int]] = {}
        for p, state in states.items():
            by_leader.setdefault(state.leader, []).append(p)
        offsets = {}
        for leader, parts in by_leader.items():
            broker = self.broker(leader)
            answers = list_offsets(broker.host, broker.port, topic, parts)
            for p, (error, offset, _) in answers.items():
                if error:
                    raise RuntimeError(f"ListOffsets {topic}-{p} at broker {leader}: error {error}")
                offsets[p] = offset
        return offsets


def broker_client(host: str, port: int):
    from kafkactl.cluster.broker.broker_client import BrokerClient

    return BrokerClient(host, port, "bench-replication", request_timeout_s=60.0)


def _list_offsets_request(topic: str, partitions):
    from kio.schema.list_offsets.v7 import request as lo

    return lo.ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=(
        lo.ListOffsetsTopic(name=topic, partitions=tuple(
            lo.ListOffsetsPartition(partition_index=p, current_leader_epoch=-1, timestamp=-1)
            for p in partitions)),))


def encoded_list_offsets(topic: str, partitions):
    """The same request as list_offsets sends, encoded once, to send later at no cost."""
    from kio.serial import entity_writer

    from kafkactl.cluster.protocol.control_writer import EncodedRequest

    request = _list_offsets_request(topic, partitions)
    body = io.BytesIO()
    entity_writer(type(request))(body, request)
    return EncodedRequest(request.__api_key__, request.__version__, request.__flexible__, body.getvalue())


def list_offsets(host: str, port: int, topic: str, partitions, client=None,
                 encoded=None) -> dict[int, tuple[int, int, int]]:
    """{partition: (error code, latest offset, leader epoch)} in one ListOffsets v7
    request (`encoded`: that request from encoded_list_offsets)."""
    from kio.schema.list_offsets.v7 import response as lo_response

    own = client is None
    client = client or broker_client(host, port)
    try:
        request = encoded if encoded is not None else _list_offsets_request(topic, partitions)
        response = client.request(request, response_cls=lo_response.ListOffsetsResponse)
    finally:
        if own:
            client.close()
    return {r.partition_index: (int(r.error_code), int(r.offset), int(r.leader_epoch))
            for t in response.topics for r in t.partitions}


def raise_nofile() -> str:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = min(WANTED_NOFILE, hard) if hard != resource.RLIM_INFINITY else WANTED_NOFILE
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
        return f"open files: soft limit raised from {soft} to {wanted} (hard limit {hard})"
    return f"open files: soft limit {soft} (hard {hard}), not changed"


def open_fds(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return -1


def rss_mib(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return -1.0


def med(values) -> float:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else float("nan")


def ms(seconds: float) -> str:
    return "–" if seconds != seconds else f"{seconds * 1000:,.0f}"


def runs_ms(values) -> str:
    return " ".join(ms(v) for v in values)


# ---- 1. failover -------------------------------------------------------------------

@dataclass
class FailoverRun:
    partitions: int
    detection_s: float          # kill -> /brokers/ids/L deleted (watch)
    election_s: float           # deleted -> the last election write (state znode mtime, see below)
    serving_s: float            # deleted -> every partition answered ListOffsets at the new leader
    first_write_s: float        # deleted -> the first one changed
    controller_noticed_s: float | None  # deleted -> controller logged the new broker list
    leader_and_isr_sent_s: float | None  # deleted -> controller logged LeaderAndIsr to the new leader
    leader_log_first_s: float | None    # deleted -> new leader began applying LeaderAndIsr
    leader_log_last_s: float | None     # ... and logged "leader of N partitions" for all of them
    probe_requests: int
    restore: dict = field(default_factory=dict)
    broker_fds: int = 0
    broker_rss_mib: float = 0.0
    date: str = ""
    election_watch_s: float | None = None   # runs before 2026-11-22 13:00 only: seen through data watches
    idle_cores: dict = field(default_factory=dict)   # each broker's CPU before the kill, nothing to do
    controller_step: str = ""   # the controller's own account of the election step (its log line)


def setup_timeout_s(n: int) -> float:
    return max(120.0, n * 0.2)    # 10,000 partitions took ~550 s to create here


def fds_after_restart(n: int) -> int:
    """A broker restarted after kill -9 keeps 3 files open per partition (segment,
    offset index, time index: recovery rewrites the indexes), against 1 after creation."""
    return 3 * n + 200


def failover_bench(root: Path, cases: list[tuple[int, int]], log=print,
                   profile_dir: Path | None = None) -> dict:
    results: dict[int, list[FailoverRun]] = {}
    setup: dict[int, dict] = {}
    soft_nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    for n, runs in cases:
        # Between runs the killed broker restarts; when its files would not fit
        # the limit, every run gets a new cluster instead (slower, same measure).
        restarts_fit = fds_after_restart(n) <= soft_nofile
        if runs > 1 and not restarts_fit:
            log(f"failover N={n}: a new cluster per run: restarting the killed broker would need ~"
                f"{fds_after_restart(n):,} open files, over the limit of {soft_nofile:,}")
        results[n] = []
        clusters = 1 if restarts_fit else runs
        for cluster_index in range(clusters):
            per_cluster = runs if restarts_fit else 1
            bc = BenchCluster(root / f"failover-{n}-{cluster_index}",
                              {"zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS)})
            try:
                _failover_in_cluster(bc, n, per_cluster, runs, results[n], setup, log, profile_dir)
            finally:
                bc.close()
    return {"runs": results, "setup": setup, "commit": code_version()}


def _failover_in_cluster(bc: BenchCluster, n: int, per_cluster: int, runs: int, results: list[FailoverRun],
                         setup: dict[int, dict], log, profile_dir: Path | None) -> None:
    leader, follower, controller = bc.roles()
    topic = f"failover-{n}"
    assignment = {p: [leader, follower, controller] for p in range(n)}
    t0 = time.monotonic()
    bc.create_topic(topic, assignment, {"min.insync.replicas": "2"})
    bc.wait_states(topic, assignment, lambda p: leader, "topic creation", setup_timeout_s(n))
    t_zk = time.monotonic()
    bc.wait_applied(topic, assignment, "topic creation", setup_timeout_s(n))
    setup[n] = {"create_zk_s": t_zk - t0, "create_s": time.monotonic() - t0, "leader": leader,
                "follower": follower, "controller": controller}
    log(f"failover N={n}: topic in ZooKeeper after {setup[n]['create_zk_s']:.1f} s, applied by every "
        f"broker after {setup[n]['create_s']:.1f} s (leader {leader}, controller {controller}, "
        f"new leader will be {follower})")
    for index in range(per_cluster):
        if index:
            restore = bc.restore_leader(topic, assignment, setup_timeout_s(n))
            log(f"  restored: restart {restore['restart_s']:.1f} s, ISR full "
                f"{restore['isr_full_s']:.1f} s, preferred election {restore['preferred_s']:.1f} s")
            results[-1].restore = restore
        run = failover_once(bc, topic, n, leader, follower, controller, profile_dir)
        results.append(run)
        log(f"  run {len(results)}/{runs}: detection {ms(run.detection_s)} ms, election "
            f"{ms(run.election_s)} ms, serving {ms(run.serving_s)} ms after the znode deletion")
        if run.controller_step:
            log(f"    controller: {run.controller_step}")


def failover_once(bc: BenchCluster, topic: str, n: int, leader: int, follower: int,
                  controller: int, profile_dir: Path | None = None) -> FailoverRun:
    assignment = {p: [leader, follower, controller] for p in range(n)}
    bc.refresh()
    new_leader = bc.broker(follower)
    profilers = start_profilers(profile_dir, f"failover-{n}", {"new-leader": new_leader.pid,
                                                               "controller": bc.broker(controller).pid})

    # No watches on the partitions' state znodes: ten thousand watch events,
    # sent by ZooKeeper and handled here while the controller writes, would
    # take CPU from the cluster being measured. Each write's time is its
    # znode's mtime instead (ZooKeeper's clock, this machine's).
    for attempt in range(10):      # until L leads every partition with a full ISR
        bc.wait_quiet(topic, assignment, setup_timeout_s(n))
        idle = brokers_cpu(bc, IDLE_WINDOW_S)
        before = bc.states(topic, range(n))
        if all(s is not None and s.leader == leader and len(s.isr) == 3 for s in before.values()):
            break
    else:
        stop_profilers(profilers)
        raise RuntimeError(f"broker {leader} does not keep leading every partition of {topic} with a full ISR")
    # The probe's request for every partition, encoded before the clock starts:
    # what the client spends building it is not the cluster's failover.
    probe_all = encoded_list_offsets(topic, range(n))
    fds, rss = open_fds(bc.broker(leader).pid), rss_mib(bc.broker(leader).pid)
    deleted = threading.Event()
    deleted_at: list[float] = []

    def on_registration(event) -> None:
        if event.type == "DELETED":
            deleted_at.append(time.time())
            deleted.set()

    if bc.zk.exists(f"/brokers/ids/{leader}", watch=on_registration) is None:
        raise RuntimeError(f"broker {leader} is not registered")
    controller_log, leader_log = bc.broker(controller).log_file, bc.broker(follower).log_file
    controller_offset, leader_offset = log_size(controller_log), log_size(leader_log)
    client = broker_client(new_leader.host, new_leader.port)
    client.request(_api_versions())             # connected before the clock starts
    try:
        t_kill = time.time()
        bc.cluster.kill_broker(leader)
        if not deleted.wait(60):
            raise RuntimeError(f"/brokers/ids/{leader} was not deleted within 60 s of the kill")
        t_deleted = deleted_at[0]
        expected_epoch = {p: s.leader_epoch + 1 for p, s in before.items()}
        t_served, requests = probe_serving(client, topic, n, expected_epoch, probe_all, deadline_s=300.0)
    finally:
        client.close()
        stop_profilers(profilers)
    after = bc.states(topic, range(n))
    wrong = [p for p, s in after.items()
             if s is None or s.leader != follower or leader in s.isr or s.leader_epoch != expected_epoch[p]]
    if wrong:
        raise RuntimeError(f"after the failover {len(wrong)} partitions are not led by {follower} at the "
                           f"next epoch (e.g. {after[wrong[0]]})")
    # Exactly one write since `before` (the election's), so the mtime is its time.
    rewritten = [p for p in range(n) if after[p].version != before[p].version + 1]
    early = [p for p in range(n) if after[p].mtime_s < t_kill]
    if rewritten or early:
        raise RuntimeError(f"{len(rewritten)} partition states written more than once and {len(early)} "
                           f"before the kill (ISR changes?): the write times are not the election's")
    controller_lines = read_log(controller_log, controller_offset)
    leader_lines = read_log(leader_log, leader_offset)
    noticed = first(controller_lines, rf"live brokers now \[(?!.*\b{leader}\b)")
    sent = matching(controller_lines, rf"LeaderAndIsr to broker {follower} \(")
    step = first(controller_lines, r"step of \d+ writes: ")
    # One line per LeaderAndIsr applied: "leader of N partitions (took T ms: parts): <topic>-..."
    became = [line for line in matching(leader_lines, r"leader of \d+ partitions \(took [\d.]+ ms[^)]*\): ")
              if f" {topic}-" in line.message]
    # The clock starts when the deletion is noticed: by our exists-watch or by
    # the controller (its log line), whichever came first. Under load our
    # watch can fire after the controller has already written states.
    if noticed is not None and noticed.t < t_deleted:
        t_deleted = noticed.t
    rel = lambda t: None if t is None else t - t_deleted  # noqa: E731
    written = {p: after[p].mtime_s for p in range(n)}     # ZooKeeper's clock, ms resolution
    return FailoverRun(
        partitions=n,
        detection_s=t_deleted - t_kill,
        election_s=max(written.values()) - t_deleted,
        serving_s=t_served - t_deleted,
        first_write_s=min(written.values()) - t_deleted,
        idle_cores=idle,
        controller_noticed_s=rel(noticed.t if noticed else None),
        leader_and_isr_sent_s=rel(sent[-1].t if sent else None),
        leader_log_first_s=rel(became[0].t - took_s(became[0].message) if became else None),
        leader_log_last_s=rel(became[-1].t if sum(led_count(x.message) for x in became) >= n else None),
        probe_requests=requests,
        controller_step=step.message.split(": ", 1)[1] if step else "",
        broker_fds=fds,
        broker_rss_mib=rss,
        date=now_text(),
    )


def took_s(text: str) -> float:
    return float(re.search(r"\(took ([\d.]+) ms", text).group(1)) / 1000


def led_count(text: str) -> int:
    return int(re.search(r"leader of (\d+) partitions", text).group(1))


def code_version() -> str:
    """The commit measured (and whether cluster/ had uncommitted changes)."""
    try:
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "cluster"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "?"
    return f"{head}{' + uncommitted changes in cluster/' if dirty else ''}" if head else "?"


IDLE_WINDOW_S = 3.0


def brokers_cpu(bc: BenchCluster, seconds: float) -> dict[str, float]:
    """Cores each broker process uses over `seconds` (the cluster idle: no client traffic)."""
    pids = {str(b.id): b.pid for b in bc.status.brokers if b.pid}
    before = {b: throughput.process_cpu_s(pid) for b, pid in pids.items()}
    t0 = time.monotonic()
    time.sleep(seconds)
    elapsed = time.monotonic() - t0
    return {b: round((throughput.process_cpu_s(pid) - before[b]) / elapsed, 3) for b, pid in pids.items()}


def now_text() -> str:
    return datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")


def start_profilers(profile_dir: Path | None, name: str, pids: dict[str, int]) -> list[subprocess.Popen]:
    """py-spy record (raw, 50 Hz, every thread) of the given processes, if asked for."""
    if profile_dir is None:
        return []
    profile_dir.mkdir(parents=True, exist_ok=True)
    py_spy = Path(sys.executable).parent / "py-spy"
    profilers = []
    for role, pid in pids.items():
        out = profile_dir / f"{name}-{role}-{pid}-{int(time.time())}.txt"
        profilers.append(subprocess.Popen(
            [str(py_spy), "record", "--pid", str(pid), "--rate", "50", "--format", "raw", "--threads",
             "--nonblocking", "--output", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    time.sleep(1.0)   # attached before anything happens
    return profilers


def stop_profilers(profilers: list[subprocess.Popen]) -> None:
    for profiler in profilers:
        profiler.send_signal(signal.SIGINT)
    for profiler in profilers:
        try:
            profiler.wait(timeout=30)
        except subprocess.TimeoutExpired:
            profiler.kill()
            profiler.wait()


def _api_versions():
    from kio.schema.api_versions.v0 import request as av

    return av.ApiVersionsRequest()


def probe_serving(client, topic: str, n: int, expected_epoch: dict[int, int], every,
                  deadline_s: float) -> tuple[float, int]:
    """Wall-clock time at which the last partition answered ListOffsets without error
    at its new epoch, and how many requests that took. A spread sample of 16
    partitions is asked every 10 ms; only once all of them answer is every
    partition asked, with `every` (the request for all n, encoded beforehand),
    so the probe costs the new leader little while it takes over."""
    pending = set(range(n))
    step = max(n // 15, 1)
    sample = {min(p, n - 1) for p in range(0, n + step, step)}
    deadline = time.monotonic() + deadline_s
    requests = 0
    while pending:
        asked = sorted(sample & pending)
        answers = list_offsets(client.host, client.port, topic, asked, client=client,
                               encoded=None if asked else every)
        requests += 1
        t = time.time()
        for p, (error, _, epoch) in answers.items():
            if error == 0 and epoch >= expected_epoch[p]:
                pending.discard(p)
        if not pending:
            return t, requests
        if time.monotonic() > deadline:
            raise RuntimeError(f"{len(pending)} partitions still not served by the new leader")
        time.sleep(0.01)
    raise AssertionError("unreachable")


def failover_table(data: dict) -> list[str]:
    lines = [
        "| partitions led by the killed broker | runs | detection: kill → znode deleted "
        "| election: → every state znode names the new leader | serving: → every partition answers "
        "ListOffsets at the new leader | aim: served < 1 s after the deletion | measured |",
        "|---:|---:|---:|---:|---:|---|---|",
    ]  # "measured": date and commit of the last run
    for n, runs in data["runs"].items():
        serving = med(r.serving_s for r in runs)
        verdict = "met" if serving < 1.0 else f"not met ({serving:.1f} s)"
        lines.append(f"| {n:,} | {len(runs)} | {ms(med(r.detection_s for r in runs))} ms "
                     f"({runs_ms(r.detection_s for r in runs)}) "
                     f"| {ms(med(r.election_s for r in runs))} ms ({runs_ms(r.election_s for r in runs)}) "
                     f"| {ms(serving)} ms ({runs_ms(r.serving_s for r in runs)}) | {verdict} "
                     f"| {runs[-1].date}, {data.get('commits', {}).get(n, data.get('commit', '?'))} |")
    return lines


def idle_text(runs: list[FailoverRun]) -> str:
    brokers = sorted({b for r in runs for b in r.idle_cores})
    if not brokers:
        return "–"
    return " ".join(f"{med(r.idle_cores.get(b) for r in runs):.2f}" for b in brokers)


def failover_steps_table(data: dict) -> list[str]:
    lines = [
        "| partitions | controller logs the new broker list | first state znode written "
        "| last state znode written | LeaderAndIsr to the new leader logged | new leader starts / ends "
        "applying it | every partition answers | ms per partition at the new leader "
        "| probe requests |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for n, runs in data["runs"].items():
        per_partition = med((r.leader_log_last_s - r.leader_log_first_s) / n for r in runs
                            if r.leader_log_last_s is not None and r.leader_log_first_s is not None)
        lines.append(
            f"| {n:,} | {ms(med(r.controller_noticed_s for r in runs))} | {ms(med(r.first_write_s for r in runs))} "
            f"| {ms(med(r.election_s for r in runs))} | {ms(med(r.leader_and_isr_sent_s for r in runs))} "
            f"| {ms(med(r.leader_log_first_s for r in runs))} / {ms(med(r.leader_log_last_s for r in runs))} "
            f"| {ms(med(r.serving_s for r in runs))} | {per_partition * 1000:.2f} "
            f"| {med(r.probe_requests for r in runs):.0f} |")
    return lines


def failover_setup_table(data: dict) -> list[str]:
    lines = ["| partitions | topic in ZooKeeper / applied by every broker | killed broker's open files / RSS "
             "| CPU of the idle brokers (cores, per broker) | restart after kill -9 "
             "| until its replicas are back in every ISR | preferred election |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    for n, runs in data["runs"].items():
        restores = [r.restore for r in runs if r.restore]
        restore = lambda key: f"{med(x[key] for x in restores):.1f} s" if restores else "–"  # noqa: E731
        setup = data["setup"][n]
        lines.append(f"| {n:,} | {setup.get('create_zk_s', float('nan')):.1f} s / {setup['create_s']:.1f} s "
                     f"| {med(r.broker_fds for r in runs):,.0f} / {med(r.broker_rss_mib for r in runs):,.0f} MiB "
                     f"| {idle_text(runs)} "
                     f"| {restore('restart_s')} | {restore('isr_full_s')} | {restore('preferred_s')} |")
    return lines


# ---- 2. replicated produce ----------------------------------------------------------

class BrokersWindow(throughput.CpuWindow):
    """CPU of all the brokers together (bench/throughput.py's window counts one)."""

    def __init__(self, pids: list[int]) -> None:
        super().__init__(None)
        self.pids = pids

    def _brokers(self) -> float:
        return sum(throughput.process_cpu_s(pid) for pid in self.pids)

    def start(self) -> None:
        super().start()
        self.brokers0 = self._brokers()

    def stop(self, client_cpu_s: float, **sample) -> throughput.Sample:
        brokers = self._brokers() - self.brokers0
        result = super().stop(client_cpu_s + brokers, **sample)   # "other" excludes the brokers
        result.client_cpu_s = client_cpu_s
        result.broker_cpu_s = brokers
        return result


@dataclass
class ProduceCase:
    name: str
    replicas: tuple[tuple[int, ...], ...]     # per partition; 1-based broker ids
    min_insync: int
    kind: str = "produce"


def produce_cases() -> list[ProduceCase]:
    return [
        ProduceCase("RF 3, 1 partition", ((1, 2, 3),), 2),
        ProduceCase("RF 3, 3 partitions (one led by each broker)", ((1, 2, 3), (2, 3, 1), (3, 1, 2)), 2),
        ProduceCase("RF 1, 1 partition (no replication, same cluster)", ((1,),), 1),
    ]


def kcat_argv(bootstrap: str, topic: str, payload: Path, partitions: int) -> list[str]:
    argv = throughput.produce_argv(bootstrap, topic, payload, -1)
    if partitions > 1:                       # bench/throughput.py writes to -p 0
        argv[argv.index("-p") + 1] = "-1"    # librdkafka's partitioner
    return argv


def produce_bench(root: Path, runs: int, log=print) -> dict:
    bc = BenchCluster(root / "produce", {})
    try:
        pids = [b.pid for b in bc.status.brokers]
        log_dir = Path(bc.broker(1).log_dirs[0])
        work = root / "produce-work"
        work.mkdir()
        if os.stat(work).st_dev != os.stat(log_dir).st_dev:
            raise RuntimeError(f"{work} and the log dir {log_dir} are on different file systems")
        payload = work / "payload-1024.txt"
        throughput.write_payload(payload, PRODUCE_RECORD_BYTES, PRODUCE_RECORDS)
        figures: dict[str, throughput.Figure] = {}

        def figure(name: str, kind: str, limit: str | None = None) -> throughput.Figure:
            if name not in figures:
                figures[name] = throughput.Figure(name, kind, limit=limit)
            return figures[name]

        isr_changes: dict[str, list[int]] = {}
        counter = [0]

        def produce_once(case: ProduceCase) -> throughput.Sample:
            counter[0] += 1
            topic = f"produce-{counter[0]}"
            assignment = {p: list(r) for p, r in enumerate(case.replicas)}
            bc.create_topic(topic, assignment, {"min.insync.replicas": str(case.min_insync)})
            before = bc.wait_states(topic, assignment, lambda p: assignment[p][0], "produce topic", 60)
            bc.wait_applied(topic, assignment, "produce topic", 60)
            sample, stderr = throughput.run_timed(
                kcat_argv(bc.status.bootstrap_servers, topic, payload, len(assignment)),
                BrokersWindow(pids), bytes=PRODUCE_RECORD_BYTES * PRODUCE_RECORDS, records=PRODUCE_RECORDS)
            delivered = sum(bc.end_offsets(topic, assignment).values())
            if delivered != PRODUCE_RECORDS:
                raise RuntimeError(f"produce to {topic}: {delivered} of {PRODUCE_RECORDS} records arrived\n{stderr}")
            after = bc.states(topic, assignment)
            isr_changes.setdefault(case.name, []).append(
                sum(after[p].version - before[p].version for p in assignment))
            return sample

        log("produce: warming up")
        produce_once(produce_cases()[0])
        cases = produce_cases()
        limits = work / "limits"
        limits.mkdir()
        for index in range(runs):
            t0 = time.monotonic()
            window = throughput.CpuWindow(None)
            figure("disk write, page cache", "limit").samples.append(
                throughput.disk_write(limits / f"write-{index}", throughput.DISK_WRITE_BYTES, False, window))
            figure("loopback TCP, 1 MiB sends", "limit").samples.append(
                throughput.loopback(throughput.LOOPBACK_BYTES, window))
            shift = index % len(cases)
            for case in cases[shift:] + cases[:shift]:
                figure(case.name, "produce", "disk write, page cache").samples.append(produce_once(case))
            log(f"produce: round {index + 1}/{runs} done in {time.monotonic() - t0:.1f} s")
        rate = figures[cases[0].name].median("records_per_s")
        latency: dict[str, list[dict]] = {}
        for index in range(runs):
            for load in LATENCY_LOADS:
                run = latency_once(bc, f"latency-{load}-{index}", rate * load, LATENCY_LINGER_MS)
                latency.setdefault(str(load), []).append(run)
                log(f"produce: latency run {index + 1}/{runs} at {load:.0%} load: {run['sent_per_s']:,.0f} "
                    f"records/s, p50 {run['p50_ms']:.1f} ms, p99 {run['p99_ms']:.1f} ms")
        commit = []
        for rf, records, in_flight in COMMIT_CASES:
            commit.append(commit_round_trips(bc, rf, records, in_flight))
            log(f"produce: acks=-1 requests, {in_flight} in flight, RF {rf}, {records} records: "
                f"{commit[-1]['requests_per_s']:,.0f} requests/s, p50 {commit[-1]['p50_ms']:.2f} ms")
        return {"figures": figures, "latency": latency, "full_rate": rate, "isr_changes": isr_changes,
                "commit": commit, "date": now_text(), "code": code_version()}
    finally:
        bc.close()


def commit_round_trips(bc: BenchCluster, rf: int, records: int, in_flight: int) -> dict:
    """Produce requests (acks=-1) on one connection to the leader, `in_flight` of them sent ahead
    of their answers: how many one producer connection commits. With 1 in flight each waits for the
    last answer (one replication round trip per request); with more, the leader appends the next
    while earlier ones wait for their ISR (network.py), answering in order."""
    import datetime as dt
    import socket
    import struct

    from kio.schema.produce.v9 import request as produce9

    from kafkactl.cluster.broker.broker_client import decode_response, encode_request
    from kafkactl.cluster.broker.network import recv_exactly_into
    from kafkactl.cluster.protocol.codec import response_class
    from kafkactl.cluster.protocol.record_batch import build_batch

    topic = f"commit-rf{rf}-{records}-{in_flight}"
    assignment = {0: [1, 2, 3][:rf]}
    bc.create_topic(topic, assignment, {"min.insync.replicas": str(min(rf, 2))})
    bc.wait_states(topic, assignment, lambda p: 1, "commit topic", 60)
    bc.wait_applied(topic, assignment, "commit topic", 60)
    value = os.urandom(PRODUCE_RECORD_BYTES)
    batch = build_batch([(None, value, None, int(time.time() * 1000))] * records)
    request = produce9.ProduceRequest(
        transactional_id=None, acks=-1, timeout=dt.timedelta(seconds=30),
        topic_data=(produce9.TopicProduceData(name=topic, partition_data=(
            produce9.PartitionProduceData(index=0, records=batch),)),))
    leader = bc.broker(1)
    connection = socket.create_connection((leader.host, leader.port), timeout=60.0)
    connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sent_at: list[float] = []
    times: list[float] = []
    prefix = memoryview(bytearray(4))

    def answer() -> None:
        recv_exactly_into(connection, prefix)
        frame = memoryview(bytearray(struct.unpack(">i", prefix)[0]))
        recv_exactly_into(connection, frame)
        correlation_id = struct.unpack_from(">i", frame)[0]
        times.append(time.perf_counter() - sent_at[correlation_id])
        response = decode_response(bytes(frame), response_class(0, 9), correlation_id)
        error = response.responses[0].partition_responses[0].error_code
        if error != 0:
            raise RuntimeError(f"produce to {topic}: error {error}")

    try:
        started = time.perf_counter()
        end = started + COMMIT_SECONDS
        waiting = 0
        while True:
            while waiting < in_flight and time.perf_counter() < end:
                sent_at.append(time.perf_counter())
                connection.sendall(encode_request(request, len(sent_at) - 1, "bench-commit"))
                waiting += 1
            if waiting == 0:
                break
            answer()
            waiting -= 1
        elapsed = time.perf_counter() - started
    finally:
        connection.close()
    times.sort()
    return {"rf": rf, "records": records, "in_flight": in_flight, "requests_per_s": len(times) / elapsed,
            "mb_per_s": len(times) * records * PRODUCE_RECORD_BYTES / elapsed / MB,
            "p50_ms": times[len(times) // 2] * 1000, "p99_ms": times[int(len(times) * 0.99)] * 1000,
            "max_ms": times[-1] * 1000, "requests": len(times)}


def latency_once(bc: BenchCluster, topic: str, rate: float, linger_ms: int) -> dict:
    """confluent-kafka at `rate` records/s for LATENCY_SECONDS: each record's time from produce()
    to its delivery report (librdkafka's message latency, read in the callback)."""
    from confluent_kafka import Producer

    assignment = {0: [1, 2, 3]}
    bc.create_topic(topic, assignment, {"min.insync.replicas": "2"})
    bc.wait_states(topic, assignment, lambda p: 1, "latency topic", 60)
    bc.wait_applied(topic, assignment, "latency topic", 60)
    latencies: list[float] = []
    errors: list[str] = []
    value = os.urandom(PRODUCE_RECORD_BYTES)
    warm = [True]

    def on_delivery(error, message) -> None:
        if error is not None:
            errors.append(str(error))
        elif not warm[0]:
            latencies.append(message.latency())

    producer = Producer({
        "bootstrap.servers": bc.status.bootstrap_servers, "acks": "all", "linger.ms": linger_ms,
        "compression.type": "none", "enable.idempotence": False, "on_delivery": on_delivery,
        "queue.buffering.max.messages": 1_000_000, "queue.buffering.max.kbytes": 1_048_576,
    })
    total = int(rate * (LATENCY_SECONDS + LATENCY_WARMUP_S))
    warm_count = int(rate * LATENCY_WARMUP_S)
    late_max = 0.0
    cpu0 = time.process_time()
    start = time.perf_counter()
    sent = 0
    while sent < total:
        now = time.perf_counter()
        due = min(int((now - start) * rate) + 1, total)
        if due - sent > 1:
            late_max = max(late_max, now - (start + sent / rate))
        while sent < due:
            if sent == warm_count:
                producer.poll(0)
                warm[0] = False
            producer.produce(topic, value, partition=0)
            sent += 1
        producer.poll(0)
        pause = start + sent / rate - time.perf_counter()
        if pause > 0:
            time.sleep(min(pause, 0.001))
    elapsed = time.perf_counter() - start
    remaining = producer.flush(30)
    cpu = time.process_time() - cpu0
    if remaining or errors:
        raise RuntimeError(f"latency run: {remaining} undelivered, {len(errors)} errors, e.g. {errors[:3]}")
    latencies.sort()
    return {
        "target_per_s": rate, "sent_per_s": total / elapsed, "mb_per_s": total * PRODUCE_RECORD_BYTES / elapsed / MB,
        "records": len(latencies), "p50_ms": latencies[len(latencies) // 2] * 1000,
        "p99_ms": latencies[int(len(latencies) * 0.99)] * 1000, "max_ms": latencies[-1] * 1000,
        "late_max_ms": late_max * 1000, "client_cpu_s": cpu, "linger_ms": linger_ms,
    }


def produce_table(data: dict) -> list[str]:
    figures = data["figures"]
    copies = {case.name: len(case.replicas[0]) for case in produce_cases()}
    lines = ["| figure | median MB/s | median records/s | runs (MB/s) | vs page-cache write limit "
             "| bytes written to the page cache (× replicas) vs that limit "
             "| kcat CPU s/GB | brokers' CPU s/GB (all 3) | other load (cores) |",
             "|---|---:|---:|---|---:|---:|---:|---:|---:|"]
    for f in figures.values():
        mb = f.median("mb_per_s")
        records = f"{f.median('records_per_s'):,.0f}" if f.kind != "limit" else ""
        ratio = written = client = brokers = ""
        if f.limit:
            limit = figures[f.limit].median("mb_per_s")
            ratio = f"{mb / limit:.2f}"
            written = f"{copies.get(f.name, 1) * mb / limit:.2f}"
            client = f"{f.cpu_per_gb('client_cpu_s'):.2f}"
            brokers = f"{f.cpu_per_gb('broker_cpu_s'):.2f}"
        other = statistics.median(s.other_cpu_s / s.seconds for s in f.samples)
        lines.append(f"| {f.name} | {mb:,.0f} | {records} | {' '.join(f'{s.mb_per_s:.0f}' for s in f.samples)} "
                     f"| {ratio} | {written} | {client} | {brokers} | {other:.2f} |")
    return lines


def produce_cpu_table(data: dict) -> list[str]:
    lines = ["| figure | kcat cores | brokers' cores | others' cores | free cores | ISR changes during the runs |",
             "|---|---:|---:|---:|---:|---|"]
    cores = len(os.sched_getaffinity(0))
    for f in data["figures"].values():
        if f.kind == "limit":
            continue
        client = statistics.median(s.client_cpu_s / s.seconds for s in f.samples)
        brokers = statistics.median(s.broker_cpu_s / s.seconds for s in f.samples)
        other = statistics.median(s.other_cpu_s / s.seconds for s in f.samples)
        changes = " ".join(str(c) for c in data["isr_changes"].get(f.name, [])[-len(f.samples):])
        lines.append(f"| {f.name} | {client:.2f} | {brokers:.2f} | {other:.2f} "
                     f"| {max(cores - client - brokers - other, 0):.2f} | {changes} |")
    return lines


def latency_table(data: dict) -> list[str]:
    lines = ["| load (of the kcat median) | target records/s | achieved records/s (MB/s) | p50 | p99 | max "
             "| runs p50 / p99 (ms) | loop late by at most | client CPU (cores) |",
             "|---|---:|---:|---:|---:|---:|---|---:|---:|"]
    for load, runs in sorted(data["latency"].items(), key=lambda item: -float(item[0])):
        per_run = " ".join(f"{r['p50_ms']:,.1f}/{r['p99_ms']:,.1f}" for r in runs)
        lines.append(
            f"| {float(load):.0%} | {med(r['target_per_s'] for r in runs):,.0f} "
            f"| {med(r['sent_per_s'] for r in runs):,.0f} ({med(r['mb_per_s'] for r in runs):.0f}) "
            f"| {med(r['p50_ms'] for r in runs):,.1f} ms | {med(r['p99_ms'] for r in runs):,.1f} ms "
            f"| {med(r['max_ms'] for r in runs):,.0f} ms | {per_run} "
            f"| {med(r['late_max_ms'] for r in runs):.1f} ms "
            f"| {med(r['client_cpu_s'] / (LATENCY_SECONDS + LATENCY_WARMUP_S) for r in runs):.2f} |")
    return lines


def commit_table(data: dict) -> list[str]:
    lines = ["| replication factor | records of 1 KiB per request | requests in flight | requests/s | MB/s "
             "| p50 | p99 | max |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for c in data["commit"]:
        lines.append(f"| {c['rf']} | {c['records']:,} | {c.get('in_flight', 1)} | {c['requests_per_s']:,.0f} "
                     f"| {c['mb_per_s']:,.1f} "
                     f"| {c['p50_ms']:.2f} ms | {c['p99_ms']:.2f} ms | {c['max_ms']:.1f} ms |")
    return lines


# ---- 3. controlled shutdown ----------------------------------------------------------

@dataclass
class ShutdownRun:
    partitions: int
    total_s: float                # SIGTERM -> process gone
    to_request_s: float | None    # SIGTERM -> "shutting down" logged (signal, main thread)
    request_s: float | None       # "shutting down" -> "controlled shutdown ... succeeded"
    after_s: float | None         # that -> process gone (sockets, ZooKeeper session, logs)
    attempts: int
    controller_requests: list[str]
    restore: dict = field(default_factory=dict)


def shutdown_bench(root: Path, n: int, runs: int, log=print) -> dict:
    bc = BenchCluster(root / "shutdown", {})
    try:
        leader, follower, controller = bc.roles()
        topic = f"shutdown-{n}"
        assignment = {p: [leader, follower, controller] for p in range(n)}
        t0 = time.monotonic()
        bc.create_topic(topic, assignment, {"min.insync.replicas": "2"})
        bc.wait_states(topic, assignment, lambda p: leader, "topic creation", setup_timeout_s(n))
        bc.wait_applied(topic, assignment, "topic creation", setup_timeout_s(n))
        create_s = time.monotonic() - t0
        log(f"shutdown: {n} partitions led by broker {leader} after {create_s:.1f} s")
        results: list[ShutdownRun] = []
        for index in range(runs):
            if index:
                results[-1].restore = bc.restore_leader(topic, assignment, setup_timeout_s(n))
                r = results[-1].restore
                log(f"  restored: restart {r['restart_s']:.1f} s, ISR full {r['isr_full_s']:.1f} s, "
                    f"preferred election {r['preferred_s']:.1f} s")
            results.append(shutdown_once(bc, topic, n, leader, controller))
            r = results[-1]
            log(f"  run {index + 1}/{runs}: SIGTERM to exit {ms(r.total_s)} ms, of which the controlled "
                f"shutdown request {ms(r.request_s)} ms")
        return {"runs": results, "create_s": create_s, "partitions": n, "date": now_text(),
                "code": code_version()}
    finally:
        bc.close()


def shutdown_once(bc: BenchCluster, topic: str, n: int, leader: int, controller: int) -> ShutdownRun:
    bc.refresh()
    bc.wait_quiet(topic, {p: [leader] + [b for b in (1, 2, 3) if b not in (leader, controller)] + [controller]
                          for p in range(n)}, setup_timeout_s(n))
    before = bc.states(topic, range(n))
    if any(s is None or s.leader != leader for s in before.values()):
        raise RuntimeError(f"broker {leader} does not lead every partition of {topic}")
    broker = bc.broker(leader)
    leader_log, controller_log = broker.log_file, bc.broker(controller).log_file
    leader_offset, controller_offset = log_size(leader_log), log_size(controller_log)
    pidfd = os.pidfd_open(broker.pid)
    try:
        t_term = time.time()
        os.kill(broker.pid, signal.SIGTERM)
        ready, _, _ = select.select([pidfd], [], [], 180.0)
        t_exit = time.time()
    finally:
        os.close(pidfd)
    if not ready:
        raise RuntimeError(f"broker {leader} did not exit within 180 s of SIGTERM")
    lines = read_log(leader_log, leader_offset)
    started = first(lines, rf"^broker {leader} shutting down")
    succeeded = first(lines, rf"^controlled shutdown of broker {leader} succeeded")
    attempts = len(matching(lines, r"^controlled shutdown attempt \d+ failed")) + (1 if succeeded else 0)
    if succeeded is None:
        failed = matching(lines, r"controlled shutdown")
        raise RuntimeError(f"controlled shutdown of broker {leader} did not succeed: "
                           f"{[line.message for line in failed]}")
    after = bc.states(topic, range(n))
    wrong = [p for p, s in after.items() if s is None or s.leader == leader or leader in s.isr]
    if wrong:
        raise RuntimeError(f"{len(wrong)} partitions still led by or in sync with broker {leader} "
                           f"after its controlled shutdown, e.g. {after[wrong[0]]}")
    requests = [f"{line.message.split(': ', 1)[-1]} at +{(line.t - t_term) * 1000:,.0f} ms"
                for line in matching(read_log(controller_log, controller_offset), r"^controller \d+: \w+ to broker")]
    return ShutdownRun(
        partitions=n,
        total_s=t_exit - t_term,
        to_request_s=max(started.t - t_term, 0.0) if started else None,   # log times: ms resolution
        request_s=succeeded.t - started.t if started else None,
        after_s=t_exit - succeeded.t,
        attempts=attempts,
        controller_requests=requests,
    )


def shutdown_table(data: dict) -> list[str]:
    runs = data["runs"]
    lines = ["| partitions led | runs | SIGTERM → process exit | SIGTERM → \"shutting down\" logged "
             "| controlled shutdown request (→ \"succeeded\" logged) | rest of the shutdown (→ exit) | attempts |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    lines.append(
        f"| {data['partitions']:,} | {len(runs)} | {ms(med(r.total_s for r in runs))} ms ({runs_ms(r.total_s for r in runs)}) "
        f"| {ms(med(r.to_request_s for r in runs))} ms "
        f"| {ms(med(r.request_s for r in runs))} ms ({runs_ms(r.request_s for r in runs)}) "
        f"| {ms(med(r.after_s for r in runs))} ms ({runs_ms(r.after_s for r in runs)}) "
        f"| {' '.join(str(r.attempts) for r in runs)} |")
    return lines


# ---- results kept between runs -------------------------------------------------------
#
# Every run's raw results go into docs/benchmarks-replication.json (failover per N, produce,
# shutdown); the markdown is rendered from all of it, so a separate run of the big failover
# case, or of one benchmark, adds to what the last full run measured instead of erasing it.

def load_store() -> dict:
    if RESULTS.exists():
        try:
            return json.loads(RESULTS.read_text())
        except ValueError:
            pass
    return {}


def save_store(store: dict) -> None:
    RESULTS.write_text(json.dumps(store, indent=1, default=_jsonable) + "\n")


def _jsonable(value):
    if isinstance(value, throughput.Figure):
        return {"name": value.name, "kind": value.kind, "limit": value.limit,
                "samples": [vars(s) for s in value.samples]}
    if hasattr(value, "__dataclass_fields__"):
        return vars(value)
    return str(value)


def store_failover(store: dict, data: dict, nofile: str) -> None:
    entries = store.setdefault("failover", {})
    for n, runs in data["runs"].items():
        entries[str(n)] = {"runs": [vars(r) for r in runs], "setup": data["setup"][n], "nofile": nofile,
                           "commit": data.get("commit", "?")}


def failover_data(store: dict) -> dict | None:
    entries = store.get("failover")
    if not entries:
        return None
    ordered = sorted(entries.items(), key=lambda item: int(item[0]))
    return {"runs": {int(n): [FailoverRun(**r) for r in e["runs"]] for n, e in ordered},
            "setup": {int(n): e["setup"] for n, e in ordered},
            "nofile": {int(n): e.get("nofile", "") for n, e in ordered},
            "commits": {int(n): e.get("commit", "?") for n, e in ordered}}


def produce_data(store: dict) -> dict | None:
    entry = store.get("produce")
    if not entry:
        return None
    figures = {}
    order = [c.name for c in produce_cases()]
    by_kind = sorted(entry["figures"].items(), key=lambda item: (
        item[1]["kind"] != "limit", order.index(item[0]) if item[0] in order else len(order)))
    for name, f in by_kind:
        figures[name] = throughput.Figure(f["name"], f["kind"], [throughput.Sample(**s) for s in f["samples"]],
                                          limit=f["limit"])
    return {**entry, "figures": figures}


def shutdown_data(store: dict) -> dict | None:
    entry = store.get("shutdown")
    if not entry:
        return None
    return {**entry, "runs": [ShutdownRun(**r) for r in entry["runs"]]}


# ---- reporting ----------------------------------------------------------------------

def machine_line() -> str:
    m = throughput.machine_description()
    return (f"{m['nproc']} cores, {m['cpu']}, {m['memory']} RAM, Linux {m['kernel']}, "
            f"Python {m['python']}; shared with other work")


def failover_section(data: dict) -> list[str]:
    nofile = "; ".join(sorted(set(data["nofile"].values())))
    return [
        "## 1. Failover: kill -9 of the broker that leads every partition",
        "",
        f"`zookeeper.session.timeout.ms={SESSION_TIMEOUT_MS}` (ZooKeeper's tickTime is 2 s); one topic of N "
        "partitions, replicas [L, F, C] for every partition, L and F not the controller C, "
        f"min.insync.replicas=2. Medians, every run in brackets (ms). {nofile}.",
        "",
        "Detection is the kill until ZooKeeper deletes `/brokers/ids/L`; the others count from that "
        "deletion, the moment the session expiry is noticed:",
        "",
        *failover_table(data),
        "",
        "Where the time after the deletion goes (medians, ms after the znode deletion; the log lines have "
        "ms resolution):",
        "",
        *failover_steps_table(data),
        "",
        "Setting up and restoring between runs:",
        "",
        *failover_setup_table(data),
        "",
        "- detection: from just before `LocalCluster.kill_broker(L)` until a kazoo exists-watch on "
        "`/brokers/ids/L` fires DELETED (`time.time()` in the callback), or until the controller logs the "
        "broker list without L if that came first (under load the watch can fire after the controller has "
        "already written states); every later figure counts from that moment",
        "- election: the latest mtime (ZooKeeper's clock) of the N partition state znodes, each checked "
        "afterwards to have been written exactly once since before the kill, naming F at the next leader "
        "epoch with L out of the ISR; no watches are set on them (10,000 watch events would load the "
        "machine during the failover)",
        "- serving: until F answered ListOffsets v7 (latest) without error at the new leader epoch for every "
        "partition, over one connection opened before the kill: 16 spread partitions are asked every 10 ms; "
        "once those answer, one request for all N partitions (encoded before the kill) is sent until every "
        "partition answers",
        "- the steps: log lines of the controller (`live brokers now [...]`, `LeaderAndIsr to broker F`) and "
        "of F (`leader of N partitions (took T ms): ...`, one per LeaderAndIsr applied; its start is the "
        "line's time minus T)",
        "- before each run: every partition led by L with all 3 replicas in the ISR, and every broker "
        "answering at the current leader epoch; between runs L is restarted (`LocalCluster.up()`), rejoins "
        "every ISR, and a preferred replica election (`/admin/preferred_replica_election`) makes it leader "
        "again",
    ]


def produce_section(data: dict) -> list[str]:
    runs = len(next(iter(data["figures"].values())).samples)
    rf3 = data["figures"]["RF 3, 1 partition"].median("mb_per_s")
    best = max(f.median("mb_per_s") for f in data["figures"].values()
               if f.kind == "produce" and f.name.startswith("RF 3"))
    return [
        "## 2. Produce with replication factor 3, acks=-1, min.insync.replicas=2",
        "",
        f"Measured {data['date']} at commit {data.get('code', '?')}; {runs} rounds, each: the limits, then "
        "every case once (rotated); "
        "medians. 3 brokers on this machine; every case writes into a new topic.",
        "",
        *produce_table(data),
        "",
        f"Aim stated by the issue: ≥ 100 MB/s. RF 3 with one partition: {rf3:,.0f} MB/s; best RF 3 case: "
        f"{best:,.0f} MB/s. With RF 3 every byte is written to the page cache three times (once per broker) "
        "and crosses loopback three times (producer → leader, leader → each follower).",
        "",
        "Where the CPU went (medians; cores = CPU seconds per second of the run), and how many times the "
        "partitions' ISR changed during the runs (state znode versions; 0 = no follower fell out):",
        "",
        *produce_cpu_table(data),
        "",
        "What one producer connection can commit: produce requests with acks=-1, one at a time (the next "
        "sent when the answer is in) or several in flight (the leader appends a connection's next produce "
        "request while earlier ones wait for their ISR, and answers in order; Kafka reads nothing more from "
        f"the connection until it answers), {COMMIT_SECONDS:.0f} s per case, same cluster; latency from "
        "sending a request to its answer:",
        "",
        *commit_table(data),
        "",
        f"Latency, confluent-kafka (acks=all, linger.ms={LATENCY_LINGER_MS}: librdkafka's default) at half "
        f"the RF 3, 1 partition kcat median (the issue's figure) and at a quarter and a tenth of it, into an "
        f"RF 3 topic of one partition; {LATENCY_SECONDS:.0f} s per run after {LATENCY_WARMUP_S:.0f} s of "
        f"warm-up, {runs} runs per row:",
        "",
        *latency_table(data),
        "",
        f"- throughput: `{' '.join(kcat_argv('HOST:PORT,...', 'TOPIC', Path('FILE'), 1))}` "
        f"(`-p -1` for the 3-partition case), FILE = {PRODUCE_RECORDS:,} records of 1 KiB; the time runs from "
        "starting kcat to its exit, after the last delivery report; the sum of the partitions' end offsets is "
        "checked afterwards. CPU of the three brokers summed.",
        "- limits: bench/throughput.py's `disk_write` (256 MiB in 1 MiB writes to a new file on the log dirs' "
        "file system) and `loopback` (2 GiB over one loopback TCP connection), in every round",
        "- commit: Produce v9 with one batch of N records of 1 KiB, acks=-1, to the leader (broker 1) over "
        "one connection, a new request sent whenever fewer than the given number are unanswered",
        "- latency: a Python loop calls `produce()` at the target rate (paced every ≤ 1 ms, `poll(0)` after "
        "each burst); each record's latency is librdkafka's `message.latency()` read in its delivery "
        "callback: from `produce()` to the delivery report. \"Late by\" is how far the loop fell behind its "
        "schedule at worst.",
    ]


def shutdown_section(data: dict) -> list[str]:
    requests = data["runs"][-1].controller_requests
    restores = [r.restore for r in data["runs"] if r.restore]
    restore = ""
    if restores:
        restore = (f" Between runs: restart {med(r['restart_s'] for r in restores):.1f} s, back in every ISR "
                   f"{med(r['isr_full_s'] for r in restores):.1f} s later, preferred election "
                   f"{med(r['preferred_s'] for r in restores):.1f} s (medians).")
    return [
        f"## 3. Controlled shutdown of a broker leading {data['partitions']:,} partitions",
        "",
        f"Measured {data['date']} at commit {data.get('code', '?')}; {len(data['runs'])} runs, medians (every "
        f"run in brackets, ms). One topic of "
        f"{data['partitions']:,} partitions, replicas [L, F, C], L not the controller; creating it (until "
        f"every broker had applied it) took {data['create_s']:.1f} s.{restore}",
        "",
        *shutdown_table(data),
        "",
        "The controller's requests during the last run (from its log; times after the SIGTERM):",
        "",
        *[f"- {r}" for r in requests[:12]],
        *([f"- ... {len(requests) - 12} more"] if len(requests) > 12 else []),
        "",
        "- SIGTERM with `os.kill` to L's pid; its exit seen on a pidfd. L's log gives "
        "\"broker L shutting down\" (the signal reached the main thread) and \"controlled shutdown of broker L "
        "succeeded\" (the ControlledShutdown response came back: the controller moved every leadership to F "
        "and took L out of every ISR); the rest is the socket server, the controller and ZooKeeper session, "
        "fetchers, checkpoints and logs closing",
        "- checked after each run: every partition led by another broker, L in no ISR",
        "- between runs L is restarted, rejoins every ISR, and gets its leaderships back by preferred election",
    ]


def render_section(name: str, lines: list[str]) -> str:
    return "\n".join([f"<!-- section {name}: written by bench/replication.py -->", *lines,
                      f"<!-- end of section {name} -->"])


def existing(text: str, begin: str, end: str) -> str | None:
    start, stop = text.find(begin), text.find(end)
    if start < 0 or stop < start:
        return None
    return text[start:stop + len(end)]


def write_doc(store: dict) -> None:
    text = DOC.read_text() if DOC.exists() else ""
    notes = existing(text, NOTES_BEGIN, NOTES_END) or f"{NOTES_BEGIN}\n## Notes\n\n(none yet)\n{NOTES_END}"
    parts = [
        "# Benchmarks: replication (failover, replicated produce, controlled shutdown)",
        "",
        "Generated by `bench/replication.py` from the raw results in "
        "[benchmarks-replication.json](benchmarks-replication.json), which every run updates for what it "
        "measured (a failover case, or one benchmark, can be run on its own); the notes section at the end is "
        "hand-written and kept. The single-broker throughput figures are in [benchmarks.md](benchmarks.md).",
        "",
        f"- machine: {machine_line()}, so every figure is a median of several runs",
        f"- clients: {throughput.kcat_version()} (Debian package), confluent-kafka {_confluent_version()}, "
        "kazoo; all on the same machine as ZooKeeper and the 3 brokers",
        "- cluster: `LocalCluster(dir).up(brokers=3)`, each benchmark in a new one, "
        "`auto.leader.rebalance.enable=false` (leaders move back by explicit preferred election)",
        "",
    ]
    sections = {"failover": (failover_data, failover_section), "produce": (produce_data, produce_section),
                "shutdown": (shutdown_data, shutdown_section)}
    for name in SECTIONS:
        load, render = sections[name]
        data = load(store)
        if data is not None:
            parts += [render_section(name, render(data)), ""]
    parts += [notes, ""]
    DOC.write_text("\n".join(parts))


def _confluent_version() -> str:
    try:
        import confluent_kafka

        return f"{confluent_kafka.version()} (librdkafka {confluent_kafka.libversion()[0]})"
    except ImportError:
        return "?"


# ---- main -----------------------------------------------------------------------------

def parse_cases(text: str) -> list[tuple[int, int]]:
    cases = []
    for item in text.split(","):
        n, _, runs = item.partition(":")
        cases.append((int(n), int(runs) if runs else 3))
    return cases


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default=",".join(SECTIONS),
                        help=f"comma-separated subset of {','.join(SECTIONS)} (default: all)")
    parser.add_argument("--runs", type=int, default=3, help="runs of produce and shutdown (medians)")
    parser.add_argument("--failover-partitions", default=FAILOVER_DEFAULT, metavar="N:RUNS,...",
                        help=f"failover cases, partitions:runs (default {FAILOVER_DEFAULT}; "
                             f"10000:3 takes ~6 minutes)")
    parser.add_argument("--shutdown-partitions", type=int, default=SHUTDOWN_PARTITIONS)
    parser.add_argument("--dir", type=Path, default=None, help="where the clusters go (default: a new temp dir)")
    parser.add_argument("--profile-dir", type=Path, default=None,
                        help="record the new leader and the controller with py-spy during each failover")
    parser.add_argument("--no-doc", action="store_true",
                        help=f"do not update {RESULTS.relative_to(REPO)} and {DOC.relative_to(REPO)}")
    args = parser.parse_args(argv)
    only = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = set(only) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(sorted(unknown))}")
    if "produce" in only and shutil.which("kcat") is None:
        print("kcat is not installed (Debian package kcat; `make setup` installs it)", file=sys.stderr)
        return 2
    nofile = raise_nofile()
    print(nofile, flush=True)
    t0 = time.monotonic()
    log = lambda text: print(f"[{time.monotonic() - t0:6.1f} s] {text}", flush=True)  # noqa: E731
    root = Path(tempfile.mkdtemp(prefix="kafkactl-bench-replication-", dir=args.dir))
    store = load_store()

    def keep(store: dict) -> None:    # after each benchmark, so a later failure loses nothing
        if not args.no_doc:
            save_store(store)
            write_doc(load_store())

    try:
        if "failover" in only:
            data = failover_bench(root, parse_cases(args.failover_partitions), log, args.profile_dir)
            store_failover(store, data, nofile)
            keep(store)
            print("\n".join(["", *failover_table(data), "", *failover_steps_table(data), "",
                             *failover_setup_table(data), ""]), flush=True)
        if "produce" in only:
            data = produce_bench(root, args.runs, log)
            store["produce"] = data
            keep(store)
            print("\n".join(["", *produce_table(data), "", *produce_cpu_table(data), "",
                             *commit_table(data), "", *latency_table(data), ""]), flush=True)
        if "shutdown" in only:
            data = shutdown_bench(root, args.shutdown_partitions, args.runs, log)
            store["shutdown"] = data
            keep(store)
            print("\n".join(["", *shutdown_table(data), ""]), flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"whole run: {time.monotonic() - t0:.0f} s")
    if not args.no_doc:
        print(f"written to {RESULTS.relative_to(REPO)} and {DOC.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
