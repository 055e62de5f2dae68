"""The rule of which releases a host keeps (cluster/deploy/releases.py), and the
command the Ansible role runs on the host, over a real install root."""

import json

from kafkactl.cluster.deploy.releases import main, on_host, release_order, releases_to_remove

NEW, OLD, OLDER, OLDEST = "0.2.0-222222222222", "0.1.0-111111111111", "0.0.9-999999999999", "0.0.1-000000000001"


def test_the_new_the_previous_current_and_releases_in_use_are_kept():
    installed = {NEW: True, OLD: True, OLDER: True, OLDEST: True}
    assert releases_to_remove(installed, OLD, NEW, [OLDEST]) == (OLDER,)
    assert releases_to_remove(installed, NEW, NEW, []) == (OLDEST, OLDER)     # previous: newest other complete
    assert releases_to_remove({NEW: True, OLD: False, OLDER: True}, None, NEW, []) == (OLD,)   # incomplete goes


def test_the_newest_other_release_is_the_highest_version_not_the_last_name():
    ten, nine = "0.10.0-aaaaaaaaaaaa", "0.9.2-bbbbbbbbbbbb"
    assert sorted([ten, nine]) == [ten, nine]          # as text, 0.10 would come first
    assert releases_to_remove({NEW: True, ten: True, nine: True}, None, NEW, []) == (nine,)
    assert releases_to_remove({"0.11.0-cccccccccccc": True, ten: True, nine: True}, None,
                              "0.11.0-cccccccccccc", []) == (nine,)
    oldest_first = ["0.9.2-000000000000", "0.9.10-000000000000", "0.10.0rc1-000000000000", "0.10.0-000000000000",
                    "0.10.0-ffffffffffff", "0.10.0.1-000000000000", "1.0.0-000000000000"]
    assert sorted(reversed(oldest_first), key=release_order) == oldest_first


def install_root(tmp_path, releases: dict[str, bool], current: str | None, running: dict[str, str]):
    for name, complete in releases.items():
        (tmp_path / "versions" / name).mkdir(parents=True)
        if complete:
            (tmp_path / "versions" / name / "installed.json").write_text("{}\n")
    if current:
        (tmp_path / "current").symlink_to(f"versions/{current}")
    (tmp_path / "run").mkdir()
    for service, release in running.items():
        (tmp_path / "run" / f"{service}.running.json").write_text(json.dumps({"release": release}))
    (tmp_path / "run" / "broken.running.json").write_text("{not json")    # read as host_facts does: skipped
    return str(tmp_path)


def test_the_host_s_own_files_decide_and_the_command_prints_json(tmp_path, capsys):
    root = install_root(tmp_path, {NEW: True, OLD: True, OLDER: True, OLDEST: True}, NEW,
                        {"broker": OLDEST})
    assert on_host(root, NEW, OLD) == (OLDER,)
    assert main([root, NEW, ""]) == 0           # current pointed nowhere: the newest other complete is kept
    assert json.loads(capsys.readouterr().out) == [OLDER]


def test_the_command_refuses_bad_arguments(capsys):
    for argv in ([], ["relative/root", NEW, ""], ["/opt/kafkactl", "", ""], ["/opt/kafkactl", NEW]):
        assert main(argv) == 2
        assert "usage: python -m kafkactl.cluster.deploy.releases" in capsys.readouterr().err
