import json

import pytest

from kafkactl.cluster.deploy.layout import HostLayout
from kafkactl.cluster.deploy.render import broker_service, zookeeper_service
from kafkactl.cluster.deploy.restart_policy import RestartPolicy
from kafkactl.cluster.deploy.supervisor_definitions import (
    Definition, DefinitionError, Record, check_service, describe_exit, parse_definition, parse_proc_stat,
    parse_record, pending_restart, tail_lines,
)

SOURCE = "/opt/kafkactl/etc/services/broker.json"
GOOD = {"argv": ["/opt/kafkactl/versions/R/venv/bin/python", "-m", "kafkactl.cluster.broker",
                 "/opt/kafkactl/etc/server.properties"],
        "cwd": "/var/lib/kafkactl", "env": {"KAFKA_HEAP": "1G"}, "log_file": "/var/lib/kafkactl/logs/broker.log",
        "stop_timeout_s": 120, "release": "0.1.0-abcdef012345"}


def parse(**changes):
    document = {**GOOD, **changes}
    return parse_definition(json.dumps({key: value for key, value in document.items() if value is not None}), SOURCE,
                            "broker")


def refused(**changes) -> str:
    with pytest.raises(DefinitionError) as error:
        parse(**changes)
    message = str(error.value)
    assert "\n" not in message and message.startswith(SOURCE + ": ")
    return message.removeprefix(SOURCE + ": ")


def test_a_full_definition():
    assert parse() == Definition(
        argv=tuple(GOOD["argv"]), cwd="/var/lib/kafkactl", env={"KAFKA_HEAP": "1G"},
        log_file="/var/lib/kafkactl/logs/broker.log", stop_timeout_s=120, release="0.1.0-abcdef012345",
        restart=RestartPolicy())


def test_env_and_restart_are_optional_and_restart_numbers_override_the_defaults():
    definition = parse(env=None, restart={"initial_backoff_s": 0.1, "max_backoff_s": 0.2, "max_crashes": 3,
                                          "window_s": 60})
    assert definition.env == {}
    assert definition.restart == RestartPolicy(initial_backoff_s=0.1, max_backoff_s=0.2, reset_after_s=60.0,
                                               max_crashes=3, window_s=60)


@pytest.mark.parametrize("changes, message", [
    ({"argv": ["python", "-m", "x"]}, "argv[0]: must be an absolute path, got 'python'"),
    ({"argv": []}, "argv: must be a non-empty list of strings, got []"),
    ({"argv": "/usr/bin/java"}, "argv: must be a non-empty list of strings, got '/usr/bin/java'"),
    ({"argv": ["/usr/bin/java", 3]}, "argv[1]: must be a string without NUL, got 3"),
    ({"argv": ["/usr/bin/java", "a\0b"]}, "argv[1]: must be a string without NUL, got 'a\\x00b'"),
    ({"cwd": "var/lib/kafkactl"}, "cwd: must be an absolute path, got 'var/lib/kafkactl'"),
    ({"log_file": "broker.log"}, "log_file: must be an absolute path, got 'broker.log'"),
    ({"log_file": None}, "log_file: missing"),
    ({"env": {"A-B": "1"}}, "env: 'A-B' is not a variable name"),
    ({"env": {"HEAP": 1}}, "env.HEAP: must be a string without NUL, got 1"),
    ({"env": ["A=1"]}, "env: must be an object of strings, got ['A=1']"),
    ({"stop_timeout_s": 0}, "stop_timeout_s: must be a number from 0.001 to 3600, got 0"),
    ({"stop_timeout_s": True}, "stop_timeout_s: must be a number from 0.001 to 3600, got True"),
    ({"stop_timeout_s": "120"}, "stop_timeout_s: must be a number from 0.001 to 3600, got '120'"),
    ({"release": "0.1 beta"}, "release: must be a version such as 0.1.0-abcdef012345, got '0.1 beta'"),
    ({"restart": {"max_crashes": 2.5}}, "restart.max_crashes: must be an integer, got 2.5"),
    ({"restart": {"max_crashes": 0}}, "restart.max_crashes: must be a number from 1 to 64, got 0"),
    ({"restart": {"initial_backoff": 1}}, "restart.initial_backoff: unknown field (known: initial_backoff_s, "
                                          "max_backoff_s, reset_after_s, max_crashes, window_s)"),
    ({"restart": {"initial_backoff_s": 5, "max_backoff_s": 1}},
     "restart.initial_backoff_s: must not exceed restart.max_backoff_s"),
    ({"stop_timeout": 5}, "stop_timeout: unknown field (known: service, description, argv, cwd, env, log_file, "
                          "stop_timeout_s, release, restart)"),
    ({"service": "zookeeper"}, "service: 'zookeeper' in the definition of 'broker'"),
    ({"description": 7}, "description: must be a string without NUL, got 7"),
])
def test_a_bad_field_is_named_in_one_line(changes, message):
    assert refused(**changes) == message


def test_the_fields_render_writes_are_accepted():
    assert parse(service="broker", description="kafkactl reference broker") == parse()


def test_the_definitions_render_writes_parse():
    layout, release = HostLayout(), "0.1.0-abcdef012345"
    broker = parse_definition(broker_service(layout, release, "broker.id=1\n").to_json(), SOURCE, "broker")
    assert broker.argv[0] == layout.python(release) and broker.release == release
    zookeeper = zookeeper_service(layout, release, "/usr/bin/java", ["/usr/share/java/zookeeper.jar"], "tickTime=2000\n")
    assert parse_definition(zookeeper.to_json(), SOURCE, "zookeeper").cwd == layout.zookeeper_data_dir


def test_not_json_and_not_an_object():
    for text, message in (("{", "not valid JSON"), ("[1]", "must be a JSON object")):
        with pytest.raises(DefinitionError, match=f"^{SOURCE}: {message}"):
            parse_definition(text, SOURCE)


def test_nan_is_no_timeout():
    with pytest.raises(DefinitionError, match="stop_timeout_s: must be a number"):
        parse_definition(json.dumps(GOOD).replace("120", "NaN"), SOURCE)


@pytest.mark.parametrize("name", ["broker", "zookeeper", "z", "zk-2", "a" * 31])
def test_service_names(name):
    assert check_service(name) == name


@pytest.mark.parametrize("name", ["", "Broker", "2broker", "../broker", "broker.json", "a" * 32, "b_1"])
def test_bad_service_names(name):
    with pytest.raises(DefinitionError, match=r"^service name .*: must match \[a-z\]"):
        check_service(name)


RECORD = {"supervisor_pid": 10, "supervisor_start": 500, "child_pid": 11, "child_start": 501, "release": "0.1.0",
          "started_at": 1700000000.5, "restarts": 2, "state": "running"}


def test_a_record_and_one_in_backoff():
    assert parse_record(json.dumps(RECORD), "x.pid") == Record(10, 500, 11, 501, "0.1.0", 1700000000.5, 2, "running")
    backoff = {**RECORD, "child_pid": None, "child_start": None, "started_at": None, "state": "backoff"}
    assert parse_record(json.dumps(backoff), "x.pid").child_pid is None


@pytest.mark.parametrize("text", ["", "{", "[]", json.dumps({**RECORD, "supervisor_pid": "10"}),
                                  json.dumps({**RECORD, "restarts": True}),
                                  json.dumps({key: value for key, value in RECORD.items() if key != "state"})])
def test_what_is_not_a_record(text):
    with pytest.raises(ValueError):
        parse_record(text, "x.pid")


def test_proc_stat_fields_after_a_name_with_spaces_and_parentheses():
    rest = " ".join(["S", "1", "4242", "4242", "0", "-1"] + ["0"] * 13 + ["987654", "0"])
    assert parse_proc_stat(f"4243 (my (odd) prog) {rest}") == ("S", 4242, 987654)
    zombie = rest.replace("S", "Z", 1)
    assert parse_proc_stat(f"7 (x) {zombie}")[0] == "Z"


def test_pending_restart_compares_parsed_definitions():
    running = json.loads(json.dumps(GOOD))
    assert not pending_restart(json.loads(json.dumps(GOOD, indent=4, sort_keys=True)), running)
    assert pending_restart({**GOOD, "release": "0.2.0"}, running)
    assert pending_restart(None, running)    # the definition was removed or is unreadable


def test_exit_descriptions_and_log_tails():
    assert describe_exit(3) == "exited with status 3"
    assert describe_exit(-9) == "killed by signal 9"
    data = "".join(f"line {n}\n" for n in range(30)).encode() + b"\xff bad byte"
    tail = tail_lines(data)
    assert len(tail) == 20 and tail[0] == "line 11" and tail[-1] == "\ufffd bad byte"
