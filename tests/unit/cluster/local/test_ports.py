"""Listener ports are picked below the ephemeral range, where no outgoing
connection can take one between a broker's stop and its restart."""

import socket

from kafkactl.cluster.local import ports


def test_ports_are_distinct_free_and_below_the_ephemeral_range():
    picked = ports.free_loopback_ports(9)
    assert len(set(picked)) == 9
    assert all(ports.LOWEST_PORT <= p < ports._ephemeral_low() for p in picked)
    for port in picked:
        assert not ports.port_in_use(port)


def test_a_port_in_use_is_never_picked(monkeypatch):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        monkeypatch.setattr(ports, "_candidates", lambda host: [12001, busy])   # tried from the end
        [port] = ports.free_loopback_ports(1)
        assert port != busy and not ports.port_in_use(port)


def test_without_room_below_the_range_the_kernel_picks(monkeypatch):
    monkeypatch.setattr(ports, "_ephemeral_low", lambda: ports.LOWEST_PORT + 10)
    [port] = ports.free_loopback_ports(1)
    assert port >= ports.LOWEST_PORT + 10
