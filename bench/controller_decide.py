"""The controller's CPU per broker failure, step by step: the yardstick of the
failover path's controller half.

    .venv/bin/python bench/controller_decide.py                  # 1k, 10k, 50k partitions, no server
    .venv/bin/python bench/controller_decide.py --sizes 10000 --zk   # and 10,000 writes to a real ZooKeeper

For N partitions of one topic, replicas [2, 3, 1] each (broker 2 leads them
all), broker 2 dies. Timed in-process, CPU time of this process
(time.process_time: the machine is shared, wall clock would measure the
neighbours), median of --runs runs:

- decide:     on_broker_change, the pure decision (elections, state writes,
              request batches)
- invariants: check_invariants(only_changed=True), as Controller._run does
              after every step
- zk ops:     the decision's writes as ZooKeeper operations (ZkPort's
              translation) and the multi requests' bytes, batches as the store
              sends them; both kazoo's Transaction serialization and the
              store's own encoder when it has one
- requests:   LeaderAndIsr and UpdateMetadata to wire bytes (wire.py +
              control_writer), every request of the decision

With --zk: a real ZooKeeper (Debian's, on a free loopback port, as the
integration tests start it); N state-like znodes are created, then
ZkControllerStore.write of N conditional set_data ops is timed: CPU of this
process (kazoo's I/O thread included) and wall clock.

This is a measurement, not a test: nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import signal
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from kafkactl.cluster.controller.broker_change import on_broker_change
from kafkactl.cluster.controller.invariants import check_invariants
from kafkactl.cluster.controller.model import LeaderAndIsr, UpdateMetadata
from kafkactl.cluster.controller.testing import make_context, registration
from kafkactl.cluster.controller import wire
from kafkactl.cluster.controller.wire import wire_request
from kafkactl.cluster.controller import zk_store
from kafkactl.cluster.controller.zk_port import ZkPort
from kafkactl.cluster.zk.codecs import topic_id_to_string


MINIMA: dict[str, float] = {}


def cpu_ms(fn, runs: int, name: str = "") -> tuple[float, object]:
    """Median CPU ms of `runs` calls, and the last call's result (the minimum
    goes to MINIMA[name]: on a shared machine it is the steadier figure). A
    collection is forced before each run so one run does not pay for
    another's garbage."""
    times, result = [], None
    for _ in range(runs):
        gc.collect()
        start = time.process_time()
        result = fn()
        times.append((time.process_time() - start) * 1000)
    MINIMA[name] = min(times)
    return statistics.median(times), result


class _NoServerStore:
    """What ZkPort needs from a store to translate state writes (updates only:
    no parents to create, no reads)."""

    client = None
    timeout_s = 1.0


def zk_ops(decision):
    port = ZkPort(_NoServerStore(), decision.context.controller_epoch)
    if hasattr(port, "operations"):
        return [op for ops in port.operations(decision.zk_writes) for op in ops]
    return [op for write in decision.zk_writes for op in port._ops(write)]


def kazoo_bytes(ops, fence, batch_size: int) -> int:
    """The multis as kazoo builds and serializes them (TransactionRequest +
    Transaction.serialize, as its connection does)."""
    from kazoo.client import TransactionRequest
    from kazoo.protocol.serialization import Transaction

    class _Client:
        chroot = ""
        default_acl = None
        logger = logging.getLogger("kazoo.client")

    total = 0
    for i in range(0, len(ops), batch_size):
        transaction = TransactionRequest(_Client())
        transaction.check("/controller_epoch", fence.zk_version)
        for op in ops[i:i + batch_size]:
            zk_store._add(transaction, op)
        total += len(Transaction(transaction.operations).serialize())
    return total


def own_bytes(ops, fence, batch_size: int) -> int | None:
    """The multis as the store encodes them itself, if it does."""
    encode = getattr(zk_store, "encode_multi", None)
    if encode is None:
        return None
    return sum(len(encode(ops[i:i + batch_size], fence.zk_version, ""))
               for i in range(0, len(ops), batch_size))


def encode_requests(decision) -> int:
    """Every LeaderAndIsr and UpdateMetadata of the decision, as the channel's
    sender threads encode them (partitions shared by several brokers once)."""
    shared = getattr(wire, "_shared", None)
    if shared is not None:
        shared.clear()                # each run encodes from scratch
    total = 0
    for request in decision.requests:
        if isinstance(request, (LeaderAndIsr, UpdateMetadata)):
            total += len(wire_request(request).body)
    return total


def failover_context(n: int):
    ctx = make_context(live=(1, 2, 3), topics={"t": {p: [2, 3, 1] for p in range(n)}})
    # A real topic id: the requests' encoder wants 16 bytes, not the test helpers' "id-t".
    ctx.topic_ids["t"] = topic_id_to_string(uuid.UUID(int=n))
    return ctx


def in_process(n: int, runs: int) -> dict[str, float]:
    ctx = failover_context(n)
    survivors = {1: registration(1), 3: registration(3)}
    row: dict[str, float] = {}
    row["decide"], decision = cpu_ms(lambda: on_broker_change(ctx, survivors), runs, "decide")
    row["invariants"], _ = cpu_ms(
        lambda: check_invariants(decision.context, ctx, frozenset(), only_changed=True), runs, "invariants")
    fence = zk_store.ControllerEpoch(ctx.controller_epoch, ctx.controller_epoch_zk_version)
    batch = zk_store.DEFAULT_BATCH_SIZE
    row["zk ops (translate)"], ops = cpu_ms(lambda: zk_ops(decision), runs, "zk ops (translate)")
    row["zk bytes (kazoo)"], _ = cpu_ms(lambda: kazoo_bytes(ops, fence, batch), runs, "zk bytes (kazoo)")
    if own_bytes(ops, fence, batch) is not None:
        row["zk bytes (own)"], _ = cpu_ms(lambda: own_bytes(ops, fence, batch), runs, "zk bytes (own)")
    row["requests (encode)"], _ = cpu_ms(lambda: encode_requests(decision), runs, "requests (encode)")
    return row


class _BrokerObject:
    """Stands for the long-lived objects of the broker process the controller
    runs in (partitions, logs, segments): what a full collection traverses."""

    __slots__ = ("value", "items", "attributes")

    def __init__(self, value: int) -> None:
        self.value, self.items, self.attributes = value, [value], {}


def gc_during_decision(n: int, heap_objects: int, runs: int = 5) -> str:
    """Collections during the failover step (decision and invariant checks),
    with `heap_objects` other long-lived objects in the process: with the
    collector on, with gc.freeze() after the context is loaded, and paused
    for the step as Controller._run has it (its collections come after)."""
    heap = [_BrokerObject(i) for i in range(heap_objects)]
    lines = []
    for mode in ("as is", "after gc.freeze()", "paused (Controller)"):
        ctx = failover_context(n)
        survivors = {1: registration(1), 3: registration(3)}
        gc.collect()
        if mode == "after gc.freeze()":
            gc.freeze()
        pauses: list[tuple[int, float]] = []
        started: dict[str, float] = {}

        def callback(phase, info):
            if phase == "start":
                started["t"] = time.perf_counter()
            else:
                pauses.append((info["generation"], (time.perf_counter() - started["t"]) * 1000))

        cpu = []
        gc.callbacks.append(callback)
        try:
            for _ in range(runs):
                if mode == "paused (Controller)":
                    gc.disable()
                start = time.process_time()
                decision = on_broker_change(ctx, survivors)
                check_invariants(decision.context, ctx, frozenset(), only_changed=True)
                cpu.append((time.process_time() - start) * 1000)
                gc.enable()
                del decision
        finally:
            gc.callbacks.remove(callback)
            gc.unfreeze()
        by_gen = {g: [ms for gen, ms in pauses if gen == g] for g in (0, 1, 2)}
        counts = ", ".join(f"gen{g} {len(v) / runs:.1f} ({sum(v) / runs:.1f} ms)" for g, v in by_gen.items())
        lines.append(f"{mode:<20} step {statistics.median(cpu):6.1f} ms "
                     f"CPU (median); collections per step (mean): {counts}")
    del heap
    return "\n    ".join(lines)


def failover_step(store, fence, n: int, runs: int) -> dict[str, float]:
    """The controller's part of a failover against the real ZooKeeper, as
    Controller._run carries it out: the decision, its state writes through
    ZkPort (fenced, batched), their results applied, and the new leader's
    LeaderAndIsr encoded (what its sender thread does before sending); the
    collector paused as the controller has it. What it leaves
    out: reading /brokers/ids, and the invariant checks (after the requests
    are queued)."""
    from dataclasses import replace

    from kafkactl.cluster.controller.execution import apply_results
    from kafkactl.cluster.zk import layout

    topic = "t"
    paths = [layout.partition_state(topic, p) for p in range(n)]
    base = failover_context(n)
    store.client.ensure_path(layout.partitions(topic))
    data = codecs_encode(base.leadership[base.all_partitions()[0]])
    if not all(r.ok for r in store.write([zk_store.Create(p.rsplit("/", 1)[0]) for p in paths], fence)):
        raise RuntimeError("could not create the partitions' znodes")
    if not all(r.ok for r in store.write([zk_store.Create(p, data) for p in paths], fence)):
        raise RuntimeError("could not create the state znodes")
    port = ZkPort(store, fence.epoch)
    survivors = {1: registration(1), 3: registration(3)}
    steps: dict[str, list[float]] = {"step: decide": [], "step: zk writes": [], "step: results": [],
                                     "step: first LAI": [], "step CPU": [], "step wall": []}
    steps["step: in collections"] = []
    pauses: list[float] = []
    started: dict[str, float] = {}

    def on_gc(phase, info):
        if phase == "start":
            started["t"] = time.perf_counter()
        else:
            pauses.append((time.perf_counter() - started["t"]) * 1000)

    gc.callbacks.append(on_gc)
    try:
        for run in range(runs):
            _failover_run(run, n, fence, port, survivors, steps, pauses)
    finally:
        gc.callbacks.remove(on_gc)
    return {name: statistics.median(values) for name, values in steps.items()}


def _failover_run(run, n, fence, port, survivors, steps, pauses) -> None:
    from dataclasses import replace

    from kafkactl.cluster.controller.execution import apply_results

    if True:
        ctx = failover_context(n)
        ctx.controller_epoch, ctx.controller_epoch_zk_version = fence.epoch, fence.zk_version
        for tp, state in list(ctx.leadership.items()):
            ctx.leadership[tp] = replace(state, zk_version=run)       # what ZooKeeper holds now
        gc.collect()
        pauses.clear()
        gc.disable()                  # as Controller._run does for the whole step
        start_cpu, start_wall = time.process_time(), time.perf_counter()
        decision = on_broker_change(ctx, survivors)
        decided = time.process_time()
        results = port.apply_writes(decision.zk_writes, fence.zk_version)
        written = time.process_time()
        outcome = apply_results(ctx, decision, results)
        applied = time.process_time()
        # The controller queues first the LeaderAndIsr of the broker taking
        # over the most leaderships: broker 3 here.
        first = next(r for r in outcome.requests if isinstance(r, LeaderAndIsr) and r.broker_id == 3)
        shared = getattr(wire, "_shared", None)
        if shared is not None:
            shared.clear()
        wire_request(first)
        end_cpu, end_wall = time.process_time(), time.perf_counter()
        steps["step: in collections"].append(sum(pauses))
        gc.enable()
        if outcome.reread:
            raise RuntimeError("the benchmark's failover did not go through")
        for name, value in (("step: decide", decided - start_cpu), ("step: zk writes", written - decided),
                            ("step: results", applied - written), ("step: first LAI", end_cpu - applied),
                            ("step CPU", end_cpu - start_cpu), ("step wall", end_wall - start_wall)):
            steps[name].append(value * 1000)


def codecs_encode(state) -> bytes:
    from kafkactl.cluster.zk import codecs
    return codecs.encode_partition_state(state)


def real_zookeeper(n: int, runs: int) -> dict[str, float]:
    from kafkactl.cluster.local import ZooKeeperCommand, procs
    from kafkactl.cluster.local.ports import free_loopback_ports
    from kafkactl.cluster.local.zookeeper import wait_ready, zoo_cfg
    from kafkactl.cluster.zk import client as zk_client

    with tempfile.TemporaryDirectory(prefix="bench-zk-") as tmp:
        root = Path(tmp)
        port = free_loopback_ports(1)[0]
        config = root / "zoo.cfg"
        config.write_text(zoo_cfg(root / "data", port))
        log_file = root / "zookeeper.log"
        launched = procs.spawn(ZooKeeperCommand().argv(config, root), log_file, root)
        client = None
        try:
            wait_ready("127.0.0.1", port, 30, lambda: procs.exit_code(launched.pid) is None,
                       log_file, launched.log_offset)
            # A long session: on a loaded machine ZooKeeper can go quiet for seconds
            # under 50,000 writes, and kazoo drops a connection after a third of it.
            client = zk_client.connect(f"127.0.0.1:{port}/bench", session_timeout_ms=30000)
            store = zk_store.ZkControllerStore(client, timeout_s=30.0)
            fence = store.elect(1, 1)
            client.ensure_path("/states")
            paths = [f"/states/{i}" for i in range(n)]
            data = b'{"controller_epoch":1,"leader":3,"version":1,"leader_epoch":4,"isr":[3,1]}'
            created = store.write([zk_store.Create(p, data) for p in paths], fence)
            if not all(r.ok for r in created):
                raise RuntimeError("could not create the benchmark's znodes")
            cpu, wall = [], []
            for run in range(runs):
                ops = [zk_store.SetData(p, data, version=run) for p in paths]
                gc.collect()
                start_cpu, start_wall = time.process_time(), time.perf_counter()
                results = store.write(ops, fence)
                cpu.append((time.process_time() - start_cpu) * 1000)
                wall.append((time.perf_counter() - start_wall) * 1000)
                if not all(r.ok for r in results):
                    raise RuntimeError("a benchmark write failed")
            row = {"zk write CPU": statistics.median(cpu), "zk write wall": statistics.median(wall)}
            row.update(failover_step(store, fence, n, runs))
            return row
        finally:
            if client is not None:
                zk_client.close(client)
            os.kill(launched.pid, signal.SIGKILL)
            procs.exit_code(launched.pid)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000,50000", help="partition counts, comma-separated")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--zk", action="store_true", help="also time writes to a real ZooKeeper")
    parser.add_argument("--gc", action="store_true",
                        help="show collections during the failover step: collector on, gc.freeze(), paused")
    parser.add_argument("--heap-objects", type=int, default=300_000,
                        help="long-lived objects standing for the broker process (--gc)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus; CPU ms, median of {args.runs} runs")
    for n in sizes:
        row = in_process(n, args.runs)
        if args.zk:
            row.update(real_zookeeper(n, max(args.runs // 2, 3) if n > 10000 else args.runs))
        print(f"\n{n:,} partitions")
        print(f"  {'step':<22}{'median ms':>10}{'µs/partition':>15}{'min ms':>10}")
        for name, ms in row.items():
            low = f"{MINIMA[name]:>10.1f}" if name in MINIMA else ""
            print(f"  {name:<22}{ms:>10.1f}{ms * 1000 / n:>15.2f}{low}")
        if args.gc:
            print(f"  failover step (decide + invariants), {args.heap_objects:,} other long-lived objects:\n"
                  f"    {gc_during_decision(n, args.heap_objects)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
