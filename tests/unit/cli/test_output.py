"""YAML emitter and output selection."""

import json

import pytest

from kafkactl.cli.output import emit, to_yaml

DATA = {
    "zookeeper": "127.0.0.1:2181",
    "brokers": [{"id": 1, "alive": True, "pid": None, "log_dirs": ["/a/ssd0", "/a/hdd0"]},
                {"id": 2, "alive": False, "pid": 7, "log_dirs": []}],
    "overrides": {},
    "tricky": ["yes", "no", "null", "1.5", "0x10", "", " pad", "a: b", "#c", "-x", "ünï", "line\nbreak"],
    "ratio": 0.25,
}


def test_yaml_shape():
    assert to_yaml({"a": 1, "b": [1, {"c": "d", "e": [True]}], "f": {}}) == (
        "a: 1\n"
        "b:\n"
        "  - 1\n"
        "  - c: d\n"
        "    e:\n"
        "      - true\n"
        "f: {}\n"
    )


def test_yaml_scalars():
    assert to_yaml(None) == "null\n"
    assert to_yaml([]) == "[]\n"
    assert to_yaml(["plain", "yes", "1.5", "a: b"]) == '- plain\n- "yes"\n- "1.5"\n- "a: b"\n'


def test_yaml_parses_back_to_the_same_data():
    yaml = pytest.importorskip("yaml")  # PyYAML is optional; the emitter is ours
    assert yaml.safe_load(to_yaml(DATA)) == DATA


def test_emit_json_and_table(capsys):
    emit(DATA, "json")
    assert json.loads(capsys.readouterr().out) == DATA
    emit(DATA, "table", lambda: "a table")
    assert capsys.readouterr().out == "a table\n"
