"""Log storage: Kafka's on-disk format and rules, in four layers.

Each module imports only from its own layer or the ones above it in this
list, and states its rules in its docstring.

Shared by every layer
    errors          typed errors, each with its Kafka error code
    config          LogConfig: per-log settings, resolved
    durable         fsync, atomic replace, durable rename: every durable step is made of these
    checkpoint      the checkpoint file format (version, count, entries), read strictly
    dir_failures    a log dir that fails while the broker runs: offline once, reported to one handler

One segment: `<base offset>.log`, `.index`, `.timeindex`
    index           the sparse offset index (and what both indexes share)
    time_index      the sparse time index
    recovery        scanning a `.log` file batch by batch; checking index files
    segment         LogSegment: appends, reads, truncation of one segment's files

One partition: `<topic>-<partition>/`
    leader_epoch    leader epoch -> start offset, and its checkpoint
    producer_state  idempotent producers' last batches
    log_append      what an append must be: checks, offsets and epoch, rolls
    log_read        reads on a snapshot, without the log's lock
    retention       which segments retention deletes
    compaction      which records a clean keeps (cleanup.policy=compact): pure decisions
    segment_swap    replacing segments with their cleaned copy: the steps and their crash rules
    log_loader      opening a partition dir after a crash
    log             Log: the partition's state and lock
    log_clean       one clean of one compacted log: read, filter, write, swap

A broker's log dirs: `log.dirs`
    media           ssd or hdd, from the block device
    layout          every name in a log dir
    log_dir         a dir's lock, clean-shutdown marker and checkpoints
    placement       which dir a new log goes to
    future_logs     moving a log between dirs: the swap's steps and their crash rules
    housekeeping    periodic passes over many logs
    throttle        bytes per second, for background copying and cleaning
    cleaner         the log cleaner: its threads, the clean of one log, its checkpoint
    manager         LogManager: which log lives where
"""
