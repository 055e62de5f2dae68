"""The controller's handling of Python's cyclic collector during a step."""

import gc

from kafkactl.cluster.controller.step_timing import PausedCollector as _PausedCollector


def test_the_collector_is_off_during_a_step_and_back_after():
    assert gc.isenabled()
    try:
        paused = _PausedCollector()
        assert not gc.isenabled()
        paused.resume()
        assert gc.isenabled()
        paused.resume()                      # a second resume changes nothing
        assert gc.isenabled()
    finally:
        gc.enable()


def test_a_collector_that_was_off_stays_off():
    gc.disable()
    try:
        paused = _PausedCollector()
        paused.resume()
        assert not gc.isenabled()            # whoever turned it off turns it on
    finally:
        gc.enable()
