"""The planner's job end to end, for `kafkactl plan` and spark-submit (planner/submit.py).

check the snapshot's files and the options against them, in plain Python
before Spark starts (planner/snapshot_check.py: a bad snapshot is refused in
about a second) -> start Spark (planner/session.py), read the snapshot ->
optimize, and beside it feasibility (hard constraints no assignment can
meet: no plan, whatever the optimizer found) -> check the proposal against
every hard constraint -> the lower bound -> report -> plan files, written to
a temporary directory beside --out and renamed into place, so a failed run
leaves nothing behind. Feasibility, Kafka's assignment and the snapshot's
own figures do not depend on the proposal: they run on a second thread
while the optimizer does (`Background`).

Errors: PlanUsageError (bad options or snapshot; exit 2) and
PlanUnsatisfiable (a hard constraint cannot be met; exit 1, no plan).
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from kafkactl.planner.options import GOALS, PlannerOptions

DEFAULT_MASTER = "local[*]"
# For tests only: "module:function" of an optimizer to use instead of kafkactl.planner.optimizer.optimize.
OPTIMIZER_HOOK_ENV = "KAFKACTL_PLANNER_OPTIMIZER"


class PlanError(Exception):
    exit_code = 1

    def __init__(self, message: str, details: list[str] | None = None):
        super().__init__(message)
        self.message = message
        self.details = list(details or [])


class PlanUsageError(PlanError):
    """An option or the snapshot is invalid (exit 2); the message names the option or file."""

    exit_code = 2


class PlanUnsatisfiable(PlanError):
    """A hard constraint cannot be met: `details` say which and why; no plan is written."""


# --- options, as both entry points take them (lists as comma-separated text)

def build_options(capacity_threshold: float = 0.8, network_threshold: float | None = None,
                  network_in_threshold: float | None = None, network_out_threshold: float | None = None,
                  exclude_brokers: str | None = None, add_brokers: str | None = None, goals: str | None = None,
                  max_bytes_moved: int | None = None, max_moves: int | None = None, throttle: int | None = None,
                  seed: int = 0) -> PlannerOptions:
    """PlannerOptions from command-line values (PlanUsageError naming the option)."""
    _fraction("--capacity-threshold", capacity_threshold)
    if network_threshold is not None:
        _fraction("--network-threshold", network_threshold)
    base = 0.8 if network_threshold is None else network_threshold
    net_in = base if network_in_threshold is None else _fraction("--network-in-threshold", network_in_threshold)
    net_out = base if network_out_threshold is None else _fraction("--network-out-threshold", network_out_threshold)
    excluded = _broker_ids("--exclude-brokers", exclude_brokers)
    added = _broker_ids("--add-brokers", add_brokers)
    both = sorted(set(excluded) & set(added))
    if both:
        raise PlanUsageError(f"--add-brokers: broker {both[0]} is also in --exclude-brokers")
    for name, value in (("--max-bytes-moved", max_bytes_moved), ("--max-moves", max_moves)):
        if value is not None and value < 0:
            raise PlanUsageError(f"{name} {value}: must be 0 or more")
    if throttle is not None and throttle < 1:
        raise PlanUsageError(f"--throttle {throttle}: must be at least 1 byte per second")
    return PlannerOptions(capacity_threshold=capacity_threshold, network_in_threshold=net_in,
                          network_out_threshold=net_out, exclude_brokers=excluded, add_brokers=added,
                          goals=_goals(goals), max_bytes_moved=max_bytes_moved, max_moves=max_moves,
                          throttle_bytes_per_s=throttle, seed=seed)


def _fraction(name: str, value: float) -> float:
    if not 0 < value <= 1:
        raise PlanUsageError(f"{name} {value}: must be a fraction of capacity, above 0 and at most 1")
    return value


def _broker_ids(name: str, text: str | None) -> tuple[int, ...]:
    if text is None:
        return ()
    items = [i.strip() for i in text.split(",") if i.strip()]
    if not items or not all(i.isdigit() for i in items):
        raise PlanUsageError(f"{name} {text!r}: expected broker ids separated by commas, e.g. 1,2")
    ids = [int(i) for i in items]
    if len(set(ids)) != len(ids):
        raise PlanUsageError(f"{name} {text!r}: a broker is listed twice")
    return tuple(sorted(ids))


def _goals(text: str | None) -> tuple[str, ...]:
    if text is None:
        return GOALS
    names = [g.strip() for g in text.split(",") if g.strip()]
    unknown = [g for g in names if g not in GOALS]
    if not names or unknown:
        raise PlanUsageError(f"--goals {text!r}: {'unknown goal ' + repr(unknown[0]) if unknown else 'no goal'} "
                             f"(goals: {','.join(GOALS)})")
    if len(set(names)) != len(names):
        raise PlanUsageError(f"--goals {text!r}: a goal is listed twice")
    return tuple(names)


def check_paths(snapshot_dir: Path, out_dir: Path) -> None:
    """Before starting Spark: the snapshot is a directory and --out may be created."""
    if not snapshot_dir.is_dir():
        raise PlanUsageError(f"--snapshot {snapshot_dir}: not a directory")
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise PlanUsageError(f"--out {out_dir}: exists and is not an empty directory; give a new one")


def check_snapshot(snapshot_dir: Path, out_dir: Path, options: PlannerOptions):
    """Everything checked before Spark starts: the paths, the snapshot's files (every
    documented refusal), and the options against the snapshot; its CheckedSnapshot."""
    from kafkactl.planner.snapshot_check import SnapshotError, check_snapshot as check_files

    check_paths(snapshot_dir, out_dir)
    try:
        checked = check_files(snapshot_dir)
    except SnapshotError as error:
        raise PlanUsageError(f"--snapshot {snapshot_dir}: invalid snapshot", error.errors +
                             (["(more errors not shown)"] if error.more else [])) from None
    check_against_snapshot(checked, options)
    return checked


def check_against_snapshot(checked, options: PlannerOptions) -> None:
    """--exclude-brokers and --add-brokers name brokers of the snapshot; added ones hold nothing yet."""
    for name, ids in (("--exclude-brokers", options.exclude_brokers), ("--add-brokers", options.add_brokers)):
        missing = [b for b in ids if b not in checked.broker_ids]
        if missing:
            raise PlanUsageError(f"{name}: broker {missing[0]} is not in the snapshot's brokers")
    holding = [b for b in options.add_brokers if checked.replicas_per_broker.get(b)]
    if holding:
        raise PlanUsageError(f"--add-brokers: broker {holding[0]} already holds "
                             f"{checked.replicas_per_broker[holding[0]]} replicas; added brokers are new and empty")


def mid_reassignment_note(snapshot_dir: Path, checked) -> str | None:
    """The line saying the snapshot was taken during a reassignment (snapshot.json), or None."""
    count = checked.reassigning_partitions
    if not count:
        return None
    return (f"snapshot {snapshot_dir} was taken during a reassignment: {count} partition"
            f"{'' if count == 1 else 's'} recorded at their target replicas")


# --- the job

def load_optimizer():
    """kafkactl.planner.optimizer.optimize, or the test hook's function."""
    import importlib

    hook = os.environ.get(OPTIMIZER_HOOK_ENV)
    if hook:
        module, _, name = hook.partition(":")
        return getattr(importlib.import_module(module), name)
    from kafkactl.planner.optimizer import optimize

    return optimize


def run(spark, snapshot_dir, out_dir, options: PlannerOptions, optimize=None, checked=None,
        check_s: float = 0.0) -> dict:
    """Plan from the snapshot into out_dir (created atomically); returns the report.
    `checked`: check_snapshot's result (and `check_s` its seconds) when the caller
    checked before starting Spark."""
    from kafkactl.planner.snapshot import read_snapshot

    snapshot_dir, out_dir = Path(snapshot_dir), Path(out_dir)
    clock = _Clock()
    if checked is None:
        checked = check_snapshot(snapshot_dir, out_dir, options)
        clock.lap("check")
    else:
        clock.steps["check"] = round(check_s, 3)
    snapshot = read_snapshot(spark, snapshot_dir, checked=checked)
    clock.lap("read")
    try:
        return _plan(spark, snapshot, snapshot_dir, out_dir, options, optimize or load_optimizer(), clock)
    finally:
        snapshot.unpersist()


def _plan(spark, snapshot, snapshot_dir: Path, out_dir: Path, options, optimize, clock) -> dict:
    from kafkactl.planner import bounds, report

    # Feasibility and what does not depend on the proposal run on a second
    # thread while the optimizer runs (Background): the optimizer's
    # driver-side work leaves Spark idle, and an infeasible snapshot cancels
    # the optimizer's Spark jobs.
    context = spark.sparkContext
    context.setJobGroup(OPTIMIZER_GROUP, "the optimizer", interruptOnCancel=True)
    background = Background(spark, snapshot, options)
    try:
        try:
            proposal = optimize(spark, snapshot, options)
        except Exception:
            _refuse_unsatisfiable(background.feasibility())   # the cause, when it is one
            raise
        finally:
            background.optimizer_done.set()
            context.setLocalProperty("spark.jobGroup.id", None)
        _refuse_unsatisfiable(background.feasibility())
        assignment = proposal.assignment.persist()
        clock.lap("optimize")
        clock.steps["feasibility"] = background.feasibility_s
        try:
            _refuse_unsatisfiable(proposal.unsatisfied)
            (after,) = report.evaluate_states([assignment], snapshot, options, options.throttle_bytes_per_s)
            _refuse_broken(after, options)
            clock.lap("check_and_evaluate")
            before, kafka_figures, counts = background.result()
            bound = bounds.lower_bound(snapshot, options, after["log_dirs"])
            clock.lap("baselines")
            times = clock.laps()
            result = report.build(str(snapshot_dir), options, counts, before, after, kafka_figures, bound,
                                  {"rounds": proposal.rounds, "goals": proposal.goals}, times)
            result["snapshot_reassigning_partitions"] = snapshot.checked.reassigning_partitions
            _write_atomically(out_dir, lambda directory: _write_outputs(assignment, snapshot, result, directory,
                                                                        clock))
            return result
        finally:
            assignment.unpersist()
    finally:
        background.stop()


OPTIMIZER_GROUP = "kafkactl-optimizer"
CANCEL_POLL_S = 0.05


def _refuse_unsatisfiable(reasons: list[str]) -> None:
    if reasons:
        raise PlanUnsatisfiable("a hard constraint cannot be met; no plan written", reasons)


class Background:
    """The run's second thread, beside the optimizer, its Spark jobs in a
    group of their own (cancelled if the run fails):

    1. feasibility (constraints.infeasible): the hard constraints no
       assignment can meet; when there are any, the optimizer's Spark jobs
       (OPTIMIZER_GROUP) are cancelled until it stops, and the thread ends;
    2. Kafka's assignment, the snapshot's own figures and Kafka's (checked
       and evaluated in one pass), the counts and the lower bound's
       partition classes.
    """

    GROUP = "kafkactl-background"

    def __init__(self, spark, snapshot, options):
        import threading

        from pyspark import InheritableThread

        self._spark, self._outcome = spark, {}
        self._feasible = threading.Event()
        self.optimizer_done = threading.Event()     # set by the run's thread when optimize returns or raises
        self.reasons: list[str] = []
        self.feasibility_s = 0.0
        self._thread = InheritableThread(target=self._run, args=(snapshot, options), name=self.GROUP, daemon=True)
        self._thread.start()

    def _run(self, snapshot, options) -> None:
        from kafkactl.planner import baseline, bounds, report
        from kafkactl.planner.constraints import infeasible

        context = self._spark.sparkContext
        try:
            context.setJobGroup(self.GROUP, "feasibility and the plan's baselines", interruptOnCancel=True)
            started = time.monotonic()
            self.reasons = infeasible(snapshot, options)
            self.feasibility_s = round(time.monotonic() - started, 3)
        except BaseException as error:   # re-raised on the caller's thread by feasibility()
            self._outcome["feasibility_error"] = self._outcome["error"] = error
            return
        finally:
            self._feasible.set()
        if self.reasons:
            # Cancelling a group cancels only its jobs running then: the
            # optimizer's later jobs are cancelled as they start, until it stops.
            context.cancelJobGroup(OPTIMIZER_GROUP)
            while not self.optimizer_done.wait(CANCEL_POLL_S):
                context.cancelJobGroup(OPTIMIZER_GROUP)
            return
        try:
            kafka = baseline.kafka_assignment(snapshot, options)
            before, kafka_figures = report.evaluate_states([snapshot.partitions, kafka], snapshot, options,
                                                           options.throttle_bytes_per_s)
            counts = report.snapshot_counts(snapshot, options)
            bounds.partition_classes(snapshot)
            self._outcome["result"] = (before, kafka_figures, counts)
        except BaseException as error:   # re-raised on the caller's thread by result()
            self._outcome["error"] = error

    def feasibility(self) -> list[str]:
        """Why no assignment can meet the hard constraints (empty: no proof of that)."""
        self._feasible.wait()
        if "feasibility_error" in self._outcome:
            raise self._outcome["feasibility_error"]
        return self.reasons

    def result(self):
        self._thread.join()
        if "error" in self._outcome:
            raise self._outcome["error"]
        return self._outcome["result"]

    def stop(self) -> None:
        self.optimizer_done.set()
        if self._thread.is_alive():
            self._spark.sparkContext.cancelJobGroup(self.GROUP)
            self._thread.join()


def _refuse_broken(after: dict, options) -> None:
    """The proposal must meet every hard constraint and the movement bounds, whoever made it."""
    found = after["violations"]
    details = [f"{e['kind']}: {e['subject']}: {e['detail']}" for e in found["examples"]]
    moved = after["moves"]
    if options.max_moves is not None and moved["replica_moves"] > options.max_moves:
        details.append(f"--max-moves {options.max_moves}: the proposal moves {moved['replica_moves']} replicas")
    if options.max_bytes_moved is not None and moved["bytes_moved"] > options.max_bytes_moved:
        details.append(f"--max-bytes-moved {options.max_bytes_moved}: the proposal moves {moved['bytes_moved']} bytes")
    if details:
        raise PlanUnsatisfiable(f"the optimizer's proposal breaks {found['total'] or 'a'} hard constraints or "
                                f"bounds; no plan written", details)


def _write_outputs(assignment, snapshot, result: dict, directory: Path, clock) -> None:
    from kafkactl.planner import report

    result["plan_partitions"] = report.write_plan_files(assignment, snapshot, directory)
    result["compute_time_s"]["write"] = clock.since_last()
    result["compute_time_s"]["total"] = clock.total()
    report.write_report(result, directory)


def _write_atomically(out_dir: Path, write) -> None:
    """write(temp dir) then rename it to out_dir (which may be an empty dir); nothing is left on failure."""
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    temporary = out_dir.parent / f".{out_dir.name}.partial-{os.getpid()}"
    shutil.rmtree(temporary, ignore_errors=True)
    temporary.mkdir()
    try:
        write(temporary)
        os.rename(temporary, out_dir)  # POSIX: replaces out_dir if it is an empty directory
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise


class _Clock:
    def __init__(self):
        self.start = self.last = time.monotonic()
        self.steps: dict[str, float] = {}

    def lap(self, step: str) -> None:
        self.steps[step] = self.since_last()

    def since_last(self) -> float:
        now = time.monotonic()
        elapsed, self.last = now - self.last, now
        return round(elapsed, 3)

    def total(self) -> float:
        return round(time.monotonic() - self.start, 3)

    def laps(self) -> dict:
        return dict(self.steps)


def plan(snapshot_dir: Path, out_dir: Path, master: str | None, options: PlannerOptions, spark=None,
         note=None, quiet: bool = True) -> dict:
    """The whole command: the snapshot and options checked before Spark starts, then the
    job on a session of its own (planner/session.py; kafkactl shipped to its executors on a
    cluster: submit.package_on_executors; `quiet`: none of Spark's or Java's
    output on the console). `note(line)` is told when the snapshot was taken mid-reassignment."""
    snapshot_dir, out_dir = Path(snapshot_dir), Path(out_dir)
    started = time.monotonic()
    checked = check_snapshot(snapshot_dir, out_dir, options)
    check_s = time.monotonic() - started
    line = mid_reassignment_note(snapshot_dir, checked)
    if line and note:
        note(line)
    if spark is not None:
        return run(spark, snapshot_dir, out_dir, options, checked=checked, check_s=check_s)
    from kafkactl.planner.submit import package_on_executors

    replicas = sum(checked.replicas_per_broker.values())
    _import_in_background()
    with start_session(master, replicas, quiet) as session, package_on_executors(session):
        return run(session, snapshot_dir, out_dir, options, checked=checked, check_s=check_s)


# Python modules the job imports later (the baseline's pandas UDFs, the lower
# bound's solver, the chart), about 2 s of imports on this machine.
LATER_IMPORTS = ("pandas", "pyarrow", "scipy.optimize", "scipy.sparse", "matplotlib.pyplot")


def _import_in_background() -> None:
    """Import LATER_IMPORTS on a thread while the JVM starts: the main thread
    only waits on the JVM then, and Python's import lock makes a later
    import of the same module wait for this one rather than repeat it."""
    import importlib
    import threading

    def load():
        for name in LATER_IMPORTS:
            try:
                importlib.import_module(name)
            except ImportError:   # the job's own import says what is missing
                return

    threading.Thread(target=load, name="kafkactl-imports", daemon=True).start()


def start_session(master: str | None, replicas: int, quiet: bool):
    """The run's own Spark session (a context manager; tests replace it to show Spark never starts)."""
    from kafkactl.planner.session import planner_session

    return planner_session(master, replicas, quiet)
