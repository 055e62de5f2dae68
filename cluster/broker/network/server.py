"""The listener, idle connections and request handling: see the package doc."""

from __future__ import annotations

import errno
import gc
import logging
import os
import select
import selectors
import socket
import threading
import time
from collections import OrderedDict, deque
from queue import SimpleQueue

from kafkactl.cluster import fatal
from kafkactl.cluster.broker.deferred import DeferredResponse
from kafkactl.cluster.broker.network import quotas
from kafkactl.cluster.broker.network.answers import SEND_TIMEOUT_S, AnswerQueue, send
from kafkactl.cluster.broker.network.frames import (
    RECEIVE_CHUNK_BYTES, ConnectionClosed, FrameBuffer, MemoryPool, receive_into,
)
from kafkactl.cluster.broker.network.quotas import ConnectionLimits
from kafkactl.cluster.broker.network.workers import WorkerPool
from kafkactl.cluster.protocol import apis
from kafkactl.cluster.protocol.framing import FrameError, peek_api

log = logging.getLogger("kafkactl.cluster.broker.network")

ACCEPTS_PER_WAKE = 64        # then the idle connections get their turn
ACCEPT_PAUSE_S = 0.1         # out of file descriptors: accept again after this
REAP_INTERVAL_S = 1.0
STARVED_RETRY_S = 0.01       # queued.max.request.bytes exhausted: try reading again after this
ANSWER_POLL_S = 0.05         # a worker whose answers are pending looks at them this often
# A worker keeps a connection this long after its last bytes before handing
# it back: a follower fetches again, and a producer sends its next batch,
# within a few milliseconds of an answer, and reading that request on the
# same thread spares two thread hand-overs (each a wait for the GIL). Idle
# connections never reach a worker; busy ones hold one, as they would a
# thread of their own.
LINGER_S = 0.05
# Connections are long-lived objects like the logs the broker froze at start:
# every this many new ones, one full collection and then gc.freeze(), so later
# full collections do not walk them again (10,000 idle connections made each
# one ~3 ms longer, seen as the paced produce p99 in bench/connections.py).
# Collecting first means no garbage is frozen; a frozen connection is freed by
# its reference count when it closes (tests/unit/cluster/broker/
# test_network_connections.py churns connections to show nothing stays).
FREEZE_EVERY_CONNECTIONS = 1000
_LISTENER, _WAKE = object(), object()


class Connection:
    """One client or broker connection. Its fields belong to the thread that
    holds it: the selector thread while it is idle, a worker while it has a
    request in hand; the hand-over (pool task, returned queue) orders them."""

    __slots__ = ("sock", "address", "ip", "frames", "answers", "inter_broker", "probation",
                 "counted_for_ip", "accepted_s", "last_active_s")

    def __init__(self, sock: socket.socket, address, max_frame_bytes: int, now_s: float) -> None:
        self.sock = sock
        self.address = address
        self.ip = address[0]
        self.frames = FrameBuffer(max_frame_bytes)
        self.answers: AnswerQueue | None = None     # once a produce answer is deferred
        self.inter_broker = False
        self.probation = False
        self.counted_for_ip = False
        self.accepted_s = now_s
        self.last_active_s = now_s


class SocketServer:
    def __init__(self, host: str, port: int, dispatcher, max_connections: int, max_frame_bytes: int, *,
                 max_connections_per_ip: int = quotas.UNLIMITED, per_ip_overrides=None,
                 connections_max_idle_ms: int = 600000, queued_max_request_bytes: int = -1,
                 broker_hosts=None, clock=time.monotonic) -> None:
        self.dispatcher = dispatcher
        self.max_frame_bytes = max_frame_bytes
        self.limits = ConnectionLimits(max_connections, max_connections_per_ip,
                                       _resolve_overrides(per_ip_overrides or {}))
        self.max_idle_s = connections_max_idle_ms / 1000
        self.pool = MemoryPool(queued_max_request_bytes)
        self.workers = WorkerPool()
        self._broker_hosts = broker_hosts or (lambda: frozenset())
        self._clock = clock
        self.listener = socket.create_server((host or "0.0.0.0", port), backlog=1024, reuse_port=False)
        self.listener.setblocking(False)
        self.port = self.listener.getsockname()[1]
        # --- the selector thread's own state
        self._selector = selectors.DefaultSelector()
        self._idle: OrderedDict[Connection, None] = OrderedDict()   # least recently used first
        self._admitted_since_freeze = 0
        self._starved: deque[Connection] = deque()   # idle, not read while the memory pool is full
        self._on_probation: deque[Connection] = deque()
        self._connections: set[Connection] = set()
        self._per_ip: dict[str, int] = {}
        self._accept_paused_until = 0.0
        self._scratch = memoryview(bytearray(RECEIVE_CHUNK_BYTES))
        self._worker_local = threading.local()    # each worker's receive scratch
        # --- hand-over from workers (and new limits from the zk-agent) to the selector thread
        self._returned: SimpleQueue = SimpleQueue()
        self._new_limits: SimpleQueue = SimpleQueue()
        self._wake_r, self._wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="network", daemon=True)

    # ---- any thread

    def start(self) -> None:
        self._selector.register(self.listener, selectors.EVENT_READ, _LISTENER)
        self._selector.register(self._wake_r, selectors.EVENT_READ, _WAKE)
        self._thread.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        self._stopping.set()
        self._wake()
        self._thread.join(timeout_s)
        self.workers.stop()

    def connection_count(self) -> int:
        return len(self._connections)

    def update_limits(self, max_connections: int, max_connections_per_ip: int,
                      per_ip_overrides: dict[str, int]) -> None:
        """Dynamic max.connections, max.connections.per.ip and its overrides.
        The host names are resolved here, on the caller's thread (the
        zk-agent's), never on the selector thread, which owns the limits and
        takes the new ones at its next wake-up. As in Kafka, connections held
        already stay; only new ones meet the new limits."""
        self._new_limits.put(ConnectionLimits(max_connections, max_connections_per_ip,
                                              _resolve_overrides(per_ip_overrides)))
        self._wake()

    def idle_connection_count(self) -> int:
        return len(self._idle)

    def _wake(self) -> None:
        try:
            os.write(self._wake_w, b"x")
        except OSError:   # BlockingIOError: a wake-up is pending already; EPIPE: stopped
            pass

    # ---- the selector thread: accepts, idle connections, quotas

    def _run(self) -> None:
        try:
            next_reap = self._clock() + REAP_INTERVAL_S
            while not self._stopping.is_set():
                timeout = STARVED_RETRY_S if self._starved else REAP_INTERVAL_S
                for key, _ in self._selector.select(timeout):
                    if key.data is _LISTENER:
                        self._accept()
                    elif key.data is _WAKE:
                        self._take_returned()
                    else:
                        self._read_idle(key.data)
                now = self._clock()
                if self._starved:
                    self._retry_starved()
                if self._accept_paused_until and now >= self._accept_paused_until:
                    self._accept_paused_until = 0.0
                    self._selector.register(self.listener, selectors.EVENT_READ, _LISTENER)
                if now >= next_reap:
                    self._reap(now)
                    next_reap = now + REAP_INTERVAL_S
                if self._admitted_since_freeze >= FREEZE_EVERY_CONNECTIONS:
                    self._admitted_since_freeze = 0
                    gc.collect()
                    gc.freeze()
        except Exception as error:
            fatal.halt_if_fatal(error, "network thread")
            log.exception("the network thread failed")
        finally:
            self._shut_down()

    def _accept(self) -> None:
        for _ in range(ACCEPTS_PER_WAKE):
            try:
                sock, address = self.listener.accept()
            except BlockingIOError:
                return
            except OSError as error:
                if error.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    # Out of descriptors: the listener would stay readable and spin.
                    log.warning("cannot accept connections: %s; retrying in %.1f s", error, ACCEPT_PAUSE_S)
                    self._selector.unregister(self.listener)
                    self._accept_paused_until = self._clock() + ACCEPT_PAUSE_S
                return
            self._admit(sock, address)

    def _admit(self, sock: socket.socket, address) -> None:
        ip = address[0]
        at_limit = len(self._connections) >= self.limits.max_connections
        victim = quotas.eviction_victim((c, c.inter_broker) for c in self._idle) if at_limit else None
        over_ip = self._per_ip.get(ip, 0) >= self.limits.limit_for(ip)
        admission = quotas.admit(ip, self.limits, self._per_ip.get(ip, 0), len(self._connections),
                                 over_ip and ip in self._broker_hosts(), victim)
        if admission.verdict == quotas.REFUSE:
            log.warning("refusing connection from %s: %s", _peer(address), admission.reason)
            sock.close()
            return
        if admission.evict is not None:
            log.info("closing idle connection from %s for one from %s: %s",
                     _peer(admission.evict.address), _peer(address), admission.reason)
            self._close_idle(admission.evict)
        now = self._clock()
        connection = Connection(sock, address, self.max_frame_bytes, now)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(False)
        self._connections.add(connection)
        if admission.verdict == quotas.PROBATION:
            connection.probation = True
            self._on_probation.append(connection)
        else:
            connection.counted_for_ip = True
            self._per_ip[ip] = self._per_ip.get(ip, 0) + 1
        self._admitted_since_freeze += 1
        self._park(connection, now)

    def _park(self, connection: Connection, now: float) -> None:
        self._idle[connection] = None
        self._selector.register(connection.sock, selectors.EVENT_READ, connection)

    def _read_idle(self, connection: Connection) -> None:
        try:
            if not receive_into(connection.sock, connection.frames, self.pool, self._scratch,
                                connection.inter_broker):
                self._selector.unregister(connection.sock)   # the memory pool is full
                self._starved.append(connection)
                return
            connection.last_active_s = self._clock()
            self._idle.move_to_end(connection)
            ready = connection.frames.has_frame()
        except BlockingIOError:
            return
        except FrameError as error:
            log.warning("closing connection from %s: %s", _peer(connection.address), error)
            self._close_idle(connection)
            return
        except (ConnectionClosed, OSError):
            self._close_idle(connection)
            return
        if ready:
            self._selector.unregister(connection.sock)
            del self._idle[connection]
            self.workers.submit(self._serve, connection)

    def _retry_starved(self) -> None:
        for _ in range(len(self._starved)):
            connection = self._starved.popleft()
            if connection in self._idle:
                self._selector.register(connection.sock, selectors.EVENT_READ, connection)

    def _take_returned(self) -> None:
        try:
            while os.read(self._wake_r, 4096):
                pass
        except BlockingIOError:
            pass
        while not self._new_limits.empty():
            self.limits = self._new_limits.get()
            log.info("connection limits now: max.connections %s, max.connections.per.ip %s, overrides %s",
                     self.limits.max_connections, self.limits.max_connections_per_ip,
                     dict(self.limits.per_ip_overrides) or "none")
        now = self._clock()
        while not self._returned.empty():
            connection, closed = self._returned.get()
            if closed:
                self._forget(connection)
                continue
            connection.last_active_s = now
            if connection.inter_broker and connection.counted_for_ip:
                self._uncount_ip(connection)   # brokers never use up a host's client quota
            if self._stopping.is_set():
                self._close_idle(connection)
                continue
            connection.sock.setblocking(False)
            self._park(connection, now)

    def _reap(self, now: float) -> None:
        for connection in quotas.idle_expired(((c, c.last_active_s) for c in self._idle), now, self.max_idle_s):
            log.info("closing connection from %s: idle for connections.max.idle.ms", _peer(connection.address))
            self._close_idle(connection)
        while self._on_probation and now - self._on_probation[0].accepted_s >= quotas.PROBATION_S:
            connection = self._on_probation.popleft()
            if connection in self._idle and not connection.inter_broker:
                log.warning("closing connection from %s: beyond max.connections.per.ip and no "
                            "inter-broker request within %g s", _peer(connection.address), quotas.PROBATION_S)
                self._close_idle(connection)

    def _close_idle(self, connection: Connection) -> None:
        if self._idle.pop(connection, False) is None:
            try:
                self._selector.unregister(connection.sock)
            except (KeyError, ValueError):   # starved: not registered
                pass
        self.pool.release(connection.frames.clear())
        connection.sock.close()
        self._forget(connection)

    def _forget(self, connection: Connection) -> None:
        if connection in self._connections:
            self._connections.discard(connection)
            if connection.counted_for_ip:
                self._uncount_ip(connection)

    def _uncount_ip(self, connection: Connection) -> None:
        connection.counted_for_ip = False
        left = self._per_ip.get(connection.ip, 0) - 1
        if left > 0:
            self._per_ip[connection.ip] = left
        else:
            self._per_ip.pop(connection.ip, None)

    def _shut_down(self) -> None:
        try:
            self.listener.close()
        except OSError:
            pass
        for connection in list(self._idle):
            self._close_idle(connection)
        for connection in list(self._connections):   # held by workers: wake them out of their waits
            try:
                connection.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._selector.close()
        os.close(self._wake_r)

    # ---- workers: a connection with a whole request in hand

    def _serve(self, connection: Connection) -> None:
        """Handle the connection's requests while it has whole ones (or answers
        pending, or bytes arriving within LINGER_S), then hand it back to the
        selector thread."""
        sock = connection.sock
        try:
            sock.settimeout(SEND_TIMEOUT_S)
            poller = select.poll()
            poller.register(sock, select.POLLIN)
            while not self._stopping.is_set():
                frame = connection.frames.next_frame()
                if frame is None:
                    if self._receive_more(connection, poller):
                        continue
                    self._returned.put((connection, False))
                    self._wake()
                    return
                held = len(frame) + 4
                try:
                    self._handle(connection, frame)
                finally:
                    # Not frame.release(): views of it handed to a handler may
                    # live on; decoding copied what is kept, so the bytes count
                    # as free once the request is handled.
                    del frame
                    self.pool.release(held)
            raise ConnectionClosed()
        except (ConnectionClosed, ConnectionError, socket.timeout):
            pass
        except FrameError as error:
            log.warning("closing connection from %s: %s", _peer(connection.address), error)
        except OSError as error:
            log.info("connection from %s ended: %s", _peer(connection.address), error)
        except Exception as error:
            fatal.halt_if_fatal(error, f"request from {_peer(connection.address)}")
            log.exception("closing connection from %s after an internal error", _peer(connection.address))
        if connection.answers is not None:
            connection.answers.close()
        self.pool.release(connection.frames.clear())
        sock.close()
        self._returned.put((connection, True))
        self._wake()

    def _handle(self, connection: Connection, frame: memoryview) -> None:
        if not connection.inter_broker and quotas.is_inter_broker_request(frame):
            connection.inter_broker = True
        if connection.probation and not connection.inter_broker:
            raise FrameError("beyond max.connections.per.ip: only inter-broker requests are taken")
        answers = connection.answers
        if answers is not None and peek_api(frame)[0] != apis.PRODUCE:
            answers.drain()
        response = self.dispatcher.dispatch(frame, connection.ip)
        if isinstance(response, DeferredResponse):
            if answers is None:
                answers = connection.answers = AnswerQueue(connection.sock, connection.address,
                                                           self.workers.submit)
            answers.put(response)
        elif response is None:
            return
        elif answers is not None and answers.busy():
            answers.put(response)   # after the answers queued before it
        else:
            send(connection.sock, response)

    def _receive_more(self, connection: Connection, poller) -> bool:
        """Read on until a whole request is in (True), or until no byte came
        for LINGER_S and no answer is pending (False: hand it back). While
        acks=-1 answers are pending the connection is kept and read, so the
        produce requests behind them are appended meanwhile."""
        answers = connection.answers
        scratch = self._scratch_of_worker()
        quiet_since = time.monotonic()
        while not connection.frames.has_frame():
            pending = answers is not None and answers.busy()
            if answers is not None and answers.failed:
                raise ConnectionClosed()
            if not pending and time.monotonic() - quiet_since >= LINGER_S:
                return False
            if poller.poll((ANSWER_POLL_S if pending else LINGER_S) * 1000):
                if receive_into(connection.sock, connection.frames, self.pool, scratch, connection.inter_broker):
                    quiet_since = time.monotonic()
                else:
                    time.sleep(STARVED_RETRY_S)   # the memory pool is full
        return True

    def _scratch_of_worker(self) -> memoryview:
        scratch = getattr(self._worker_local, "scratch", None)
        if scratch is None:
            scratch = self._worker_local.scratch = memoryview(bytearray(RECEIVE_CHUNK_BYTES))
        return scratch


def _peer(address) -> str:
    return f"{address[0]}:{address[1]}"


def _resolve_overrides(overrides: dict[str, int]) -> dict[str, int]:
    """max.connections.per.ip.overrides names hosts; connections come from
    addresses. Names are resolved when the overrides are set: at start-up,
    and on a dynamic change (as Kafka does)."""
    resolved = {}
    for host, limit in overrides.items():
        try:
            infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
        except OSError:
            log.warning("max.connections.per.ip.overrides: cannot resolve %s; its limit is not applied", host)
            continue
        for info in infos:
            resolved[info[4][0]] = limit
    return resolved
