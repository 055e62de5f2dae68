"""The failover benchmark's records, tables and section of docs/benchmarks-replication.md
(bench/failover.py measures)."""

from __future__ import annotations

from dataclasses import dataclass, field

from replication_support.stats import med, ms, runs_ms

SESSION_TIMEOUT_MS = 4000


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


# ---- kept in docs/benchmarks-replication.json (one entry per partition count), and the doc ----

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

