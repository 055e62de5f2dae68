"""support/ansible_runner.py's reading of ansible-playbook's output (pure)."""

from __future__ import annotations

from support.ansible_runner import changed_hosts, play_recap

OUTPUT = """\
PLAY [Restart the ZooKeeper servers] *******************************************

TASK [kafkactl : Restart the service under the supervisor] *********************
changed: [h2]

TASK [zookeeper : Wait until the server answers ruok] **************************
ok: [h2]

PLAY [Restart the ZooKeeper servers] *******************************************

TASK [kafkactl : Restart the service under the supervisor] *********************
changed: [h1]

RUNNING HANDLER [broker : Restart the broker under the supervisor] *************
changed: [h3]

PLAY RECAP *********************************************************************
h1                         : ok=12   changed=1    unreachable=0    failed=0    skipped=3    rescued=0    ignored=0
h2                         : ok=10   changed=0    unreachable=0    failed=1    skipped=3    rescued=0    ignored=0
"""


def test_play_recap_counts_by_host():
    recap = play_recap(OUTPUT)
    assert recap == {
        "h1": {"ok": 12, "changed": 1, "unreachable": 0, "failed": 0, "skipped": 3, "rescued": 0, "ignored": 0},
        "h2": {"ok": 10, "changed": 0, "unreachable": 0, "failed": 1, "skipped": 3, "rescued": 0, "ignored": 0},
    }


def test_play_recap_without_a_recap_is_empty():
    assert play_recap("ERROR! the playbook could not be found\n") == {}


def test_changed_hosts_in_output_order():
    assert changed_hosts(OUTPUT, "kafkactl : Restart the service under the supervisor") == ["h2", "h1"]
    assert changed_hosts(OUTPUT, "broker : Restart the broker under the supervisor") == ["h3"]
    assert changed_hosts(OUTPUT, "zookeeper : Wait until the server answers ruok") == []
