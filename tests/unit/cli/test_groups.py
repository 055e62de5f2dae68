"""`kafkactl groups` against an in-memory ZooKeeper and a stand-in GroupAdmin
(the protocol client is tested at the wire in tests/unit/cluster/admin/):
what each command shows, commits and refuses, and that bad input is refused
with one line naming the option before anything is sent."""

from __future__ import annotations

import json

import pytest
from support.cluster_layout import register_brokers, write_topic

from kafkactl.cli.main import main
from kafkactl.cluster.admin import group_protocol as gp
from kafkactl.cluster.admin.consumer_protocol import encode_assignment


class FakeGroupAdmin:
    """Answers like a cluster holding `groups`; records commits and deletions."""

    def __init__(self) -> None:
        self.descriptions: dict[str, gp.GroupDescription] = {}
        self.committed: dict[str, dict[tuple[str, int], int]] = {}
        self.logs: dict[tuple[str, int], tuple[int, int]] = {}        # (log start, log end)
        self.at_time: dict[tuple[str, int], int] = {}
        self.commits: list[tuple[str, dict]] = []
        self.delete_errors: dict[str, str | None] = {}
        self.offset_delete_errors: dict[tuple[str, int], str | None] = {}
        self.opened = 0
        self.timestamps_asked: list[int] = []

    def group(self, name, state="Empty", members=(), committed=None):
        self.descriptions[name] = gp.GroupDescription(name, None, state, "consumer" if members or state != "Dead"
                                                      else "", "range" if members else "", tuple(members))
        self.committed[name] = committed or {}

    def __call__(self, brokers, timeout_s):      # stands in for the GroupAdmin class
        self.opened += 1
        return self

    def __enter__(self):
        return self

    def __exit__(self, *_):
        pass

    def close(self):
        pass

    def coordinator_of(self, group):
        return None

    def list_groups(self):
        return [gp.ListedGroup(g, d.protocol_type, d.state) for g, d in sorted(self.descriptions.items())], {}

    def describe_groups(self, groups):
        return {g: self.descriptions.get(g) or gp.GroupDescription(g, None, "Dead", "", "", ()) for g in groups}

    def fetch_offsets(self, groups):
        return {g: gp.GroupOffsets(g, None, dict(self.committed.get(g, {})), {}) for g in groups}

    def commit_offsets(self, group, offsets):
        self.commits.append((group, dict(offsets)))
        return {tp: None for tp in offsets}

    def delete_groups(self, groups):
        return {g: self.delete_errors.get(g) for g in groups}

    def delete_offsets(self, group, partitions):
        return None, {tp: self.offset_delete_errors.get(tp) for tp in partitions}

    def list_offsets(self, leaders, timestamps):
        answers = {}
        for tp, timestamp in timestamps.items():
            self.timestamps_asked.append(timestamp)
            start, end = self.logs[tp]
            answers[tp] = ({-2: start, -1: end}.get(timestamp, self.at_time.get(tp, -1)), None)
        return answers


def member(member_id, partitions, client_id="app", host="/127.0.0.1"):
    return gp.GroupMember(member_id, None, client_id, host, b"", encode_assignment(partitions))


@pytest.fixture
def cluster(fake_zookeeper, monkeypatch):
    from kafkactl.cluster.admin import group_queries

    register_brokers(fake_zookeeper, ids=(1, 2))
    write_topic(fake_zookeeper, "orders", {0: 1, 1: 2, 2: 1})
    admin = FakeGroupAdmin()
    admin.logs = {("orders", 0): (0, 100), ("orders", 1): (10, 50), ("orders", 2): (0, 0)}
    monkeypatch.setattr(group_queries, "GroupAdmin", admin)
    return admin


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err):
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kafkactl: error: "), err
    return lines[0]


def test_describe_shows_members_assignment_and_lag(cluster, capsys):
    cluster.group("app", "Stable", [member("m-1", {"orders": [0, 2]}), member("m-2", {"orders": [1]})],
                  committed={("orders", 0): 40, ("orders", 1): 50})
    code, out, _ = run(capsys, "groups", "describe", "app", "-o", "json")
    assert code == 0
    data = json.loads(out)
    assert (data["state"], data["protocol_type"], data["protocol"]) == ("Stable", "consumer", "range")
    assert [m["assignment"]["partitions"] for m in data["members"]] == [{"orders": [0, 2]}, {"orders": [1]}]
    assert [(p["partition"], p["committed_offset"], p["log_end_offset"], p["lag"], p["member_id"])
            for p in data["partitions"]] == [(0, 40, 100, 60, "m-1"), (1, 50, 50, 0, "m-2"), (2, None, 0, None, "m-1")]
    assert data["total_lag"] == 60
    code, out, _ = run(capsys, "groups", "describe", "app")
    assert "total lag:    60" in out and "orders:0,2" in out


def test_describe_of_a_group_that_does_not_exist(cluster, capsys):
    code, _, err = run(capsys, "groups", "describe", "nope")
    assert code == 2 and "group 'nope' does not exist" in one_line(err)


def test_lag_sorts_by_lag_and_max_lag_alerts(cluster, capsys):
    cluster.group("small", committed={("orders", 0): 95})
    cluster.group("big", committed={("orders", 0): 10, ("orders", 1): 20})
    code, out, err = run(capsys, "groups", "lag", "-o", "json")
    assert code == 0 and err == ""
    assert [(g["group"], g["lag"]) for g in json.loads(out)] == [("big", 120), ("small", 5)]
    code, _, err = run(capsys, "groups", "lag", "--max-lag", "100")
    assert code == 1 and "big (120)" in err and "small" not in err
    assert run(capsys, "groups", "lag", "--max-lag", "120")[0] == 0


def test_reset_dry_run_commits_nothing_and_execute_commits_the_clamped_plan(cluster, capsys):
    cluster.group("app", committed={("orders", 0): 40})
    code, out, err = run(capsys, "groups", "reset-offsets", "app", "--topic", "orders:0,1", "--to-offset", "70",
                         "-o", "json")
    assert code == 0 and "dry run" in err and cluster.commits == []
    assert json.loads(out)["partitions"] == [
        {"topic": "orders", "partition": 0, "current_offset": 40, "new_offset": 70},
        {"topic": "orders", "partition": 1, "current_offset": None, "new_offset": 50}]
    assert run(capsys, "groups", "reset-offsets", "app", "--topic", "orders:0,1", "--to-offset", "70",
               "--execute")[0] == 0
    assert cluster.commits == [("app", {("orders", 0): 70, ("orders", 1): 50})]


def test_reset_is_refused_while_the_group_is_active(cluster, capsys):
    cluster.group("app", "Stable", [member("m-1", {"orders": [0]})], committed={("orders", 0): 4})
    code, _, err = run(capsys, "groups", "reset-offsets", "app", "--all-topics", "--to-earliest", "--execute")
    assert code == 1
    assert one_line(err) == ("kafkactl: error: Assignments can only be reset if the group 'app' is inactive, "
                             "but the current state is Stable.")
    assert cluster.commits == []


def test_reset_of_a_group_that_does_not_exist_yet_is_allowed(cluster, capsys):
    code, out, _ = run(capsys, "groups", "reset-offsets", "new", "--topic", "orders", "--to-latest", "--export")
    assert code == 0 and out == "orders,0,100\norders,1,50\norders,2,0\n"


def test_shift_needs_a_committed_offset(cluster, capsys):
    cluster.group("app", committed={("orders", 0): 40})
    code, out, _ = run(capsys, "groups", "reset-offsets", "app", "--topic", "orders:0", "--shift-by", "-50",
                       "--export")
    assert (code, out) == (0, "orders,0,0\n")
    code, _, err = run(capsys, "groups", "reset-offsets", "app", "--topic", "orders:1", "--shift-by", "1")
    assert code == 1 and "no committed offset" in one_line(err)


def test_to_datetime_asks_the_leaders_for_that_time(cluster, capsys):
    cluster.group("app", committed={("orders", 0): 40})
    cluster.at_time = {("orders", 0): 33}
    code, out, _ = run(capsys, "groups", "reset-offsets", "app", "--topic", "orders:0,1", "--to-datetime",
                       "2020-11-10T16:51:38.198Z", "--export")
    assert (code, out) == (0, "orders,0,33\norders,1,50\n")     # no record that recent on 1: its log end
    assert 1605027098198 in cluster.timestamps_asked


def test_from_file_takes_what_export_wrote(cluster, capsys, tmp_path):
    plan = tmp_path / "plan.csv"
    plan.write_text("orders,0,7\norders,2,9\n")
    code, out, _ = run(capsys, "groups", "reset-offsets", "app", "--from-file", str(plan), "--execute", "--export")
    assert code == 0 and out == "orders,0,7\norders,2,0\n"
    assert cluster.commits == [("app", {("orders", 0): 7, ("orders", 2): 0})]


def test_delete_of_a_group_with_members_is_one_clear_line(cluster, capsys):
    cluster.delete_errors = {"app": "non_empty_group"}
    code, _, err = run(capsys, "groups", "delete", "app")
    assert code == 1 and "group 'app' still has members (NON_EMPTY_GROUP)" in one_line(err)
    code, out, _ = run(capsys, "groups", "delete", "idle")
    assert (code, out) == (0, "deleted group idle\n")


def test_delete_offsets_of_a_subscribed_topic_is_one_clear_line(cluster, capsys):
    cluster.offset_delete_errors = {("orders", 0): "group_subscribed_to_topic"}
    code, _, err = run(capsys, "groups", "delete-offsets", "app", "--topic", "orders:0")
    assert code == 1 and "subscribed to orders (GROUP_SUBSCRIBED_TO_TOPIC)" in one_line(err)
    cluster.offset_delete_errors = {}
    code, out, _ = run(capsys, "groups", "delete-offsets", "app", "--topic", "orders", "-o", "json")
    assert code == 0 and [d["partition"] for d in json.loads(out)] == [0, 1, 2]


def test_list(cluster, capsys):
    cluster.group("b", "Stable", [member("m", {"orders": [0]})])
    cluster.group("a")
    code, out, _ = run(capsys, "groups", "list", "-o", "json")
    assert code == 0 and [g["group"] for g in json.loads(out)] == ["a", "b"]


@pytest.mark.parametrize("argv, fragment", [
    (["reset-offsets", "g", "--to-earliest"], "--topic"),
    (["reset-offsets", "g", "--topic", "t", "--all-topics", "--to-earliest"], "not both"),
    (["reset-offsets", "g", "--topic", "t"], "give exactly one of --to-earliest"),
    (["reset-offsets", "g", "--topic", "t", "--to-latest", "--shift-by", "1"], "--to-latest and --shift-by"),
    (["reset-offsets", "g", "--topic", "t", "--to-offset", "-1"], "--to-offset"),
    (["reset-offsets", "g", "--topic", "t", "--to-datetime", "yesterday"], "--to-datetime"),
    (["reset-offsets", "g", "--topic", "t", "--by-duration", "1h"], "--by-duration"),
    (["reset-offsets", "g", "--topic", "t", "--by-duration", "-PT1H"], "--by-duration"),
    (["reset-offsets", "g", "--topic", "t:x", "--to-earliest"], "--topic"),
    (["reset-offsets", "g", "--from-file", "/nonexistent/plan.csv"], "--from-file"),
    (["reset-offsets", "g", "--topic", "t", "--from-file", "/nonexistent/plan.csv"], "--from-file"),
    (["reset-offsets", "", "--topic", "t", "--to-earliest"], "GROUP"),
    (["lag", "--max-lag", "-1"], "--max-lag"),
    (["describe", " "], "GROUP"),
    (["delete-offsets", "g"], "--topic"),
    (["delete-offsets", "g", "--topic", "t:1,a"], "--topic"),
])
def test_bad_input_is_refused_before_anything_is_sent(cluster, capsys, argv, fragment):
    code, _, err = run(capsys, "groups", *argv)
    assert code == 2
    assert fragment in one_line(err)
    assert cluster.opened == 0 and cluster.commits == []


def test_a_bad_plan_file_names_its_line(cluster, capsys, tmp_path):
    plan = tmp_path / "plan.csv"
    plan.write_text("orders,0,7\norders,zero,9\n")
    code, _, err = run(capsys, "groups", "reset-offsets", "app", "--from-file", str(plan))
    assert code == 2 and "--from-file line 2" in one_line(err) and cluster.opened == 0


def test_a_topic_that_does_not_exist_is_refused(cluster, capsys):
    code, _, err = run(capsys, "groups", "reset-offsets", "app", "--topic", "nope", "--to-earliest")
    assert code == 2 and "'nope': topic does not exist" in one_line(err) and cluster.commits == []


def test_group_names_complete_from_the_brokers(cluster, monkeypatch, capsys):
    cluster.group("billing")
    cluster.group("audit")
    monkeypatch.setenv("_KAFKACTL_COMPLETE", "complete_bash")
    monkeypatch.setenv("COMP_WORDS", "kafkactl groups describe bi")
    monkeypatch.setenv("COMP_CWORD", "3")
    code = main(["groups", "describe"])
    out, err = capsys.readouterr()
    assert code == 0 and out.split() == ["billing"] and err == ""
