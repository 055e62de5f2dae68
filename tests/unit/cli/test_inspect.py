"""`kafkactl isr`, `brokers` and `controller` against the in-memory ZooKeeper.

Brokers are registered at 127.0.0.1 on a port nothing listens on, so asking
them fails at once: these tests check what is read from ZooKeeper and how a
broker that does not answer is reported (the answers of real brokers are
checked in tests/integration/cli/test_inspect.py).
"""

import json

from kafkactl.cli.main import main

DEAD_PORT = 1   # connection refused at once


def register(zookeeper, broker_id, rack=None):
    value = {"version": 5, "host": "127.0.0.1", "port": DEAD_PORT, "jmx_port": -1, "timestamp": "1700000000000",
             "endpoints": [f"PLAINTEXT://127.0.0.1:{DEAD_PORT}"], "features": {},
             "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"}}
    if rack:
        value["rack"] = rack
    zookeeper.create(f"/brokers/ids/{broker_id}", json.dumps(value).encode(), makepath=True)


def topic(zookeeper, name, partitions, states):
    zookeeper.create(f"/brokers/topics/{name}", json.dumps(
        {"version": 1, "partitions": {str(p): r for p, r in partitions.items()}}).encode(), makepath=True)
    for p, (leader, isr) in states.items():
        zookeeper.create(f"/brokers/topics/{name}/partitions/{p}/state", json.dumps(
            {"controller_epoch": 1, "leader": leader, "version": 1, "leader_epoch": 2, "isr": isr}).encode(),
            makepath=True)


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def cluster(zookeeper):
    for broker_id in (1, 2):
        register(zookeeper, broker_id, rack=f"r{broker_id}")
    zookeeper.create("/controller", b'{"brokerid":2,"version":1,"timestamp":"1700000000123"}')
    zookeeper.create("/controller_epoch", b"7")
    topic(zookeeper, "t", {0: [1, 2, 3], 1: [2, 1, 3]}, {0: (1, [1, 2, 3]), 1: (2, [2])})


def test_controller_show(fake_zookeeper, capsys):
    cluster(fake_zookeeper)
    code, out, _ = run(capsys, "controller", "show", "-o", "json")
    assert code == 0
    assert json.loads(out) == {"controller_id": 2, "controller_epoch": 7, "elected_ms": 1700000000123}
    code, out, _ = run(capsys, "controller", "show")
    assert "broker 2" in out and "controller epoch:  7" in out


def test_controller_show_without_a_controller(fake_zookeeper, capsys):
    code, out, _ = run(capsys, "controller", "show")
    assert code == 0 and "no active controller" in out


def test_brokers_list_reads_zookeeper_and_reports_brokers_that_do_not_answer(fake_zookeeper, capsys):
    cluster(fake_zookeeper)
    code, out, err = run(capsys, "brokers", "list", "-o", "json")
    assert code == 0, err
    brokers = json.loads(out)
    assert [(b["id"], b["rack"], b["controller"], b["leader_count"], b["replica_count"]) for b in brokers] == [
        (1, "r1", False, 1, 2), (2, "r2", True, 1, 2)]
    assert all(b["broker_epoch"] > 0 for b in brokers)
    assert brokers[0]["log_dirs"] is None and "broker 1 did not answer" in brokers[0]["log_dirs_error"]


def test_brokers_describe_an_unknown_id_is_refused(fake_zookeeper, capsys):
    cluster(fake_zookeeper)
    code, _, err = run(capsys, "brokers", "describe", "3")
    assert code == 2 and err.strip() == "kafkactl: error: ID: broker 3 is not registered (registered: 1,2)"


def test_brokers_describe_text(fake_zookeeper, capsys):
    cluster(fake_zookeeper)
    code, out, _ = run(capsys, "brokers", "describe", "2")
    assert code == 0
    assert "controller:    yes" in out and "rack:          r2" in out and "did not answer" in out


def test_isr_reports_replicas_out_of_the_isr_per_replica(fake_zookeeper, capsys):
    cluster(fake_zookeeper)
    code, out, err = run(capsys, "isr", "-o", "json")
    assert code == 0, err
    report = json.loads(out)
    assert report["summary"] == {"partitions": 2, "under_replicated": 1, "under_min_isr": 0, "offline": 0}
    first, second = report["partitions"]
    assert first["out_of_isr"] == []
    problems = {lag["broker_id"]: lag["problem"] for lag in second["out_of_isr"]}
    assert set(problems) == {1, 3}
    assert "broker 1 did not answer" in problems[1]
    assert problems[3] == "broker 3 is not registered (down?)"
    assert all(lag["lag"] is None for lag in second["out_of_isr"])


def test_isr_table_has_a_summary_line(fake_zookeeper, capsys):
    cluster(fake_zookeeper)
    code, out, _ = run(capsys, "isr", "t")
    assert code == 0
    assert out.strip().splitlines()[-1] == "partitions: 2, under-replicated: 1, under min ISR: 0, offline: 0"
    assert "3: lag unknown, broker 3 is not registered" in out


def test_isr_of_an_unknown_topic_and_a_bad_watch_interval(fake_zookeeper, capsys):
    cluster(fake_zookeeper)
    code, _, err = run(capsys, "isr", "nope")
    assert code == 2 and "'nope' does not exist" in err
    code, _, err = run(capsys, "isr", "t", "--watch", "--interval", "0")
    assert code == 2 and "--interval" in err


def test_isr_watch_goes_on_after_a_refresh_without_an_answer(monkeypatch, capsys):
    # Nothing listens on the bootstrap server: every refresh fails, the watch
    # says so each time and goes on until Ctrl-C (the third sleep here).
    import time

    sleeps = []

    def sleep(seconds):
        sleeps.append(seconds)
        if len(sleeps) == 3:
            raise KeyboardInterrupt

    monkeypatch.setattr(time, "sleep", sleep)
    code, _, err = run(capsys, "isr", "t", "--watch", "--interval", "0.25", "-b", f"127.0.0.1:{DEAD_PORT}")
    assert code == 0 and sleeps == [0.25] * 3
    lines = err.strip().splitlines()
    assert len(lines) == 3 and all(line.startswith("kafkactl: error: no broker answered") and
                                   line.endswith("(trying again in 0.25 s)") for line in lines), err
