"""Moves between log dirs on disk (future_logs.py): the swap's steps, a crash after each,
and how start-up settles the future dirs it finds. The broker's side (copying while the
log grows, the mover thread) is tests/unit/cluster/broker/test_log_dir_mover.py."""

import os

import pytest

from kafkactl.cluster.log.future_logs import settle_future_dirs
from kafkactl.cluster.log.layout import FUTURE_COMPLETE_MARKER, future_dir_name

STEPS = ("mark-complete", "retire-current", "promote-future")


class SimulatedCrash(Exception):
    pass


def caught_up_move(manager, make_batch, target_dir):
    """t-0 with three batches in the first ssd dir, and its future log in `target_dir`, caught up."""
    log = manager.get_or_create_log("t", 0, preferred_media="ssd")
    for i in range(3):
        log.append_as_leader(make_batch(2, timestamp_ms=i), 1)
    future = manager.create_future_log("t", 0, target_dir)
    future.append_as_follower(log.read(0, 1 << 20).region.read_bytes())
    return log, future


def names_in(path):
    return sorted(os.listdir(path))


def test_the_swap_renames_the_future_log_in_place(make_manager, dirs, make_batch):
    manager = make_manager()
    manager.startup()
    current, future = caught_up_move(manager, make_batch, dirs[2].path)
    steps = []
    swapped = manager.replace_current_with_future("t", 0, fault=steps.append)
    assert steps == list(STEPS)
    assert swapped is future and manager.get_log("t", 0) is future and manager.future_log("t", 0) is None
    assert current.closed and not future.closed
    assert (manager.dir_of("t", 0), future.dir_path) == (dirs[2].path, os.path.join(dirs[2].path, "t-0"))
    assert FUTURE_COMPLETE_MARKER not in names_in(future.dir_path)
    [retired] = [n for n in names_in(dirs[0].path) if n.startswith("t-0")]
    assert retired.endswith("-delete")
    assert future.append_as_leader(make_batch(1), 1).first_offset == 6


@pytest.mark.parametrize("step", STEPS)
def test_a_crash_after_each_step_leaves_one_log_with_everything(make_manager, dirs, make_batch, crash, step):
    manager = make_manager()
    manager.startup()
    caught_up_move(manager, make_batch, dirs[2].path)

    def fault(name):
        if name == step:
            raise SimulatedCrash(name)

    with pytest.raises(SimulatedCrash):
        manager.replace_current_with_future("t", 0, fault=fault)
    crash(manager)
    reloaded = make_manager()
    reloaded.startup()
    log = reloaded.get_log("t", 0)
    assert log.log_end_offset == 6 and log.leader_epoch_cache.entries[-1].epoch == 1
    if step == "mark-complete":   # the current dir is still there: it stays the log; the move resumes
        assert reloaded.dir_of("t", 0) == dirs[0].path
        future = reloaded.future_log("t", 0)
        assert future is not None and reloaded.future_dir_of("t", 0) == dirs[2].path
        assert FUTURE_COMPLETE_MARKER not in names_in(future.dir_path)
    else:                         # the current dir went: the marked future is the log
        assert reloaded.dir_of("t", 0) == dirs[2].path and reloaded.future_log("t", 0) is None
        assert FUTURE_COMPLETE_MARKER not in names_in(log.dir_path)
    assert not [n for d in dirs for n in names_in(d.path) if n.endswith("-delete")]


def test_start_up_resumes_promotes_or_discards_each_future_dir(dirs):
    ssd, other, hdd = (d.path for d in dirs)
    for path in (ssd, other, hdd):
        os.makedirs(path)

    def make(parent, name, complete=False):
        path = os.path.join(parent, name)
        os.makedirs(path)
        if complete:
            open(os.path.join(path, FUTURE_COMPLETE_MARKER), "wb").close()
        return path

    make(ssd, "a-0")
    resumed = make(hdd, future_dir_name("a", 0), complete=True)     # complete, but its current log exists
    promoted = make(hdd, future_dir_name("b", 0), complete=True)    # the swap got past step 2
    discarded = make(hdd, future_dir_name("c", 0))                  # nothing ever replaced by it
    make(ssd, "d-0")
    first = make(other, future_dir_name("d", 0))
    second = make(hdd, future_dir_name("d", 0))                     # a second future of d-0
    assert settle_future_dirs([ssd, other, hdd]) == {resumed: ("a", 0), first: ("d", 0)}
    assert not os.path.exists(promoted) and os.path.isdir(os.path.join(hdd, "b-0"))
    assert not os.path.exists(discarded) and not os.path.exists(second)
    assert names_in(hdd) == sorted(["b-0", os.path.basename(resumed)])
