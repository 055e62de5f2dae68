"""The controller's channel to each broker: non-blocking sends with callbacks.

Seed 002: propagation never blocks the controller's event thread. `send`
puts the request on the target broker's bounded queue and returns; that
broker's sender thread delivers requests in order over its own connection
(a control-plane connection: it never waits behind client traffic, which
uses other connections and threads) and hands the response to the callback.
Callbacks run on the sender thread and must only enqueue controller events.
A request may also be given as a function that builds it: the sender thread
calls it, so converting and encoding large requests (tens of thousands of
partitions on a failover) runs off the event thread. Building and encoding
take one channel-wide lock: they compete for the same interpreter anyway,
and one at a time the request queued first (the controller queues new
leaders' LeaderAndIsr first) goes out at full speed instead of sharing it.

A request that cannot be delivered is retried with bounded exponential
backoff until it is delivered, the broker is removed from the channel (it
died: the controller will send it fresh state when it returns), or the
channel shuts down. The callback then gets the error instead.
"""

from __future__ import annotations

import logging
import queue
import threading
from dataclasses import dataclass
from typing import Any, Callable

from kafkactl.cluster import fatal
from kafkactl.cluster.broker.broker_client import BrokerClient

log = logging.getLogger(__name__)

DEFAULT_QUEUE_SIZE = 10_000
REQUEST_TIMEOUT_S = 30.0          # Kafka's controller.socket.timeout.ms
CONNECT_TIMEOUT_S = 5.0
BACKOFF_INITIAL_S = 0.05
BACKOFF_MAX_S = 2.0

Callback = Callable[[Any, Exception | None], None]


class BrokerRemovedError(RuntimeError):
    """The target broker left the channel before the request was delivered."""


class ChannelQueueFull(RuntimeError):
    pass


@dataclass(frozen=True, slots=True)
class BrokerEndpoint:
    broker_id: int
    host: str
    port: int


@dataclass(slots=True)
class _Pending:
    request: Any
    response_cls: type
    callback: Callback | None


class _BrokerSender:
    def __init__(self, endpoint: BrokerEndpoint, client: BrokerClient, queue_size: int,
                 build_lock: threading.Lock | None = None) -> None:
        self.endpoint = endpoint
        self._build_lock = build_lock or threading.Lock()
        self._client = client   # connects lazily, and again after any failure
        self._queue: queue.Queue[_Pending | None] = queue.Queue(maxsize=queue_size)
        self._removed = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"controller-channel-{endpoint.broker_id}")
        self._thread.start()

    def enqueue(self, item: _Pending) -> None:
        try:
            self._queue.put_nowait(item)
        except queue.Full:
            raise ChannelQueueFull(f"request queue to broker {self.endpoint.broker_id} is full") from None

    def remove(self) -> None:
        self._removed.set()
        self._client.close()  # unblocks a request in flight
        try:
            self._queue.put_nowait(None)  # wake the thread
        except queue.Full:
            pass

    def _run(self) -> None:
        while not self._removed.is_set():
            item = self._queue.get()
            if item is None:
                break
            self._deliver(item)
        self._client.close()
        self._fail_queued()

    def _deliver(self, item: _Pending) -> None:
        try:
            with self._build_lock:
                request = item.request() if callable(item.request) else item.request
                frame, correlation_id = self._client.encode(request)
        except Exception as error:   # a bug in building it: fail this request only
            fatal.halt_if_fatal(error, f"building a request to broker {self.endpoint.broker_id}")
            log.exception("building a request to broker %s failed", self.endpoint.broker_id)
            _call(item.callback, None, error)
            return
        backoff_s = BACKOFF_INITIAL_S
        while not self._removed.is_set():
            try:
                response = self._client.exchange(frame, correlation_id, item.response_cls)
            except OSError as error:  # BrokerConnectionError included
                log.info("request %s to broker %s failed (%s); retrying in %.2f s",
                         type(item.request).__name__, self.endpoint.broker_id, error, backoff_s)
                self._removed.wait(backoff_s)
                backoff_s = min(backoff_s * 2, BACKOFF_MAX_S)
                continue
            _call(item.callback, response, None)
            return
        _call(item.callback, None, BrokerRemovedError(f"broker {self.endpoint.broker_id} removed"))

    def _fail_queued(self) -> None:
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            if item is not None:
                _call(item.callback, None, BrokerRemovedError(f"broker {self.endpoint.broker_id} removed"))


def _call(callback: Callback | None, response, error: Exception | None) -> None:
    if callback is None:
        return
    try:
        callback(response, error)
    except Exception as error:
        fatal.halt_if_fatal(error, "controller channel callback")
        log.exception("controller channel callback failed")


class ControllerChannel:
    def __init__(self, controller_id: int, queue_size: int = DEFAULT_QUEUE_SIZE) -> None:
        self._client_id = f"controller-{controller_id}"
        self._queue_size = queue_size
        self._senders: dict[int, _BrokerSender] = {}
        self._lock = threading.Lock()
        self._build_lock = threading.Lock()   # see the module docstring

    def add_broker(self, endpoint: BrokerEndpoint) -> None:
        """Start (or re-point, after a restart on a new address) a broker's sender."""
        with self._lock:
            current = self._senders.get(endpoint.broker_id)
            if current is not None and current.endpoint == endpoint:
                return
            if current is not None:
                current.remove()
            client = BrokerClient(endpoint.host, endpoint.port, self._client_id,
                                  connect_timeout_s=CONNECT_TIMEOUT_S, request_timeout_s=REQUEST_TIMEOUT_S)
            self._senders[endpoint.broker_id] = _BrokerSender(endpoint, client, self._queue_size, self._build_lock)

    def remove_broker(self, broker_id: int) -> None:
        with self._lock:
            sender = self._senders.pop(broker_id, None)
        if sender is not None:
            sender.remove()

    def brokers(self) -> list[int]:
        with self._lock:
            return sorted(self._senders)

    def send(self, broker_id: int, request, response_cls: type, callback: Callback | None = None) -> None:
        """Queue a request (or a function building it); never blocks. An
        unknown broker fails the callback at once."""
        with self._lock:
            sender = self._senders.get(broker_id)
        if sender is None:
            _call(callback, None, BrokerRemovedError(f"broker {broker_id} is not in the channel"))
            return
        sender.enqueue(_Pending(request, response_cls, callback))

    def shutdown(self) -> None:
        with self._lock:
            senders = list(self._senders.values())
            self._senders.clear()
        for sender in senders:
            sender.remove()
