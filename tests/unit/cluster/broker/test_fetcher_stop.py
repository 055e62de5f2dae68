"""Removing a fetcher's last partitions does not wait for its thread: the
thread may be in a request to a leader that does not answer (in the admin
soak, a broker whose own control thread waited likewise: two brokers
deleting a topic each waited 5 s for the other's fetcher)."""

import socket
import threading
import time
from types import SimpleNamespace

import pytest

from kafkactl.cluster.broker.broker_client import BrokerClient, BrokerConnectionError
from kafkactl.cluster.broker.replica_fetcher import FetcherConfig, PartitionFetchState, ReplicaFetcherManager


@pytest.fixture
def silent_leader():
    """A listener that accepts connections and never answers."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                continue
    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield listener.getsockname()[:2], accepted
    stop.set()
    thread.join(2)
    for sock in accepted:
        sock.close()
    listener.close()


def partition(topic: str, index: int):
    log = SimpleNamespace(latest_epoch=3, log_end_offset=10, log_start_offset=0, high_watermark=10)
    return SimpleNamespace(topic=topic, index=index, log=log)


def test_removing_the_last_partition_returns_at_once_and_the_thread_ends(silent_leader):
    endpoint, accepted = silent_leader
    manager = ReplicaFetcherManager(2, FetcherConfig(socket_timeout_ms=60_000))
    manager.add_partitions(1, endpoint, [PartitionFetchState(partition("t", 0), leader_id=1, leader_epoch=3)])
    deadline = time.monotonic() + 5
    while not accepted and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)                       # its OffsetForLeaderEpoch request is in flight, unanswered
    fetcher = manager.fetcher_for(1)
    assert fetcher is not None and fetcher.is_alive()
    started = time.monotonic()
    manager.remove_partitions([("t", 0)])
    assert time.monotonic() - started < 0.5
    assert manager.fetcher_for(1) is None
    fetcher.join(2.0)
    assert not fetcher.is_alive(), "the request in flight was not failed by the stop"
    manager.shutdown()


def test_a_fetcher_held_up_outside_its_requests_is_not_waited_for(silent_leader, monkeypatch):
    """A connection attempt that hangs (a leader's host gone from the network)
    is not interrupted by closing the client: the old stop waited 5 s for it."""
    from kafkactl.cluster.broker import replica_fetcher

    endpoint, _ = silent_leader
    connecting, released = threading.Event(), threading.Event()

    class HangingConnect(BrokerClient):
        def connect(self) -> None:
            connecting.set()
            released.wait(10)
            super().connect()
    monkeypatch.setattr(replica_fetcher, "BrokerClient", HangingConnect)
    manager = ReplicaFetcherManager(2, FetcherConfig())
    manager.add_partitions(1, endpoint, [PartitionFetchState(partition("t", 0), leader_id=1, leader_epoch=3)])
    assert connecting.wait(5)
    fetcher = manager.fetcher_for(1)
    started = time.monotonic()
    manager.remove_partitions([("t", 0)])
    assert time.monotonic() - started < 0.5
    released.set()
    fetcher.join(2.0)
    assert not fetcher.is_alive(), "the fetcher reconnected after it was stopped"
    manager.shutdown()


def test_a_shut_down_client_never_connects_again(silent_leader):
    endpoint, _ = silent_leader
    client = BrokerClient(*endpoint, client_id="test")
    client.connect()
    client.shutdown()
    with pytest.raises(BrokerConnectionError, match="shut down"):
        client.connect()
