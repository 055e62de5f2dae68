"""What can be elected, and the report of what was."""

from kafkactl.cluster.admin import election
from kafkactl.cluster.admin.reassignment import PartitionView


def view(partition, replicas, leader, isr, epoch=5, adding=()):
    return PartitionView("t", partition, tuple(replicas), tuple(adding), (), leader, epoch, tuple(isr))


def test_preferred_obstacles():
    live = {1, 2, 3}
    assert election.preferred_obstacle(view(0, [1, 2], 2, [1, 2]), live) is None
    assert election.preferred_obstacle(view(0, [1, 2], 1, [1, 2]), live) == \
        (election.NOT_NEEDED, "preferred replica 1 already leads")
    assert election.preferred_obstacle(view(0, [4, 2], 2, [2, 4]), live) == \
        (election.FAILED, "preferred replica 4 is not alive")
    assert election.preferred_obstacle(view(0, [1, 2], 2, [2]), live) == \
        (election.FAILED, "preferred replica 1 is not in the ISR 2")
    assert election.preferred_obstacle(view(0, [1, 2, 3], 2, [1, 2], adding=[3]), live)[1] == \
        "partition is being reassigned"


def test_unclean_obstacles():
    live = {3}
    assert election.unclean_obstacle(view(0, [1, 2, 3], -1, [1]), live) is None
    assert election.unclean_obstacle(view(0, [3, 2], 3, [3]), live) == (election.NOT_NEEDED, "leader 3 is alive")
    assert election.unclean_obstacle(view(0, [1, 2], -1, [1]), live) == \
        (election.FAILED, "no live replica (replicas 1,2 are all down)")


def test_report_names_old_and_new_leader_and_epoch_or_why_not():
    before = {("t", 0): view(0, [1, 2], 2, [1, 2], epoch=4), ("t", 1): view(1, [1, 2], 2, [1, 2], epoch=4)}
    after = {("t", 0): view(0, [1, 2], 1, [1, 2], epoch=5), ("t", 1): view(1, [1, 2], 2, [2], epoch=4)}
    outcomes = election.results(before, after, sorted(before), {1, 2}, election.preferred_obstacle,
                                election.preferred_achieved)
    assert [o.to_dict() for o in outcomes] == [
        {"topic": "t", "partition": 0, "status": "elected", "old_leader": 2, "new_leader": 1, "leader_epoch": 5,
         "reason": ""},
        {"topic": "t", "partition": 1, "status": "failed", "old_leader": 2, "new_leader": 2, "leader_epoch": 4,
         "reason": "preferred replica 1 is not in the ISR 2"}]


def test_a_partition_the_controller_left_alone_is_reported_as_such():
    before = {("t", 0): view(0, [1, 3], -1, [1])}
    outcomes = election.results(before, dict(before), [("t", 0)], {3}, election.unclean_obstacle,
                                election.unclean_achieved)
    assert outcomes[0].status == election.FAILED
    assert outcomes[0].reason == "the controller did not elect it before the deadline"
    after = {("t", 0): view(0, [1, 3], 3, [3], epoch=6)}
    elected = election.results(before, after, [("t", 0)], {3}, election.unclean_obstacle, election.unclean_achieved)
    assert (elected[0].status, elected[0].old_leader, elected[0].new_leader, elected[0].leader_epoch) == \
        ("elected", -1, 3, 6)


def test_other_offline_partitions_of_the_same_topic_are_named():
    views = {("t", 0): view(0, [1, 3], -1, [1]), ("t", 1): view(1, [1, 3], -1, [1]),
             ("t", 2): view(2, [3], 3, [3])}
    assert election.other_offline(views, ["t"], [("t", 0)], {3}) == [("t", 1)]
