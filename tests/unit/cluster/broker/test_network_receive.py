"""Receiving whole frames: big ones arriving in pieces, small ones at once, end of stream."""

import os
import socket
import struct
import threading
import time

import pytest

from kafkactl.cluster.broker.broker_client import BrokerConnectionError, _recv_into
from kafkactl.cluster.broker.network import ConnectionClosed, FrameReader, recv_exactly_into


def tcp_pair():
    listener = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(listener.getsockname())
    server, _ = listener.accept()
    listener.close()
    return client, server


def send_slowly(sock, data, pieces=8, pause_s=0.01):
    step = len(data) // pieces + 1
    for start in range(0, len(data), step):
        sock.sendall(data[start:start + step])
        time.sleep(pause_s)


def test_a_big_frame_then_a_small_one_arrive_whole_and_at_once():
    client, server = tcp_pair()
    try:
        server.settimeout(5)
        big = os.urandom(3 * 1024 * 1024 + 5)
        small = b"ping"
        sender = threading.Thread(target=lambda: (send_slowly(client, struct.pack(">i", len(big)) + big),
                                                  time.sleep(0.2),   # the reader waits for it by then
                                                  client.sendall(struct.pack(">i", 1000) + small)))
        sender.start()
        reader = FrameReader(server, 8 * 1024 * 1024)
        assert reader.read() == big
        started = time.monotonic()
        # A frame of 1000 bytes announced, 4 sent: recv returns those 4 at once.
        view = memoryview(bytearray(4))
        prefix = memoryview(bytearray(4))
        recv_exactly_into(server, prefix)
        recv_exactly_into(server, view)
        assert bytes(view) == small and time.monotonic() - started < 1.5
        sender.join(5)
    finally:
        client.close()
        server.close()


def test_end_of_stream_mid_frame_raises_the_callers_error():
    client, server = tcp_pair()
    try:
        server.settimeout(5)
        client.sendall(os.urandom(100 * 1024))
        client.close()
        with pytest.raises(ConnectionClosed):
            recv_exactly_into(server, memoryview(bytearray(200 * 1024)))
    finally:
        server.close()
    client, server = tcp_pair()
    try:
        server.settimeout(5)
        client.close()
        with pytest.raises(BrokerConnectionError):
            _recv_into(server, memoryview(bytearray(10)))
    finally:
        server.close()
