"""Typed controller events: each type reaches its handler through
Controller.process; events that need an active controller are preempted
when there is none (a controlled shutdown answered NOT_CONTROLLER at once);
an InvariantViolation on the event thread halts the process."""

import threading
import time
from types import SimpleNamespace

import pytest
from kio.schema.errors import ErrorCode

from kafkactl.cluster.controller import events as ev
from kafkactl.cluster.controller.context import ControllerConfig
from kafkactl.cluster.controller.controller import Controller
from kafkactl.cluster.controller.model import TopicPartition
from kafkactl.cluster.controller.testing import make_context
from kafkactl.cluster.invariant import InvariantViolation

T0 = TopicPartition("t", 0)
HANDLERS = {
    ev.ControllerChange(): "_elect_or_resign",
    ev.Reelect(): "_elect_or_resign",
    ev.SessionExpired(): "_resign",
    ev.Resign(): "_resign",
    ev.BrokerChange(): "_on_broker_change",
    ev.TopicChange(): "_on_topic_change",
    ev.TopicDeletion(): "_on_delete_topics",
    ev.PartitionReassignment(): "_on_reassignment",
    ev.PreferredReplicaElection(): "_on_preferred",
    ev.IsrChangeNotification(): "_on_isr_change",
    ev.ConfigChange(): "_on_config_change",
    ev.LogDirEventNotification(): "_on_log_dir_event",
    ev.WatchReassigningStates((T0,)): "_on_watch_reassigning",
    ev.PartitionReassignmentIsrChange(): "_on_partition_states",
    ev.AutoPreferredReplicaLeaderElection(): "_on_auto_rebalance",
    ev.ControlledShutdown(1, 5, lambda answer: None): "_on_controlled_shutdown",
    ev.StopReplicaResponseReceived(2, 5, ((T0, 0),)): "_on_stop_replica_response",
    ev.LeaderAndIsrResponseReceived(2, 5, (T0,)): "_on_leader_and_isr_response",
    ev.ApiElectLeaders(lambda answer: None, (T0,), False): "_on_elect_leaders",
    ev.ApiPartitionReassignment(lambda answer: None, ((T0, (1, 2)),)): "_on_api_reassignment",
    ev.ListPartitionReassignments(lambda answer: None, None): "_on_list_reassignments",
}


def _all_event_types():
    # From the module's names: dataclass(slots=True) leaves the class it
    # replaced among ControllerEvent's subclasses.
    return {value for value in vars(ev).values()
            if isinstance(value, type) and issubclass(value, ev.ControllerEvent)
            and value not in (ev.ControllerEvent, ev.AdminRequest)}


def test_every_event_type_has_a_kafka_name_and_a_test_here():
    types = set(_all_event_types())
    assert types == {type(e) for e in HANDLERS}
    names = [cls.name for cls in types]
    assert len(set(names)) == len(names) and "ControllerEvent" not in names


@pytest.fixture
def recording(monkeypatch):
    seen = []
    for name in set(HANDLERS.values()):
        monkeypatch.setattr(Controller, name, lambda self, event=None, _name=name: seen.append((_name, event)))
    controller = Controller(1, SimpleNamespace(), ControllerConfig())
    return controller, seen


@pytest.mark.parametrize("event", list(HANDLERS), ids=lambda e: e.name)
def test_process_dispatches_each_type_to_its_handler(recording, event):
    controller, seen = recording
    controller.context = make_context(live=(1, 2))          # active
    controller.process(event)
    assert seen == [(HANDLERS[event], event)]


@pytest.mark.parametrize("event", [e for e in HANDLERS if e.needs_active], ids=lambda e: e.name)
def test_work_for_an_active_controller_is_preempted_when_there_is_none(recording, event):
    controller, seen = recording
    controller.process(event)
    assert seen == []


def test_lifecycle_events_run_without_an_active_controller(recording):
    controller, seen = recording
    for event in (ev.ControllerChange(), ev.Reelect(), ev.SessionExpired(), ev.Resign()):
        controller.process(event)
    assert [name for name, _ in seen] == ["_elect_or_resign", "_elect_or_resign", "_resign", "_resign"]


def test_a_controlled_shutdown_on_a_broker_that_is_not_controller_answers_at_once():
    controller = Controller(1, SimpleNamespace(), ControllerConfig())
    controller.events.start()
    try:
        started = time.monotonic()
        assert controller.controlled_shutdown(2, 5) == (ErrorCode.not_controller, [])
        assert time.monotonic() - started < 2
    finally:
        controller.events.stop()


def test_resigning_answers_a_queued_controlled_shutdown_not_controller_quickly():
    controller = Controller(1, SimpleNamespace(), ControllerConfig())
    controller.context = make_context(live=(1, 2))
    # The event thread is busy with something long; a shutdown request queues behind it.
    busy, release = threading.Event(), threading.Event()
    controller._handlers[ev.TopicChange] = lambda event: (busy.set(), release.wait(10))
    controller.events.start()
    try:
        controller.events.put(ev.TopicChange())
        assert busy.wait(5)
        answer = []
        asking = threading.Thread(target=lambda: answer.append(controller.controlled_shutdown(2, 5)))
        asking.start()
        while not any(isinstance(e, ev.ControlledShutdown) for e in controller.events.queued()):
            time.sleep(0.01)
        started = time.monotonic()
        controller._resign()          # as the event thread does on a fence or a lost session
        asking.join(5)
        assert answer == [(ErrorCode.not_controller, [])]
        assert time.monotonic() - started < 2
    finally:
        release.set()
        controller.events.stop()


def test_admin_requests_queued_when_there_is_no_controller_are_answered_none_at_once():
    # None is what the handlers answer NOT_CONTROLLER for.
    controller = Controller(1, SimpleNamespace(), ControllerConfig())
    answers = []
    for event in (ev.ApiElectLeaders(answers.append, (T0,), True), ev.ListPartitionReassignments(answers.append),
                  ev.ApiPartitionReassignment(answers.append, ((T0, None),))):
        controller.admin_request(event)
    controller.events.process_queued()
    assert answers == [None, None, None]


def test_stopping_answers_a_queued_controlled_shutdown_not_controller():
    controller = Controller(1, SimpleNamespace(), ControllerConfig())
    answers = []
    controller.events.put(ev.ControlledShutdown(2, 5, answers.append))
    controller.stop()
    assert answers == [(ErrorCode.not_controller, [])]


def test_an_invariant_violation_in_a_handler_halts_after_giving_up_controller():
    halted = []
    controller = Controller(1, SimpleNamespace(), ControllerConfig(),
                            halt=lambda reason, error: halted.append((reason, error)))
    controller.context = make_context(live=(1, 2))
    gave_up = []
    controller._delete_own_controller_znode = lambda: gave_up.append(True)
    violation = InvariantViolation("two leaders in one epoch")

    def broken(event):
        raise violation
    controller._handlers[ev.TopicChange] = broken
    controller.events.put(ev.TopicChange())
    controller.events.process_queued()
    assert gave_up == [True] and controller.context is None and not controller.is_active()
    assert len(halted) == 1 and halted[0][1] is violation and "TopicChange" in halted[0][0]


def test_other_errors_in_a_handler_are_logged_and_the_controller_goes_on(caplog):
    halted = []
    controller = Controller(1, SimpleNamespace(), ControllerConfig(), halt=lambda *args: halted.append(args))
    controller.context = make_context(live=(1, 2))
    controller._handlers[ev.TopicChange] = lambda event: 1 / 0
    controller.events.put(ev.TopicChange())
    controller.events.process_queued()
    assert not halted and controller.context is not None
    assert "controller event TopicChange failed" in caplog.text


class NeverAnswers:
    """A ZooKeeper that takes requests and never answers them."""

    client_id = (42, b"")

    def get_async(self, path, watch=None):
        return SimpleNamespace(get=lambda timeout=None: (time.sleep(timeout if timeout is not None else 3600),
                                                         _raise_timeout())[1])

    delete_async = get_async


def _raise_timeout():
    from kazoo.handlers.threading import KazooTimeoutError
    raise KazooTimeoutError()


def test_no_zookeeper_call_of_the_controller_blocks_the_event_thread_for_ever():
    controller = Controller(1, NeverAnswers(), ControllerConfig())
    controller.store.timeout_s = 0.05
    started = time.monotonic()
    assert controller._controller_holder() is None
    assert controller._remove_own_stale_controller_znode() is None
    with pytest.raises(Exception):
        controller._delete_own_controller_znode()
    assert time.monotonic() - started < 2


def test_a_lost_session_preempts_queued_work_at_once_and_keeps_lifecycle_events():
    from kazoo.protocol.states import KazooState

    controller = Controller(1, SimpleNamespace(), ControllerConfig())
    controller.context = make_context(live=(1, 2))
    answers = []
    controller.events.put(ev.TopicChange())
    controller.events.put(ev.ControlledShutdown(2, 5, answers.append))
    controller.events.put(ev.ControllerChange())
    controller._on_session_state(KazooState.LOST)        # kazoo's thread
    assert answers == [(ErrorCode.not_controller, [])]
    assert controller.events.queued() == [ev.ControllerChange(), ev.SessionExpired()]
