"""Connecting to ZooKeeper: an address where nothing listens fails at once."""

import socket
import time

import pytest

from kafkactl.cluster.zk.client import ZooKeeperUnavailable, connect, refused_everywhere


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]   # nothing listens once it is closed


def test_refusal_everywhere_is_told_apart_from_a_listener():
    port = closed_port()
    assert refused_everywhere(f"127.0.0.1:{port}")
    assert refused_everywhere(f"127.0.0.1:{port},127.0.0.1:{closed_port()}")
    with socket.create_server(("127.0.0.1", 0)) as listener:
        assert not refused_everywhere(f"127.0.0.1:{port},127.0.0.1:{listener.getsockname()[1]}")


def test_connect_fails_at_once_when_every_address_refuses():
    started = time.monotonic()
    with pytest.raises(ZooKeeperUnavailable, match="connection refused"):
        connect(f"127.0.0.1:{closed_port()}", connection_timeout_ms=20_000)
    assert time.monotonic() - started < 5

