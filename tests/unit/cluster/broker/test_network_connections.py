"""The socket server's connection rules on real sockets, with a stand-in
dispatcher that answers every request with its correlation id: LRU eviction
at max.connections that spares inter-broker connections, per-IP limits and
probation for brokers' hosts, idle reaping on an injected clock, the
queued.max.request.bytes bound, and idle connections holding no thread."""

import socket
import struct
import threading
import time

import pytest

from kafkactl.cluster.broker.network import SocketServer
from support.sockets import closed_by_peer
from support.waiting import wait_for

WAIT_S = 5.0
POLL_S = 0.01   # the server runs in this process: its state changes within milliseconds
FETCH, METADATA = 1, 3


class Answering:
    def __init__(self) -> None:
        self.handled = 0

    def dispatch(self, frame, client_ip=""):
        self.handled += 1
        return struct.pack(">ii", 4, struct.unpack_from(">i", frame, 4)[0])


def request(api_key: int, correlation_id: int, version: int = 11, replica_id: int = -1) -> bytes:
    body = struct.pack(">hhih", api_key, version, correlation_id, -1) + struct.pack(">i", replica_id)
    return struct.pack(">i", len(body)) + body


def follower_fetch(correlation_id: int) -> bytes:
    return request(FETCH, correlation_id, replica_id=2)


def connect(server, timeout_s=WAIT_S) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=timeout_s)


def ask(sock: socket.socket, frame: bytes) -> int:
    sock.sendall(frame)
    data = b""
    while len(data) < 8:
        chunk = sock.recv(8 - len(data))
        if not chunk:
            raise ConnectionError("closed by the server")
        data += chunk
    return struct.unpack(">ii", data)[1]


@pytest.fixture
def make_server():
    servers, sockets = [], []

    def make(**options):
        max_connections = options.pop("max_connections", 100)
        max_frame_bytes = options.pop("max_frame_bytes", 1 << 20)
        server = SocketServer("127.0.0.1", 0, Answering(), max_connections, max_frame_bytes, **options)
        server.start()
        servers.append(server)
        return server

    def client(server):
        sock = connect(server)
        sockets.append(sock)
        return sock

    make.client = client
    yield make
    for sock in sockets:
        sock.close()
    for server in servers:
        server.stop()


def test_at_max_connections_the_lru_idle_client_connection_is_closed_never_a_follower(make_server):
    server = make_server(max_connections=3)
    follower = make_server.client(server)
    assert ask(follower, follower_fetch(1)) == 1          # now known inter-broker
    old, recent = make_server.client(server), make_server.client(server)
    assert ask(old, request(METADATA, 2)) == 2
    # The answer can reach us before the worker hands `old` back: wait for it,
    # or it may be parked after `recent` and become the more recently used.
    wait_for(lambda: server.idle_connection_count() == 3, WAIT_S, "3 idle connections", POLL_S)
    assert ask(recent, request(METADATA, 3)) == 3         # used after `old`
    wait_for(lambda: server.idle_connection_count() == 3, WAIT_S, "all 3 handed back by their workers", POLL_S)
    newcomer = make_server.client(server)
    assert ask(newcomer, request(METADATA, 4)) == 4
    assert closed_by_peer(old, WAIT_S)                           # the least recently used client
    assert ask(recent, request(METADATA, 5)) == 5
    assert ask(follower, follower_fetch(6)) == 6
    # Followers are never closed for another: when only they are left to
    # close, the newcomer is refused.
    only_followers = make_server(max_connections=2)
    a, b = make_server.client(only_followers), make_server.client(only_followers)
    assert ask(a, follower_fetch(1)) == 1 and ask(b, follower_fetch(2)) == 2
    wait_for(lambda: only_followers.idle_connection_count() == 2, WAIT_S, "2 idle connections", POLL_S)
    refused = make_server.client(only_followers)
    assert closed_by_peer(refused, WAIT_S)
    assert ask(a, follower_fetch(3)) == 3 and ask(b, follower_fetch(4)) == 4


def test_per_ip_limit_refuses_beyond_it_and_counts_per_address(make_server):
    server = make_server(max_connections_per_ip=2, per_ip_overrides={"127.0.0.2": 3})
    first, second = make_server.client(server), make_server.client(server)
    third = make_server.client(server)
    assert closed_by_peer(third, WAIT_S)
    assert ask(first, request(METADATA, 1)) == 1 and ask(second, request(METADATA, 2)) == 2
    # Another address (an override of 3) still connects, three times.
    others = [socket.create_connection(("127.0.0.1", server.port), timeout=WAIT_S,
                                       source_address=("127.0.0.2", 0)) for _ in range(3)]
    try:
        assert [ask(sock, request(METADATA, 10 + n)) for n, sock in enumerate(others)] == [10, 11, 12]
    finally:
        for sock in others:
            sock.close()
    second.close()                                          # a slot of 127.0.0.1 is free again
    wait_for(lambda: server.connection_count() == 1, WAIT_S, "1 connection", POLL_S)
    assert ask(make_server.client(server), request(METADATA, 3)) == 3


def test_beyond_its_limit_a_brokers_host_is_on_probation(make_server):
    server = make_server(max_connections_per_ip=2, broker_hosts=lambda: frozenset({"127.0.0.1"}))
    clients = [make_server.client(server) for _ in range(2)]
    assert [ask(sock, request(METADATA, n)) for n, sock in enumerate(clients)] == [0, 1]
    # An attacker on the brokers' host gains no client connection beyond the limit ...
    extra_client = make_server.client(server)
    extra_client.sendall(request(METADATA, 5))
    assert closed_by_peer(extra_client, WAIT_S)
    # ... while a follower connecting from the same host is served.
    follower = make_server.client(server)
    assert ask(follower, follower_fetch(6)) == 6
    assert ask(follower, follower_fetch(7)) == 7


def test_connections_idle_for_connections_max_idle_ms_are_closed(make_server):
    now = [1000.0]
    server = make_server(connections_max_idle_ms=60_000, clock=lambda: now[0])
    idle, busy = make_server.client(server), make_server.client(server)
    assert ask(idle, request(METADATA, 1)) == 1
    wait_for(lambda: server.idle_connection_count() == 2, WAIT_S, "both handed back: idle since now", POLL_S)
    now[0] += 40.0
    assert ask(busy, request(METADATA, 2)) == 2
    wait_for(lambda: server.idle_connection_count() == 2, WAIT_S, "2 idle connections", POLL_S)
    now[0] += 30.0                          # idle: 70 s without a request; busy: 30 s
    assert closed_by_peer(idle, WAIT_S)
    assert not closed_by_peer(busy, 1.5)
    assert ask(busy, request(METADATA, 3)) == 3


def test_queued_max_request_bytes_bounds_requests_being_read_but_not_replication(make_server):
    server = make_server(queued_max_request_bytes=1000)
    follower = make_server.client(server)
    assert ask(follower, follower_fetch(1)) == 1
    hog = make_server.client(server)
    hog.sendall(struct.pack(">i", 50_000) + b"\x00\x03\x00\x01" + b"h" * 5_000)   # never finished
    wait_for(lambda: server.pool.used >= 1000, WAIT_S, "1000 pooled bytes in use", POLL_S)
    time.sleep(0.2)
    assert server.pool.used == 1000          # only the bound was read of the 5,004 bytes sent
    small = make_server.client(server)
    small.sendall(request(METADATA, 2))
    small.settimeout(0.5)
    with pytest.raises(socket.timeout):      # not read while the pool is full
        small.recv(1)
    assert ask(follower, follower_fetch(3)) == 3   # inter-broker requests are always read
    hog.close()
    small.settimeout(WAIT_S)
    data = small.recv(8)
    assert struct.unpack(">ii", data)[1] == 2
    wait_for(lambda: server.pool.used == 0, WAIT_S, "the pool to be free", POLL_S)


def test_idle_connections_hold_no_thread_and_only_the_bytes_received(make_server):
    server = make_server(max_connections=1000, max_frame_bytes=104857600)   # Kafka's default
    before = threading.active_count()
    sockets = [make_server.client(server) for _ in range(200)]
    for sock in sockets[:100]:
        sock.sendall(bytes.fromhex("06400000 00030001"))   # 100 MiB announced, 8 bytes sent
    wait_for(lambda: server.pool.used == 800, WAIT_S, "800 pooled bytes in use", POLL_S)
    assert server.connection_count() == 200
    assert threading.active_count() <= before + 1
    assert ask(sockets[150], request(METADATA, 9)) == 9


def test_connections_frozen_out_of_full_collections_are_still_freed_when_they_close(make_server, monkeypatch):
    """Every FREEZE_EVERY_CONNECTIONS new connections the server collects and
    freezes (later full collections skip them); a frozen connection must
    still be freed when it closes, or connection churn would leak."""
    import gc

    from kafkactl.cluster.broker.network import server as server_module

    monkeypatch.setattr(server_module, "FREEZE_EVERY_CONNECTIONS", 50)
    server = make_server(max_connections=10_000)
    gc.collect()
    gc.freeze()
    frozen_before = gc.get_freeze_count()

    def churn(rounds: int) -> None:
        for _ in range(rounds):
            batch = [connect(server) for _ in range(50)]
            assert [ask(sock, request(METADATA, i)) for i, sock in enumerate(batch)] == list(range(50))
            for sock in batch:
                sock.close()
            deadline = time.monotonic() + WAIT_S
            while server.idle_connection_count() and time.monotonic() < deadline:
                time.sleep(0.01)

    churn(4)     # the freezes happen: 200 connections
    grown_once = gc.get_freeze_count() - frozen_before
    churn(16)    # 800 more, opened, used and closed
    grown_after = gc.get_freeze_count() - frozen_before
    assert grown_once > 0, "the server never froze anything"
    assert grown_after < grown_once + 500, (
        f"frozen objects grew from {grown_once} to {grown_after} over 800 closed connections: they leak")
