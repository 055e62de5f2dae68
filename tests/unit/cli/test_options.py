"""The argv pre-pass that lifts shared options from anywhere in argv."""

import pytest

from kafkactl.cli.errors import CliUsageError
from kafkactl.cli.options import SharedOptions, lift_shared_options


def test_before_and_after_the_subcommand_give_the_same_result():
    before = lift_shared_options(["-o", "json", "cluster", "status"])
    after = lift_shared_options(["cluster", "status", "-o", "json"])
    assert before == after == (SharedOptions(output="json"), ["cluster", "status"])


@pytest.mark.parametrize("argv", [
    ["cluster", "status", "--output=yaml"],
    ["cluster", "status", "--output", "yaml"],
    ["cluster", "-o", "yaml", "status"],
    ["cluster", "status", "-oyaml"],
    ["cluster", "status", "-o=yaml"],
])
def test_value_forms(argv):
    options, rest = lift_shared_options(argv)
    assert options.output == "yaml"
    assert rest == ["cluster", "status"]


def test_every_shared_option_and_leaves_the_rest_in_order():
    argv = ["--debug", "cluster", "-z", "zk:2181/kafka", "up", "--brokers", "2",
            "--context=prod", "--timeout", "7.5", "--dir", "/x"]
    options, rest = lift_shared_options(argv)
    assert options == SharedOptions(zookeeper="zk:2181/kafka", context="prod",
                                    timeout_s=7.5, debug=True)
    assert rest == ["cluster", "up", "--brokers", "2", "--dir", "/x"]


def test_later_occurrence_wins():
    options, _ = lift_shared_options(["-o", "json", "cluster", "status", "--output", "yaml"])
    assert options.output == "yaml"


def test_nothing_after_double_dash_is_lifted():
    options, rest = lift_shared_options(["-o", "json", "cmd", "--", "-o", "--debug"])
    assert options == SharedOptions(output="json")
    assert rest == ["cmd", "--", "-o", "--debug"]


def test_options_that_only_share_a_prefix_are_left_alone():
    _, rest = lift_shared_options(["cmd", "--outputs", "x", "--debugger", "-x", "--zookeeper-ish"])
    assert rest == ["cmd", "--outputs", "x", "--debugger", "-x", "--zookeeper-ish"]


@pytest.mark.parametrize("argv, fragment", [
    (["cluster", "status", "-o"], "requires a value"),
    (["-o", "--debug", "cluster"], "requires a value"),
    (["--output", "xml"], "invalid --output 'xml'"),
    (["--timeout", "soon"], "invalid --timeout"),
    (["--timeout", "0"], "positive"),
    (["--debug=yes"], "takes no value"),
    (["--zookeeper="], "non-empty"),
])
def test_bad_shared_options_are_usage_errors(argv, fragment):
    with pytest.raises(CliUsageError) as caught:
        lift_shared_options(argv)
    assert fragment in caught.value.message
    assert caught.value.exit_code == 2
