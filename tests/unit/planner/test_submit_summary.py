"""planner/submit.py's text output and the duration wording it shares with
`kafkactl plan` and report.md."""

from pathlib import Path

import pytest

from kafkactl.planner.submit import summary
from kafkactl.planner.usage import human_duration


def result(throttle_bytes_per_s, estimated_duration_s):
    return {"plan_partitions": 5, "options": {"throttle_bytes_per_s": throttle_bytes_per_s},
            "moves": {"after": {"bytes_moved": 3_000_000, "estimated_duration_s": estimated_duration_s}}}


def test_with_a_throttle_the_summary_gives_the_estimated_duration():
    assert summary(result(1_000_000, 9000.0), Path("/plans/x")) == (
        "wrote /plans/x: 5 partitions change (3000000 bytes moved); "
        "estimated duration at --throttle 1.0 MB/s: 2.5 h")


def test_without_a_throttle_it_gives_none():
    assert summary(result(None, None), Path("out")) == "wrote out: 5 partitions change (3000000 bytes moved)"


@pytest.mark.parametrize("seconds, text", [(0.0, "0 s"), (119.4, "119 s"), (120.0, "2 min"), (7199.0, "120 min"),
                                           (7200.0, "2.0 h"), (90_000.0, "25.0 h")])
def test_human_duration(seconds, text):
    assert human_duration(seconds) == text
