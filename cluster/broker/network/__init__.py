"""The broker's TCP front end: one selector thread for every idle connection,
a thread only for a connection with a request in hand.

Threads. The `network` thread owns the listener and every *idle* connection
(no whole request received, no answer pending): it accepts, applies the
connection quotas, reads whatever bytes arrive into each connection's
buffer, and closes connections idle for `connections.max.idle.ms`. Once a
connection's buffer holds a whole request, the connection is handed to a
worker (workers.py), which handles its requests in order, sends the
answers, and hands it back when no whole request is left, no answer is
pending and no byte arrived for 50 ms (LINGER_S: a follower fetches again
and a producer sends its next batch within milliseconds, read then on the
same thread, without two hand-overs each waiting for the GIL). An idle connection therefore costs a socket and a few hundred bytes
of bookkeeping, not a thread and a 64 KiB buffer (bench/connections.py
measures both).

Why not a fixed pool of request threads, as Kafka's `num.io.threads`: the
handlers block (an acks=-1 produce waits for its followers' fetches, a fetch
long-polls), so a fixed pool can be filled with produce requests waiting for
fetches that would need a free thread. Workers are started as needed and
reused; their number is bounded by the connections with a request in hand.

Ordering (unchanged from the thread-per-connection design): a connection's
requests are handled one after the other by the worker that holds it;
pipelined acks=-1 produce answers are sent in order by an `AnswerQueue`
(answers.py), while the worker goes on reading the produce requests behind
them; any other request waits until every earlier answer is sent.

Replication is never locked out by client connections, with one listener.
Kafka (KIP-402) protects inter-broker traffic with a listener of its own;
this broker has one listener, so it protects *connections it knows to be
inter-broker* instead (quotas.py):
- A connection becomes known inter-broker with its first controller request
  (api keys 4-7) or Fetch / OffsetForLeaderEpoch with replica_id >= 0. The
  followers' fetchers and the controller send one right after connecting.
- `max.connections` reached: a new connection closes the least recently used
  idle connection that is not known inter-broker (KIP-402's rule, applied to
  the one listener). Known inter-broker connections are never closed for
  another, and a follower reconnecting is accepted by closing a client's.
- `max.connections.per.ip` never refuses a registered broker's host: beyond
  its limit such a host's connection is taken on probation, uncounted, and
  closed unless its first request, within 10 s, is inter-broker. So an
  attacker on a broker's own host (127.0.0.1 in the tests) who fills that
  host's quota still cannot lock a follower out, and gains no client
  connections beyond the limit. Known inter-broker connections are not
  counted against their host's client quota.
- The requests of known inter-broker connections are always read, even when
  `queued.max.request.bytes` is used up by client requests.
What remains possible: the protocol has no authentication on PLAINTEXT, so a
client that forges replica_id >= 0 is treated as a broker (Kafka trusts the
same field for the ISR); connections in the middle of a request are not
closed for a new one.

Memory: a connection's buffer grows with the bytes received, never to a
frame's declared size up front (frames.py), and `queued.max.request.bytes`
(KIP-72) bounds the bytes held by requests being read across the broker.
"""

from kafkactl.cluster.broker.network.answers import PIPELINED_PRODUCE_MAX, SEND_TIMEOUT_S, AnswerQueue
from kafkactl.cluster.broker.network.frames import (
    ConnectionClosed, FrameBuffer, FrameReader, MemoryPool, recv_exactly_into,
)
from kafkactl.cluster.broker.network.quotas import UNLIMITED, ConnectionLimits
from kafkactl.cluster.broker.network.server import SocketServer

__all__ = [
    "PIPELINED_PRODUCE_MAX", "SEND_TIMEOUT_S", "UNLIMITED", "AnswerQueue", "ConnectionClosed",
    "ConnectionLimits", "FrameBuffer", "FrameReader", "MemoryPool", "SocketServer", "recv_exactly_into",
]
