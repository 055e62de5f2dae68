"""Failover of the reference cluster: kill -9 of the broker that leads every partition.

    .venv/bin/python bench/failover.py                              # 1,000 partitions, 3 runs
    .venv/bin/python bench/failover.py --partitions 300:1 --no-doc
    .venv/bin/python bench/failover.py --partitions 10000:3         # a new cluster per run

A 3-broker local cluster (ZooKeeper + 3 broker processes) in a temporary
directory, always taken down again; one topic of N partitions, replicas
[L, F, C] for every partition (L and F are not the controller C), so broker L
leads all N. L is killed with SIGKILL; timed separately: detection (the kill
until ZooKeeper deletes /brokers/ids/L, seen through a watch;
zookeeper.session.timeout.ms=4000), election (that deletion until the last
partition state znode names the new leader: the znodes' mtime, ZooKeeper's own
clock) and serving (that deletion until every partition answers ListOffsets
from F). The controller's and the new leader's logs give the steps in between.
Then L is restarted, rejoins every ISR, and a preferred replica election gives
it the N leaderships back for the next run.

Every figure is the median of the runs (the machine is shared). The tables are
printed and written to docs/benchmarks-replication.md, in the failover section
(bench/replication.py runs this with the other two benchmarks).

This is a measurement, not a test: nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import re
import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import throughput  # bench/throughput.py: process_cpu_s

from replication_support.cluster import BenchCluster, setup_timeout_s
from replication_support.failover_report import (
    SESSION_TIMEOUT_MS,
    FailoverRun,
    failover_setup_table,
    failover_steps_table,
    failover_table,
    store_failover,
)
from replication_support.host import code_version, now_text, open_fds, rss_mib
from replication_support.logs import first, log_size, matching, read_log
from replication_support.run import BenchRun, doc_option_help
from replication_support.stats import ms
from replication_support.wire import api_versions_request, broker_client, encoded_list_offsets, list_offsets

FAILOVER_DEFAULT = "1000:3"            # N:runs; 10000:3 separately (a new cluster per run, ~2 minutes each)
IDLE_WINDOW_S = 3.0


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
    _, in_zk_s = bc.new_topic(topic, assignment, {"min.insync.replicas": "2"}, "topic creation",
                              setup_timeout_s(n))
    setup[n] = {"create_zk_s": in_zk_s, "create_s": time.monotonic() - t0, "leader": leader,
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
    client.request(api_versions_request())          # connected before the clock starts
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


def brokers_cpu(bc: BenchCluster, seconds: float) -> dict[str, float]:
    """Cores each broker process uses over `seconds` (the cluster idle: no client traffic)."""
    pids = {str(b.id): b.pid for b in bc.status.brokers if b.pid}
    before = {b: throughput.process_cpu_s(pid) for b, pid in pids.items()}
    t0 = time.monotonic()
    time.sleep(seconds)
    elapsed = time.monotonic() - t0
    return {b: round((throughput.process_cpu_s(pid) - before[b]) / elapsed, 3) for b, pid in pids.items()}


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


def measure(run: BenchRun, cases: list[tuple[int, int]], profile_dir: Path | None = None) -> None:
    """Every case (partitions, runs), its results kept, its tables printed."""
    data = failover_bench(run.root, cases, run.log, profile_dir)
    store_failover(run.store, data, run.nofile)
    run.keep()
    print("\n".join(["", *failover_table(data), "", *failover_steps_table(data), "",
                     *failover_setup_table(data), ""]), flush=True)


def parse_cases(text: str) -> list[tuple[int, int]]:
    cases = []
    for item in text.split(","):
        n, _, runs = item.partition(":")
        cases.append((int(n), int(runs) if runs else 3))
    return cases


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", default=FAILOVER_DEFAULT, metavar="N:RUNS,...",
                        help=f"cases, partitions:runs (default {FAILOVER_DEFAULT}; 10000:3 takes ~6 minutes)")
    parser.add_argument("--dir", type=Path, default=None, help="where the clusters go (default: a new temp dir)")
    parser.add_argument("--profile-dir", type=Path, default=None,
                        help="record the new leader and the controller with py-spy during each failover")
    parser.add_argument("--no-doc", action="store_true", help=doc_option_help())
    args = parser.parse_args(argv)
    with BenchRun(args.dir, not args.no_doc) as run:
        measure(run, parse_cases(args.partitions), args.profile_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
