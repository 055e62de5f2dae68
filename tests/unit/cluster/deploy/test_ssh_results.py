"""The SSH transport's errors, results and bounded output (ssh_results.py): pure."""

import re
import shlex
import subprocess

import pytest

from kafkactl.cluster.deploy.inventory import Connection
from kafkactl.cluster.deploy.ssh_results import (
    CommandResult, OutputBuffer, SshError, failure_message, output_tail, shell_join, shorten_command,
)

CONNECTION = Connection("10.0.0.5", 2222, "deploy", "/keys/deploy")


# --- messages

def test_an_ssh_error_is_one_line_naming_the_host_and_where_it_is():
    error = SshError("kafka-1", CONNECTION, "first line\n  second line")
    assert str(error) == "host kafka-1 (10.0.0.5:2222): first line second line"
    assert (error.host, error.problem) == ("kafka-1", "first line second line")
    assert str(SshError("k6", Connection("fd00::6"), "x")) == "host k6 ([fd00::6]:22): x"


def test_a_failed_command_shows_the_last_lines_of_stderr_else_stdout():
    result = CommandResult(3, "out 1\nout 2\n", "e1\ne2\n\ne3\ne4\n")
    assert failure_message("make install", result) == "`make install` exited 3: e2 / e3 / e4"
    assert output_tail("out 1\nout 2\n", "") == "out 1 / out 2"
    assert output_tail("", "  \n") == "(no output)"
    assert failure_message("kill -9 $$", CommandResult(-1, "", "")) == \
        "`kill -9 $$` ended without an exit status: (no output)"
    long_line = "x" * 1000
    assert len(output_tail("", long_line)) <= 300 and output_tail("", long_line).endswith("xxx")


def test_a_long_command_is_shortened_to_one_line():
    shown = shorten_command("for f in a b c; do\n  echo $f\ndone " + "y" * 200)
    assert shown.startswith("for f in a b c; do echo $f done ") and len(shown) == 80 and shown.endswith("…")


def test_shell_join_quotes_every_word_for_the_remote_shell():
    argv = ["printf", "%s\\n", "a b", "$(touch /tmp/x)", "it's", "; rm -rf /", "*", ""]
    assert shlex.split(shell_join(argv)) == argv
    printed = subprocess.run(["sh", "-c", shell_join(argv)], capture_output=True, text=True, timeout=10).stdout
    assert printed.split("\n")[:-1] == argv[2:]


# --- bounded output

def test_output_under_the_limit_is_kept_whole():
    buffer = OutputBuffer(10)
    for chunk in (b"abc", b"", b"defghij"):
        buffer.add(chunk)
    assert buffer.text() == "abcdefghij"


def test_output_under_the_limit_keeps_a_character_split_between_head_and_tail():
    buffer = OutputBuffer(4)     # head "a" and the first byte of "é", tail its second byte and "b"
    buffer.add("aéb".encode())
    assert buffer.text() == "aéb"


@pytest.mark.parametrize("chunks", [[b"abcdefghijklmnop"], [bytes([c]) for c in b"abcdefghijklmnop"],
                                    [b"abcdefg", b"hijklmnop"]])
def test_output_over_the_limit_keeps_head_and_tail_and_says_how_much_was_dropped(chunks):
    buffer = OutputBuffer(10)
    for chunk in chunks:
        buffer.add(chunk)
    head, marker, tail = re.fullmatch(r"(.*)\n(\[kafkactl: .*\])\n(.*)", buffer.text(), re.S).groups()
    assert (head, tail) == ("abcde", "lmnop")
    assert marker == "[kafkactl: 6 bytes of output dropped here, over max_output_bytes=10]"


def test_output_memory_stays_bounded():
    buffer = OutputBuffer(1000)
    for _ in range(10_000):
        buffer.add(b"z" * 700)
    assert sum(map(len, buffer._tail)) <= 500 + 700 and len(buffer._head) == 500
    assert "6999000 bytes of output dropped" in buffer.text()
