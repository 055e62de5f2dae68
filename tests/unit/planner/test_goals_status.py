"""The goal reports' pure parts (goals/status.py), the goals' own figures
on a literal cluster, and the hard constraint a refused move names."""

import pytest

from kafkactl.planner.goals.counts import Counts
from kafkactl.planner.goals.disk import Disk
from kafkactl.planner.goals.hot_on_ssd import HotOnSsd
from kafkactl.planner.goals.network import Network
from kafkactl.planner.goals.repair import Repair
from kafkactl.planner.goals.status import Figure, GoalStatus, worse
from kafkactl.planner.options import PlannerOptions
from support.goal_fixtures import cluster, replica


def test_a_figure_is_met_at_or_under_its_target_and_worse_only_above_its_start():
    assert Figure("f", 1.05, 1.05).met and not Figure("f", 1.06, 1.05).met
    assert worse(Figure("f", 1.2, 1.05), Figure("f", 1.3, 1.05))
    assert not worse(Figure("f", 1.2, 1.05), Figure("f", 1.2, 1.05))
    assert not worse(Figure("f", 3, 0), Figure("f", 0, 0))


def test_a_goal_that_ends_worse_than_it_started_is_named_with_both_figures():
    status = GoalStatus("disk", 2, [Figure("ssd max/mean", 1.2, 1.05)], end=[Figure("ssd max/mean", 1.4, 1.05)],
                        final=[Figure("ssd max/mean", 1.4, 1.05)])
    assert status.worsened() == ["ssd max/mean: 1.2 at its start, 1.4 at its end"]
    assert status.to_dict()["met"] is False and status.to_dict()["worsened"] == status.worsened()


def test_a_goal_met_at_its_end_and_not_in_the_plan_was_undone():
    status = GoalStatus("counts", 4, [Figure("most replicas", 9, 5)], end=[Figure("most replicas", 5, 5)],
                        final=[Figure("most replicas", 6, 5)])
    assert status.undone() == ["most replicas: 5 (met) at its end, 6 in the plan (target 5)"]
    assert status.worsened() == []


def test_what_held_a_goal_back_most_frequent_first_vetoes_before_hard_constraints():
    status = GoalStatus("counts", 4, [], final=[Figure("most replicas", 6, 5)], round_bound=6,
                        stopped_by_round_bound=True)
    for reasons in (["veto:disk", "hard:rack spread"], ["hard:rack spread"], ["hard:rack spread"], []):
        seen = status.refusals.candidate()
        for reason in reasons:
            kind, _, what = reason.partition(":")
            seen.veto(what) if kind == "veto" else seen.hard(what)
        seen.left()
    assert status.refusals.counts == {"veto:disk": 1, "hard:rack spread": 2, "no_destination": 1}
    assert status.held_back() == [
        "round bound: stopped after 6 rounds with work left",
        "a hard constraint (rack spread): 2 candidates left in place",
        "no destination under the goal's own limits: 1 candidate left in place",    # ties: by name
        "a higher goal's veto (disk): 1 candidate left in place"]


def test_a_met_goal_has_nothing_held_back_and_one_with_no_candidates_says_so():
    assert GoalStatus("disk", 2, [], final=[Figure("x", 1.0, 1.05)]).held_back() == []
    assert GoalStatus("disk", 2, [], final=[Figure("x", 2.0, 1.05)]).held_back()[0].startswith("no candidate")


def test_the_goals_measure_their_own_aims():
    # brokers 1-3, SSD dirs 0, 2, 4 (1,000 bytes), HDD dirs 1, 3, 5 (2,000 bytes)
    c = cluster(sizes={0: 300, 2: 100, 4: 200, 1: 400, 3: 400, 5: 400})
    c.dirs[1].hot_bytes = 50
    for b, (replicas, leaders, bytes_in) in {1: (9, 4, 60), 2: (3, 1, 20), 3: (3, 1, 20)}.items():
        c.brokers[b].replicas, c.brokers[b].leaders, c.brokers[b].bytes_in = replicas, leaders, bytes_in
    disk = {f.name: (f.value, f.target, f.resource) for f in Disk().measure(c)}
    assert disk == {"hdd log dir utilization max/mean": (1.0, 1.05, "log_dir_utilization_hdd"),
                    "ssd log dir utilization max/mean": (pytest.approx(1.5), 1.05, "log_dir_utilization_ssd")}
    counts = [(f.value, f.target) for f in Counts().measure(c)]
    assert counts == [(9, 5), (4, 2)]                        # means 5 and 2: limits floor(5.5), floor(2.2)
    assert [(f.name, f.value) for f in Network().measure(c)][0] == ("network in utilization max/mean", 1.8)
    assert [(f.name, f.value) for f in HotOnSsd().measure(c)] == [("hot bytes on HDD dirs", 50)]
    c.brokers[3].bytes_in = 900                              # above 0.8 x 1,000
    assert [f.value for f in Repair().measure(c)] == [1]


def test_a_refused_move_names_the_hard_constraint():
    c = cluster(racks=("a", "b", "a"), options=PlannerOptions(capacity_threshold=0.5), excluded=())
    rep = replica(index=1, brokers=(1, 2), dirs=(1, 3), size=100)
    assert c.hard_reason(rep, 3) == "same dir"
    assert c.hard_reason(rep, 1) == "distinct brokers"        # broker 1 holds it
    assert c.hard_reason(rep, 5) == "rack spread"             # broker 3 is in rack a, as broker 1
    c.dirs[2].size_bytes = 450
    assert c.hard_reason(rep, 2) == "capacity threshold"      # broker 2's SSD: 550 > 0.5 x 1,000
    assert c.hard_reason(replica(index=0, brokers=(1, 2), dirs=(1, 3)), 0) is None   # to its own SSD
    excluded = cluster(excluded=(3,))
    assert excluded.hard_reason(replica(), 5) == "excluded broker"
