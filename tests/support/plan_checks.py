"""An independent check of the hard constraints on a plan (the pipeline's
planner/constraints.py is not in this branch yet), on collected rows of
small test snapshots."""

from __future__ import annotations


def violations(snapshot, assignment, options) -> list[str]:
    before = {(r.topic, r.partition): r for r in snapshot.partitions.collect()}
    brokers = {r.broker_id: r for r in snapshot.brokers.collect()}
    dirs = {(r.broker_id, r.path): r for r in snapshot.log_dirs.collect()}
    eligible = [b for b in brokers if b not in options.exclude_brokers]
    racks = {brokers[b].rack for b in eligible}
    rack_count = 0 if None in racks else len(racks)
    found, used = [], {k: 0 for k in dirs}
    bytes_in, bytes_out = {b: 0.0 for b in brokers}, {b: 0.0 for b in brokers}
    rows = assignment.collect()
    if sorted((r.topic, r.partition) for r in rows) != sorted(before):
        found.append("the plan does not hold exactly the snapshot's partitions")
    for r in rows:
        name = f"{r.topic}-{r.partition}"
        if len(r.replicas) != len(before[(r.topic, r.partition)].replicas):
            found.append(f"{name}: replication factor changed")
        if len(set(r.replicas)) != len(r.replicas):
            found.append(f"{name}: two replicas on one broker")
        if r.leader != r.replicas[0] or len(r.log_dirs) != len(r.replicas):
            found.append(f"{name}: leader or log dirs misaligned")
        spread = len({brokers[b].rack for b in r.replicas})
        if rack_count and spread < min(len(r.replicas), rack_count):
            found.append(f"{name}: {spread} racks, could span {min(len(r.replicas), rack_count)}")
        for i, (b, path) in enumerate(zip(r.replicas, r.log_dirs)):
            if b in options.exclude_brokers:
                found.append(f"{name}: replica on excluded broker {b}")
            if (b, path) not in dirs:
                found.append(f"{name}: no log dir {path} on broker {b}")
                continue
            used[(b, path)] += r.size_bytes
            bytes_in[b] += r.bytes_in_per_s
            bytes_out[b] += r.bytes_out_per_s if i == 0 else 0.0
    for key, size in used.items():
        if size > options.capacity_threshold * dirs[key].capacity_bytes:
            found.append(f"log dir {key} above the capacity threshold")
    for b, row in brokers.items():
        if bytes_in[b] > options.network_in_threshold * row.network_in_capacity_bytes_per_s + 1:
            found.append(f"broker {b} above its network in threshold")
        if bytes_out[b] > options.network_out_threshold * row.network_out_capacity_bytes_per_s + 1:
            found.append(f"broker {b} above its network out threshold")
    return found
