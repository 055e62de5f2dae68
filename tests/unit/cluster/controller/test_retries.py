"""An event whose ZooKeeper calls fail is queued again after a backoff, and
after too many failures in a row the controller gives up /controller
(cluster/controller/retries.py). Before, it was logged and dropped: a watch
fires once, so the change it announced stayed unread (issue 12.2)."""

import threading
import time
from types import SimpleNamespace

import pytest
from kazoo.exceptions import ConnectionLoss, NoNodeError

from kafkactl.cluster.controller import events as ev
from kafkactl.cluster.controller.context import ControllerConfig
from kafkactl.cluster.controller.controller import Controller
from kafkactl.cluster.controller.retries import RetryPolicy
from kafkactl.cluster.controller.testing import make_context
from kafkactl.cluster.zk.client import ZooKeeperUnavailable


def test_backoff_doubles_up_to_its_bound_then_gives_up():
    policy = RetryPolicy(initial_backoff_s=0.1, max_backoff_s=0.5, max_attempts=6)
    assert [policy.failed(ev.TopicChange) for _ in range(5)] == [0.1, 0.2, 0.4, 0.5, 0.5]
    assert policy.failed(ev.TopicChange) is None
    assert policy.failed(ev.TopicChange) == 0.1          # counted afresh after giving up


def test_kinds_are_counted_apart_and_a_success_starts_again():
    policy = RetryPolicy(initial_backoff_s=1.0, max_backoff_s=60.0, max_attempts=10)
    policy.failed(ev.TopicChange)
    policy.failed(ev.TopicChange)
    assert policy.failed(ev.BrokerChange) == 1.0
    policy.succeeded(ev.TopicChange)
    assert policy.failed(ev.TopicChange) == 1.0


def test_only_events_that_read_what_changed_are_retriable():
    assert ev.PartitionReassignment.retriable and ev.BrokerChange.retriable and ev.TopicDeletion.retriable
    assert not ev.ControllerChange.retriable and not ev.AutoPreferredReplicaLeaderElection.retriable


@pytest.fixture
def controller():
    controller = Controller(1, SimpleNamespace(), ControllerConfig())
    controller._retries = RetryPolicy(initial_backoff_s=0.01, max_backoff_s=0.02, max_attempts=4)
    controller.context = make_context(live=(1, 2))
    yield controller
    controller._stopping.set()
    controller.events.stop()


def test_a_reassignment_event_that_cannot_read_zookeeper_is_processed_again(controller):
    outcomes = [ZooKeeperUnavailable("no answer"), ConnectionLoss(), None]
    handled = threading.Event()

    def reassignment(_event):
        outcome = outcomes.pop(0)
        if outcome is not None:
            raise outcome
        handled.set()
    controller._handlers[ev.PartitionReassignment] = reassignment
    controller.events.start()
    controller.events.put(ev.PartitionReassignment())
    assert handled.wait(5), "the event was dropped after a ZooKeeper error"
    assert outcomes == []


def test_after_too_many_failures_the_controller_resigns_and_gives_up_its_znode(controller, monkeypatch):
    gave_up = threading.Event()
    monkeypatch.setattr(Controller, "_delete_own_controller_znode", lambda self: gave_up.set())
    attempts = []

    def never(_event):
        attempts.append(time.monotonic())
        raise ZooKeeperUnavailable("no answer")
    controller._handlers[ev.TopicDeletion] = never
    controller.events.start()
    controller.events.put(ev.TopicDeletion())
    assert gave_up.wait(5)
    assert len(attempts) == 4 and controller.context is None and not controller.is_active()


def test_a_refusal_by_zookeeper_is_not_retried(controller):
    calls = []

    def refused(_event):
        calls.append(1)
        raise NoNodeError()
    controller._handlers[ev.TopicChange] = refused
    with pytest.raises(NoNodeError):
        controller.process(ev.TopicChange())
    assert calls == [1]


def test_a_non_retriable_event_is_not_queued_again(controller):
    def failing(_event):
        raise ZooKeeperUnavailable("no answer")
    controller._handlers[ev.AutoPreferredReplicaLeaderElection] = failing
    with pytest.raises(ZooKeeperUnavailable):
        controller.process(ev.AutoPreferredReplicaLeaderElection())
    time.sleep(0.05)
    assert controller.events.queued() == []
