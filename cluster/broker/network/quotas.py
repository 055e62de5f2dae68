"""Who may hold a connection: the pure rules of the network layer.

No sockets here: the selector thread (server.py) owns the counts and the
idle connections and asks these functions what to do, so every rule is
tested with literal inputs (tests/unit/cluster/broker/test_network_quotas.py).

Kafka's settings and meanings: `max.connections` (broker-wide),
`max.connections.per.ip` and `max.connections.per.ip.overrides`, all
unlimited by default (2147483647); `connections.max.idle.ms`.

What is added for a broker with one listener (Kafka protects inter-broker
traffic only with a listener of its own, KIP-402), see the package doc:
- a connection is *known inter-broker* once it has sent a controller request
  (api keys 4-7) or a Fetch / OffsetForLeaderEpoch with replica_id >= 0;
- at the broker-wide limit a new connection closes the least recently used
  idle connection that is not known inter-broker (refused when there is none);
- beyond its per-IP limit, a connection from a registered broker's host is
  taken *on probation*: not counted for its IP, it must send an inter-broker
  request first (and within PROBATION_S) or it is closed.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kafkactl.cluster.protocol.framing import FrameError, skip_tagged_fields

UNLIMITED = 2**31 - 1          # Kafka's Integer.MAX_VALUE default
# A connection on probation has this long to send its first request, which
# must be an inter-broker one. Followers and the controller send theirs right
# after connecting; an attacker's silent connections are gone after this.
PROBATION_S = 10.0

ACCEPT, PROBATION, REFUSE = "accept", "probation", "refuse"

_FETCH, _OFFSET_FOR_LEADER_EPOCH = 1, 23
_CONTROL_APIS = frozenset((4, 5, 6, 7))   # LeaderAndIsr, StopReplica, UpdateMetadata, ControlledShutdown
# First version whose request header is v2 (client id, then tagged fields).
_FLEXIBLE_FROM = {_FETCH: 12, _OFFSET_FOR_LEADER_EPOCH: 4}
# First version that carries replica_id (OffsetForLeaderEpoch gained it in v3).
_REPLICA_ID_FROM = {_FETCH: 0, _OFFSET_FOR_LEADER_EPOCH: 3}


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    max_connections: int = UNLIMITED
    max_connections_per_ip: int = UNLIMITED
    per_ip_overrides: Mapping[str, int] = field(default_factory=dict)   # IP address -> limit

    def limit_for(self, ip: str) -> int:
        return self.per_ip_overrides.get(ip, self.max_connections_per_ip)


@dataclass(frozen=True, slots=True)
class Admission:
    verdict: str            # ACCEPT, PROBATION or REFUSE
    evict: object = None    # the idle connection to close first, if any
    reason: str = ""


def admit(ip: str, limits: ConnectionLimits, from_ip: int, total: int,
          broker_host: bool, lru_victim: object = None) -> Admission:
    """A new connection from `ip`: `from_ip` connections of that IP are counted
    now, `total` connections broker-wide; `broker_host` when `ip` is a
    registered broker's; `lru_victim` what `eviction_victim` chose (only
    consulted at the broker-wide limit)."""
    verdict = ACCEPT
    limit = limits.limit_for(ip)
    if from_ip >= limit:
        if not broker_host:
            return Admission(REFUSE, reason=f"max.connections.per.ip ({limit}) reached for {ip}")
        verdict = PROBATION
    if total >= limits.max_connections:
        if lru_victim is None:
            return Admission(REFUSE, reason=f"max.connections ({limits.max_connections}) reached and "
                                            "no idle client connection to close")
        return Admission(verdict, evict=lru_victim,
                         reason=f"max.connections ({limits.max_connections}) reached")
    return Admission(verdict)


def eviction_victim(idle_in_lru_order: Iterable[tuple[object, bool]]) -> object:
    """The least recently used idle connection that is not known inter-broker:
    `idle_in_lru_order` gives (connection, known_inter_broker), oldest first."""
    for connection, inter_broker in idle_in_lru_order:
        if not inter_broker:
            return connection
    return None


def idle_expired(idle_in_lru_order: Iterable[tuple[object, float]], now_s: float,
                 max_idle_s: float) -> list:
    """The connections idle for `max_idle_s` or longer: `idle_in_lru_order`
    gives (connection, last_active_s), oldest first, so the scan stops at the
    first one still fresh."""
    expired = []
    for connection, last_active_s in idle_in_lru_order:
        if now_s - last_active_s < max_idle_s:
            break
        expired.append(connection)
    return expired


def is_inter_broker_request(frame) -> bool:
    """A controller request, or a follower's Fetch / OffsetForLeaderEpoch
    (replica_id >= 0; consumers send -1). A malformed frame is not: the
    dispatcher refuses it anyway."""
    if len(frame) < 10:
        return False
    api_key, api_version = struct.unpack_from(">hh", frame, 0)
    if api_key in _CONTROL_APIS:
        return True
    if api_key not in _FLEXIBLE_FROM or api_version < _REPLICA_ID_FROM[api_key]:
        return False
    position = 8                                         # api key, version, correlation id
    (client_id_length,) = struct.unpack_from(">h", frame, position)
    position += 2 + max(client_id_length, 0)
    if api_version >= _FLEXIBLE_FROM[api_key]:
        try:
            position = skip_tagged_fields(frame, position)
        except FrameError:      # a malformed header: not an inter-broker request
            return False
    if position + 4 > len(frame):
        return False
    return struct.unpack_from(">i", frame, position)[0] >= 0
