"""The hard-constraint checker on handcrafted assignments, and the feasibility
check that refuses what no assignment can meet."""

from kafkactl.planner.constraints import check, infeasible
from kafkactl.planner.fixtures import GB, MB, SSD
from kafkactl.planner.options import PlannerOptions
from kafkactl.planner.snapshot import schema


def assignment_of(spark, rows):
    return spark.createDataFrame(rows, schema("partitions"))


def test_the_current_assignment_of_a_healthy_cluster_has_no_violations(fixture_snapshot):
    _, snapshot, _ = fixture_snapshot("unbalanced_two_racks")
    result = check(snapshot.partitions, snapshot, PlannerOptions())
    assert (result.counts, result.examples) == ({}, [])


def test_each_hard_constraint_is_reported_with_its_subject(spark, fixture_snapshot):
    # Racks: r1 = brokers 1-3, r2 = brokers 4-6; SSD and HDD dirs of 100 and 200 GB; 125 MB/s each way.
    fixture, snapshot, _ = fixture_snapshot("unbalanced_two_racks")
    rows = {(p["topic"], p["partition"]): dict(p) for p in fixture.partitions}

    def place(topic, partition, replicas, log_dirs=None, **load):
        rows[(topic, partition)].update(replicas=replicas, leader=replicas[0],
                                        log_dirs=log_dirs or [SSD] * len(replicas), **load)

    place("orders", 0, [1, 2])                                   # both in rack r1
    place("orders", 1, [4, 4])                                   # a broker twice (and so one rack)
    place("orders", 2, [1, 4, 5])                                # replication factor 2 -> 3
    place("orders", 3, [4, 1], [SSD, "/nope"])                   # not a dir of broker 1
    place("clicks", 0, [1, 6])                                   # 6 is excluded
    place("clicks", 1, [2, 5], size_bytes=90 * GB)               # 90 GB of 100 on two SSDs
    place("clicks", 2, [3, 5], bytes_in_per_s=110e6, bytes_out_per_s=110e6)  # 0.88 of 125 MB/s
    place("clicks", 3, [1, 5], [SSD])                            # one dir for two replicas
    del rows[("orders", 5)]
    rows[("ghost", 0)] = dict(rows[("orders", 4)], topic="ghost", partition=0)
    result = check(assignment_of(spark, list(rows.values())), snapshot, PlannerOptions(exclude_brokers=(6,)))
    assert result.counts == {"partition_missing": 1, "unknown_partition": 1, "replication_factor": 1,
                             "duplicate_broker": 1, "log_dirs_length": 1, "unknown_log_dir": 2,
                             "excluded_broker": 1, "rack_spread": 2, "log_dir_capacity": 2, "network_in": 2,
                             "network_out": 1}
    assert result.examples == [
        {"kind": "partition_missing", "subject": "orders-5", "detail": "the assignment has no replicas for it"},
        {"kind": "unknown_partition", "subject": "ghost-0", "detail": "not a partition of the snapshot"},
        {"kind": "replication_factor", "subject": "orders-2", "detail": "3 replicas [1,4,5], had 2"},
        {"kind": "duplicate_broker", "subject": "orders-1", "detail": "replicas [4,4] list a broker more than once"},
        {"kind": "log_dirs_length", "subject": "clicks-3", "detail": "1 log dirs for 2 replicas"},
        {"kind": "unknown_log_dir", "subject": "clicks-3", "detail": "log dir (none) is not a log dir of broker 5"},
        {"kind": "unknown_log_dir", "subject": "orders-3", "detail": "log dir /nope is not a log dir of broker 1"},
        {"kind": "excluded_broker", "subject": "broker 6", "detail": "holds 1 replicas; --exclude-brokers asks for none"},
        {"kind": "rack_spread", "subject": "orders-0", "detail": "2 replicas on 1 racks (r1); 2 racks allow 2"},
        {"kind": "rack_spread", "subject": "orders-1", "detail": "2 replicas on 1 racks (r2); 2 racks allow 2"},
        # 90 GB of clicks-1 with orders-0 (2 GB) / clicks-2 (1 GB) and orders-2 (2 GB).
        {"kind": "log_dir_capacity", "subject": "broker 2 /data/ssd0",
         "detail": "92000000000 of 100000000000 bytes used (0.920 > 0.8)"},
        {"kind": "log_dir_capacity", "subject": "broker 5 /data/ssd0",
         "detail": "93000000000 of 100000000000 bytes used (0.930 > 0.8)"},
        {"kind": "network_in", "subject": "broker 3", "detail": "110000000 bytes/s in (0.880 of capacity > 0.8)"},
        # 110 MB/s of clicks-2 with 1 MB/s each of clicks-1, clicks-3 and orders-2.
        {"kind": "network_in", "subject": "broker 5", "detail": "113000000 bytes/s in (0.904 of capacity > 0.8)"},
        {"kind": "network_out", "subject": "broker 3", "detail": "110000000 bytes/s out (0.880 of capacity > 0.8)"},
    ]


def test_infeasible_names_the_constraint_and_why(fixture_snapshot):
    racks = fixture_snapshot("rack_constraint_unsatisfiable")[1]
    decommission = fixture_snapshot("decommission_one")[1]
    assert infeasible(racks, PlannerOptions()) == [
        "rack spread: with 2 racks, each of the 6 partitions with 2 or more replicas needs a replica in rack "
        "r2, 30.0 GB in all, but the log dirs of rack r2 (brokers 4) hold at most 16.0 GB more under the 0.8 "
        "capacity threshold"]
    assert infeasible(decommission, PlannerOptions(exclude_brokers=(5,))) == []
    assert infeasible(decommission, PlannerOptions(exclude_brokers=(3, 4, 5))) == [
        "replication factor: partition payments-0 has 3 replicas but only 2 brokers may hold replicas "
        "(excluded: 3,4,5)"]
    assert infeasible(decommission, PlannerOptions(capacity_threshold=0.01)) == [
        "log dir capacity: the replicas take 90.0 GB but the eligible brokers' log dirs have 10.0 GB free "
        "under the 0.01 capacity threshold"]
