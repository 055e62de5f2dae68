"""The controller's read of an admin znode always leaves a watch that will see
the next write, even when a tool creates the znode between the read and the
re-arm (issue 12.2: a reassignment written that way was never acted on)."""

import pytest

from kafkactl.cluster.controller.zk_reads import AdminZnodeChurn, ControllerReads

PATH = "/admin/reassign_partitions"


class Store:
    """getData answers from `reads` in turn; exists from `exists` in turn."""

    def __init__(self, reads, exists):
        self.reads, self.exists_answers, self.watched = list(reads), list(exists), []

    def get_many(self, paths, watch=None):
        self.watched.append(("get", watch))
        return {paths[0]: self.reads.pop(0)}

    def exists(self, path, watch=None):
        self.watched.append(("exists", watch))
        return self.exists_answers.pop(0)


def read(store):
    return ControllerReads(store, watch=None).watched(PATH, watch="w")


def test_a_znode_created_between_the_read_and_the_rearm_is_read_again():
    store = Store(reads=[None, (b"{}", "stat")], exists=["stat"])
    assert read(store) == (b"{}", "stat")
    assert store.watched == [("get", "w"), ("exists", "w"), ("get", "w")]


def test_an_absent_znode_leaves_an_exists_watch():
    store = Store(reads=[None], exists=[None])
    assert read(store) is None
    assert store.watched == [("get", "w"), ("exists", "w")]


def test_a_present_znode_is_read_with_its_watch_once():
    store = Store(reads=[(b"{}", "stat")], exists=[])
    assert read(store) == (b"{}", "stat") and store.watched == [("get", "w")]


def test_endless_churn_fails_loudly_instead_of_losing_the_write():
    store = Store(reads=[None] * 5, exists=["stat"] * 5)
    with pytest.raises(AdminZnodeChurn):
        read(store)
