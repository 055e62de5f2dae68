"""How `kafkactl deploy` shows its results: one row per host (or host and
service) as a table, or the same data with -o json / yaml. Warnings go to
stderr; a command where any host failed ends with one error line and exit 1."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from kafkactl.cli.errors import CliError
from kafkactl.cli.output import emit, render_table


def _fail_if_any(failed: Sequence[str], total: int, what: str, details: str = "") -> None:
    if failed:
        raise CliError(f"{what} failed on {len(failed)} of {total} hosts: {', '.join(failed)}", details)


def _warn(lines: Sequence[str]) -> None:
    for line in lines:
        print(f"warning: {line}", file=sys.stderr)


def _plan_rows(plans: Sequence[Any]) -> list[dict[str, Any]]:
    from kafkactl.cluster.deploy.host_plan import MakeDirs

    rows = []
    for outcome in plans:
        plan = outcome.value
        if plan is None:
            rows.append({"host": outcome.name, "roles": [], "ok": False, "problems": [outcome.error],
                         "warnings": [], "changes": [], "media": {}})
            continue
        rows.append({
            "host": plan.name, "roles": list(plan.roles), "ok": not plan.problems, "problems": list(plan.problems),
            "warnings": list(plan.warnings),
            "changes": [step.describe() for step in plan.steps if not isinstance(step, MakeDirs)],
            "service_manager": "systemd" if plan.systemd else "kafkactl supervisor",
            "media": {path: {"media": decision.media, "why": decision.why} for path, decision in plan.media.items()},
        })
    return rows


def _plan_tables(rows: list[dict[str, Any]], release: str) -> str:
    hosts = render_table(
        [[r["host"], ",".join(r["roles"]) or "-",
          "; ".join(r["problems"]) if r["problems"] else ("; ".join(r["changes"]) or "no change")]
         for r in rows],
        ["HOST", "ROLES", f"CHANGES (release {release})"])
    media = [[r["host"], path, m["media"], m["why"]] for r in rows for path, m in r["media"].items()]
    return hosts + ("\n\n" + render_table(media, ["HOST", "LOG DIR", "MEDIA", "HOW"]) if media else "")


def plan_report(plans: Sequence[Any], release: str, output: str) -> None:
    rows = _plan_rows(plans)
    _warn([w for r in rows for w in r["warnings"]])
    emit({"release": release, "hosts": rows}, output, lambda: _plan_tables(rows, release))
    _fail_if_any([r["host"] for r in rows if not r["ok"]], len(rows), "planning",
                 "\n".join(p for r in rows for p in r["problems"]))


def install_report(plans: Sequence[Any], outcomes: Sequence[Any] | None, release: str, output: str) -> None:
    rows = _plan_rows(plans)
    _warn([w for r in rows for w in r["warnings"]])
    if outcomes is None:   # refused: some host has a problem, nothing changed
        emit({"release": release, "installed": False, "hosts": rows}, output, lambda: _plan_tables(rows, release))
        problems = [p for r in rows for p in r["problems"]]
        raise CliError(f"nothing was installed: {problems[0] if problems else 'a host failed'}",
                       "\n".join(problems[1:]))
    done = {o.name: o for o in outcomes}
    results = []
    for row in rows:
        outcome = done[row["host"]]
        result = "failed" if not outcome.ok else ("changed" if outcome.value else "unchanged")
        results.append({"host": row["host"], "roles": row["roles"], "result": result,
                        "done": outcome.value or [], "error": outcome.error, "media": row["media"]})
    unchanged = all(r["result"] == "unchanged" for r in results)

    def table() -> str:
        text = render_table([[r["host"], ",".join(r["roles"]), r["result"],
                              r["error"] or "; ".join(r["done"]) or "-"] for r in results],
                            ["HOST", "ROLES", "RESULT", "DETAILS"])
        if unchanged:
            text += f"\n\nnothing to change: every host already has release {release} and its files"
        return text

    emit({"release": release, "installed": True, "changed": not unchanged, "hosts": results}, output, table)
    _fail_if_any([r["host"] for r in results if r["result"] == "failed"], len(results), "install",
                 "\n".join(r["error"] for r in results if r["error"]))


def services_report(results: Sequence[tuple[str, str, Any]], output: str) -> None:
    rows = [{"host": host, "service": service, "ok": outcome.ok, "action": outcome.value, "error": outcome.error}
            for host, service, outcome in results]
    emit({"services": rows}, output, lambda: render_table(
        [[r["host"], r["service"], r["action"] if r["ok"] else "failed", r["error"] or ""] for r in rows],
        ["HOST", "SERVICE", "RESULT", "ERROR"]))
    _fail_if_any(sorted({r["host"] for r in rows if not r["ok"]}), len({r["host"] for r in rows}), "the command")


def status_report(outcomes: Sequence[Any], output: str) -> None:
    rows = []
    media = []
    for outcome in outcomes:
        if not outcome.ok:
            rows.append({"host": outcome.name, "service": None, "error": outcome.error})
            continue
        for service, status in outcome.value.services.items():
            rows.append({"host": outcome.name, **status.to_dict(), "error": None})
        for path, decision in outcome.value.media.items():
            decided = hasattr(decision, "media")
            media.append({"host": outcome.name, "log_dir": path, "media": decision.media if decided else None,
                          "why": decision.why if decided else decision.error})

    def cell(value: Any) -> str:
        return "-" if value is None else ("yes" if value is True else "no" if value is False else str(value))

    def table() -> str:
        text = render_table(
            [[r["host"], cell(r["service"]), r["error"] or ("running" if r["running"] else r.get("state") or "stopped"),
              cell(r.get("pid")), cell(r.get("release")), cell(_uptime(r.get("uptime_s"))),
              cell(r.get("pending_restart"))] for r in rows],
            ["HOST", "SERVICE", "STATE", "PID", "RELEASE", "UPTIME", "RESTART PENDING"])
        if media:
            text += "\n\n" + render_table([[m["host"], m["log_dir"], cell(m["media"]), m["why"]] for m in media],
                                           ["HOST", "LOG DIR", "MEDIA", "HOW"])
        return text

    emit({"services": rows, "media": media}, output, table)
    _fail_if_any([r["host"] for r in rows if r["error"]], len(outcomes), "status")


def _uptime(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"


def rolling_report(done: Sequence[Any], output: str, progress: bool) -> None:
    rows = [{"host": r.host, "service": r.service, "waited_s": round(r.waited_s, 1), "health": r.health}
            for r in done]
    if progress:   # one line per restart as it happens, on stderr: stdout keeps the final report
        for r in rows:
            print(f"restarted {r['service']} on {r['host']}: back after {r['waited_s']} s ({r['health']})",
                  file=sys.stderr)
        return
    emit({"restarted": rows}, output, lambda: render_table(
        [[r["host"], r["service"], r["waited_s"], r["health"]] for r in rows],
        ["HOST", "SERVICE", "BACK AFTER (S)", "HEALTH"]))


def uninstall_report(outcomes: Sequence[Any], output: str) -> None:
    rows = [{"host": o.name, "ok": o.ok, "done": o.value or [], "error": o.error} for o in outcomes]
    emit({"hosts": rows}, output, lambda: render_table(
        [[r["host"], "; ".join(r["done"]) if r["ok"] else f"failed: {r['error']}"] for r in rows],
        ["HOST", "RESULT"]))
    _fail_if_any([r["host"] for r in rows if not r["ok"]], len(rows), "uninstall")
