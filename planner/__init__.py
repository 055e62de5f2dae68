"""The placement planner: a PySpark job from a cluster snapshot to a plan.

Modules (one concern each):
- options.py: PlannerOptions, the goals in priority order.
- snapshot_check.py: checking a snapshot directory (JSON Lines or Parquet)
  in plain Python, before Spark starts (every documented refusal).
- session.py: the job's Spark session (quiet, quick for small snapshots).
- snapshot.py: reading a checked snapshot into three Spark DataFrames (see
  docs/planner.md):
    brokers   (broker_id int, rack string?, network_in_capacity_bytes_per_s long,
               network_out_capacity_bytes_per_s long)
    log_dirs  (broker_id int, path string, media string "ssd"|"hdd",
               capacity_bytes long, used_bytes long)
    partitions(topic string, partition int, replicas array<int>, leader int,
               log_dirs array<string>, size_bytes long, bytes_in_per_s double,
               bytes_out_per_s double)
- constraints.py: the hard constraints as an independent checker of any
  assignment (the optimizer's results are tested against it).
- optimizer.py and goals/ (one module per goal): from the current assignment
  to the proposed one, moving only what improves the goals. The result has
  the columns of `partitions`, with replicas[0] the leader.
- baseline.py: Kafka's default assignment of the same partitions to the same
  brokers, and the lower bound (total load over total capacity).
- report.py: statistics per resource, plan.json / rollback.json / report.md /
  report.json / utilization.png.
- job.py: the job end to end, for `kafkactl plan` and spark-submit.
"""
