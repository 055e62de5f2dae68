"""The controller: one broker elected through ZooKeeper that decides leadership.

Two halves. The I/O layer (events, event_manager, zk_store, channel,
controller, step_timing) owns threads, ZooKeeper and sockets. The decision core (everything else
here) is pure: no I/O, no clocks, no randomness, and it never changes what
it is given.

Style of the core
-----------------
Every operation is a function `(context, input) -> Decision`:

    decision = decisions.on_broker_change(context, registrations)

`ControllerContext` (context.py) is what the controller knows. An operation
copies it (`context.copy()` copies containers only; all values are
immutable), changes the copy and returns it as `decision.context`: the
context *if every write succeeds*. Nothing else is changed; the caller
keeps the old context until the decision has been carried out.

A `Decision` (model.py) says what the I/O layer must do, in order:
`zk_writes` (each applied inside multi(check(/controller_epoch, version),
...)), then `requests` to brokers (LeaderAndIsr, UpdateMetadata,
StopReplica, at most one of each kind per broker) and `replies` (controlled
shutdown). `then` is the decision to make next once this one is done.

Carrying it out is `execution.execute(context, decision, zk_port, send)`,
or by hand with `execution.apply_results` (see execution.py). Partition
state writes are conditional on the znode's version: when one fails (a
leader changed its ISR meanwhile), that partition is put back as it was,
its requests are held back, its state is read again and the operation's
per-partition step (`decision.retry`) runs again on the fresh state. It is
never dropped. A /controller_epoch check failure raises
ControllerFencedError: the controller resigns.

Modules
-------
model.py                 partitions, writes, requests, replies, Decision
context.py               ControllerContext, ControllerConfig
election.py              offline / reassignment / preferred / controlled-shutdown elections
partition_state_machine, replica_state_machine   Kafka's states and valid transitions
decisions.py             every operation, one import away:
    failover.py          load_context(snapshot), on_controller_failover
    broker_change.py     on_broker_change, on_broker_startup, on_broker_failure
    topic_change.py      on_topic_change, on_topic_config_change
    deletion.py          on_delete_topics, on_stop_replica_response
    reassignment.py      on_partition_reassignment (+ progress on ISR change / startup)
    preferred.py         on_preferred_replica_election, on_auto_leader_rebalance
    shutdown.py          on_controlled_shutdown
    isr_change.py        on_isr_change
    offline_dirs.py      on_leader_and_isr_response (replicas answered KAFKA_STORAGE_ERROR go offline,
                         remembered until their broker registers again)
    log_dir_events.py    on_log_dir_event (a broker's log dir failed: LeaderAndIsr for its replicas,
                         whose KAFKA_STORAGE_ERROR answers offline_dirs acts on)
changes.py, builder.py, requests.py   shared per-partition steps, DecisionBuilder, request batching
execution.py             apply_results, adopt_reread_states, execute, ZkPort
events.py                the typed events the I/O layer queues (Kafka's names), with preempt
invariants.py            check_invariants(context, previous)
zk_reads.py              the I/O layer's ZooKeeper reads and the watches they leave (shared with the simulation)
simulation/, testing.py  a seeded simulation (fake ZooKeeper with watches, fake brokers, admin, checks,
                         runner) and helpers for tests
"""
