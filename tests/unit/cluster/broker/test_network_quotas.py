"""Connection quota rules (network/quotas.py) on literal inputs: per-IP limits
and their overrides, the broker-wide limit, which idle connection is closed
for a new one, probation for brokers' hosts, idle expiry, and which requests
make a connection known inter-broker."""

import struct

from kafkactl.cluster.broker.config import ConfigError, from_properties
from kafkactl.cluster.broker.network.quotas import (
    ACCEPT, PROBATION, REFUSE, UNLIMITED, ConnectionLimits, admit, eviction_victim, idle_expired,
    is_inter_broker_request,
)

import pytest

LIMITS = ConnectionLimits(max_connections=10, max_connections_per_ip=3,
                          per_ip_overrides={"10.0.0.9": 5, "10.0.0.8": 0})


def test_defaults_are_unlimited_as_in_kafka():
    config, _ = from_properties({"broker.id": "1", "zookeeper.connect": "z:2181"})
    assert config.max_connections == config.max_connections_per_ip == UNLIMITED == 2147483647
    assert config.max_connections_per_ip_overrides == {}
    assert config.connections_max_idle_ms == 600000
    assert config.queued_max_request_bytes == -1
    assert admit("10.0.0.1", ConnectionLimits(), 100_000, 100_000, False).verdict == ACCEPT


def test_per_ip_limit_and_overrides():
    assert admit("10.0.0.1", LIMITS, 2, 5, False).verdict == ACCEPT
    refused = admit("10.0.0.1", LIMITS, 3, 5, False)
    assert refused.verdict == REFUSE and "max.connections.per.ip (3) reached for 10.0.0.1" in refused.reason
    assert admit("10.0.0.9", LIMITS, 4, 5, False).verdict == ACCEPT      # override 5
    assert admit("10.0.0.9", LIMITS, 5, 5, False).verdict == REFUSE
    assert admit("10.0.0.8", LIMITS, 0, 5, False).verdict == REFUSE      # override 0


def test_a_brokers_host_beyond_its_limit_is_taken_on_probation_not_refused():
    assert admit("127.0.0.1", LIMITS, 3, 5, broker_host=True).verdict == PROBATION
    assert admit("127.0.0.1", LIMITS, 2, 5, broker_host=True).verdict == ACCEPT   # under the limit: counted


def test_broker_wide_limit_closes_the_lru_idle_client_connection_or_refuses():
    admission = admit("10.0.0.1", LIMITS, 0, 10, False, lru_victim="idle-a")
    assert admission.verdict == ACCEPT and admission.evict == "idle-a"
    refused = admit("10.0.0.1", LIMITS, 0, 10, False, lru_victim=None)
    assert refused.verdict == REFUSE and "max.connections (10) reached" in refused.reason
    # Under the limit nothing is closed, whatever the victim would be.
    assert admit("10.0.0.1", LIMITS, 0, 9, False, lru_victim="idle-a").evict is None
    # Per-IP refusal comes first: no idle connection is closed for a refused one.
    assert admit("10.0.0.1", LIMITS, 3, 10, False, lru_victim="idle-a").evict is None
    # A broker's host at both limits: probation, and a client connection makes room.
    admission = admit("127.0.0.1", LIMITS, 3, 10, True, lru_victim="idle-a")
    assert (admission.verdict, admission.evict) == (PROBATION, "idle-a")


def test_the_victim_is_the_least_recently_used_that_is_not_inter_broker():
    assert eviction_victim([("follower", True), ("old-client", False), ("new-client", False)]) == "old-client"
    assert eviction_victim([("follower", True), ("controller", True)]) is None
    assert eviction_victim([]) is None


def test_idle_expiry_scans_the_lru_order_up_to_the_first_fresh_connection():
    idle = [("a", 0.0), ("b", 399.0), ("c", 400.5), ("d", 900.0)]
    assert idle_expired(idle, now_s=1000.5, max_idle_s=600.0) == ["a", "b", "c"]
    assert idle_expired(idle, now_s=1000.0, max_idle_s=600.0) == ["a", "b"]
    assert idle_expired(idle, now_s=10.0, max_idle_s=600.0) == []


def header(api_key, version, client_id=b"c", flexible=False):
    out = struct.pack(">hhih", api_key, version, 7, len(client_id)) + client_id
    return out + (b"\x00" if flexible else b"")


def test_inter_broker_requests_are_controller_apis_and_follower_fetches():
    for key in (4, 5, 6, 7):
        assert is_inter_broker_request(header(key, 3) + b"\x00" * 8)
    assert is_inter_broker_request(header(1, 11) + struct.pack(">i", 2))             # Fetch v11, replica 2
    assert not is_inter_broker_request(header(1, 11) + struct.pack(">i", -1))        # a consumer
    assert is_inter_broker_request(header(1, 12, flexible=True) + struct.pack(">i", 3))
    assert is_inter_broker_request(header(23, 4, flexible=True) + struct.pack(">i", 1))   # OffsetForLeaderEpoch
    assert not is_inter_broker_request(header(23, 2) + struct.pack(">i", 1))         # v2 has no replica_id
    assert not is_inter_broker_request(header(0, 9) + struct.pack(">i", 1))          # Produce
    assert not is_inter_broker_request(header(3, 12, flexible=True) + b"\x00" * 8)   # Metadata


def test_malformed_frames_are_not_inter_broker():
    assert not is_inter_broker_request(b"\x00\x01")
    assert not is_inter_broker_request(header(1, 11))                                # no body
    # Tagged fields claiming more than the frame holds.
    assert not is_inter_broker_request(struct.pack(">hhih", 1, 12, 7, -1) + b"\x05\x01\x7f")
    assert not is_inter_broker_request(struct.pack(">hhih", 1, 12, 7, -1) + b"\xff\xff\xff\xff\xff\x0f")


def test_config_keys_are_parsed_and_validated_naming_the_key():
    base = {"broker.id": "1", "zookeeper.connect": "z:2181"}
    config, _ = from_properties({**base, "max.connections": "50", "max.connections.per.ip": "7",
                                 "max.connections.per.ip.overrides": "hostA:100, 127.0.0.1:0,::1:4",
                                 "connections.max.idle.ms": "1500",
                                 "queued.max.request.bytes": "209715200"})
    assert (config.max_connections, config.max_connections_per_ip, config.connections_max_idle_ms) == (50, 7, 1500)
    assert config.max_connections_per_ip_overrides == {"hostA": 100, "127.0.0.1": 0, "::1": 4}
    assert config.queued_max_request_bytes == 209715200
    bad = [
        ({"max.connections.per.ip.overrides": "hostA"}, "max.connections.per.ip.overrides: invalid value"),
        ({"max.connections.per.ip.overrides": "hostA:x"}, "max.connections.per.ip.overrides: invalid value"),
        ({"max.connections.per.ip.overrides": "hostA:-1"}, "max.connections.per.ip.overrides: invalid value"),
        ({"max.connections.per.ip": "-1"}, "max.connections.per.ip: invalid value"),
        ({"max.connections.per.ip": "0"}, "max.connections.per.ip: can be 0 only when"),
        ({"max.connections": "-5"}, "max.connections: invalid value"),
        ({"connections.max.idle.ms": "0"}, "connections.max.idle.ms: invalid value"),
        ({"queued.max.request.bytes": "0"}, "queued.max.request.bytes: invalid value"),
        ({"queued.max.request.bytes": "1000"}, "queued.max.request.bytes: smaller than socket.request.max.bytes"),
    ]
    for extra, message in bad:
        with pytest.raises(ConfigError) as raised:
            from_properties({**base, **extra})
        assert str(raised.value).startswith(message), (extra, str(raised.value))
        assert "\n" not in str(raised.value)
    config, _ = from_properties({**base, "max.connections.per.ip": "0",
                                 "max.connections.per.ip.overrides": "10.1.1.1:5"})
    assert config.max_connections_per_ip == 0
