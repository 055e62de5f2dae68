"""The controlled shutdown benchmark's records, table and section of
docs/benchmarks-replication.md (bench/controlled_shutdown.py measures)."""

from __future__ import annotations

from dataclasses import dataclass, field

from replication_support.stats import med, ms, runs_ms


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


# ---- read back from docs/benchmarks-replication.json, and the doc section -----------

def shutdown_data(store: dict) -> dict | None:
    entry = store.get("shutdown")
    if not entry:
        return None
    return {**entry, "runs": [ShutdownRun(**r) for r in entry["runs"]]}


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

