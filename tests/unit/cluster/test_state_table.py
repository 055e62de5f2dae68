"""The generic transition table both controller state machines are written in."""

from enum import Enum

import pytest

from kafkactl.cluster.state_table import TransitionTable
from kafkactl.cluster.invariant import InvariantViolation


class Light(Enum):
    OFF = "Off"
    ON = "On"
    BROKEN = "Broken"


TABLE = TransitionTable("lamp", {
    Light.OFF: {Light.ON},
    Light.ON: {Light.OFF, Light.ON},
    Light.BROKEN: {Light.ON, Light.OFF},
})


def test_allows_exactly_what_the_table_lists():
    assert TABLE.allows(Light.OFF, Light.ON) and TABLE.allows(Light.ON, Light.ON)
    assert TABLE.allows(Light.ON, Light.BROKEN) and TABLE.allows(Light.OFF, Light.BROKEN)
    assert not TABLE.allows(Light.OFF, Light.OFF)
    assert not TABLE.allows(Light.BROKEN, Light.ON)
    assert not TABLE.allows(Light.BROKEN, Light.OFF)


def test_check_passes_a_listed_transition():
    TABLE.check("kitchen", Light.OFF, Light.ON)
    TABLE.check("kitchen", Light.ON, Light.BROKEN)


def test_check_names_the_kind_the_subject_and_both_states():
    with pytest.raises(InvariantViolation) as raised:
        TABLE.check("kitchen", Light.BROKEN, Light.ON)
    assert str(raised.value) == "lamp kitchen: Broken -> On is not a valid transition"


def test_a_state_with_no_entry_is_refused_when_the_table_is_made():
    with pytest.raises(InvariantViolation, match=r"lamp transition table: no entry for \['BROKEN'\]"):
        TransitionTable("lamp", {Light.OFF: {Light.ON}, Light.ON: {Light.OFF, Light.BROKEN}})
