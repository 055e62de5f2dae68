"""A small Kafka Admin API client for one kafkactl command, over kio.

It starts from the bootstrap servers the user gave: the first that answers
says, through Metadata, which brokers exist and which one is the controller.
Requests then go where Kafka wants them:
- controller-bound ones (CreateTopics, DeleteTopics, CreatePartitions,
  ElectLeaders, the reassignment APIs, AlterConfigs of topics) to the
  controller Metadata names; a NOT_CONTROLLER answer (the controller moved)
  refreshes Metadata and asks again, a bounded number of times with a
  doubling backoff. (A KRaft cluster names some broker as its "controller" in
  Metadata; that broker forwards to the real one, so this works there too.)
- leader-bound ones (DeleteRecords, ListOffsets) to each partition's leader;
- broker resources' configs to that broker, the rest to any broker.

Sessions are broker_queries.py's: ApiVersions v0 first, then the highest
version both sides speak; every socket call is bounded by the command's
deadline. Failures reach the caller as `AdminApiError` with one line.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from kafkactl.cluster.admin import admin_protocol as ap
from kafkactl.cluster.admin.broker_queries import BrokerAddress
from kafkactl.cluster.admin.broker_sessions import Backoff, BrokerSessions, BrokerUnavailable
CONTROLLER_ATTEMPTS = 5           # NOT_CONTROLLER answers before giving up
FIRST_BACKOFF_S = 0.1
MAX_BACKOFF_S = 1.0
BOOTSTRAP_ID = -1                 # a bootstrap server's id until Metadata names it


class AdminApiError(Exception):
    """No usable answer: unreachable brokers, a missing API, or the deadline passed."""


def parse_bootstrap(servers: str) -> list[BrokerAddress]:
    """"h1:9092,h2:9092" (checked by the CLI already) as addresses; [v6]:port kept bracket-free."""
    addresses = []
    for item in servers.split(","):
        host, _, port = item.strip().rpartition(":")
        addresses.append(BrokerAddress(BOOTSTRAP_ID, host.strip("[]"), int(port)))
    return addresses


class AdminClient:
    """The Admin API against one cluster, for the length of one command."""

    def __init__(self, bootstrap: Iterable[BrokerAddress], timeout_s: float, connect=None,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> None:
        self.bootstrap = list(bootstrap)
        if not self.bootstrap:
            raise AdminApiError("no bootstrap server given")
        self._sleep = sleep
        self._sessions = BrokerSessions(timeout_s, connect, clock)
        self._metadata: ap.ClusterMetadata | None = None

    def close(self) -> None:
        self._sessions.close()

    def __enter__(self) -> "AdminClient":
        return self

    def __exit__(self, *_) -> None:
        self.close()

    # --- where requests go --------------------------------------------------------------------

    def metadata(self, topics: Iterable[str] | None = None, refresh: bool = False) -> ap.ClusterMetadata:
        """Brokers, controller and (all, or the named) topics, from the first broker that answers."""
        if self._metadata is not None and topics is None and not refresh:
            return self._metadata
        wanted = None if topics is None else list(topics)
        response = self.send_any(ap.METADATA, lambda v: ap.metadata_request(v, wanted))
        found = ap.cluster_metadata(response)
        if wanted is None:
            self._metadata = found
        return found

    def brokers(self) -> dict[int, BrokerAddress]:
        return {n.node_id: BrokerAddress(n.node_id, n.host, n.port) for n in self.metadata().brokers.values()}

    def send_any(self, api: tuple[int, int, int], build: Callable[[int], object]):
        """To the brokers known from Metadata, else the bootstrap servers, the first that answers."""
        known = list(self.brokers().values()) if self._metadata is not None else []
        reasons = []
        for address in known + self.bootstrap:
            try:
                return self.send(address, api, build)
            except BrokerUnavailable as error:
                reasons.append(f"{address.host}:{address.port}: {error}")
        raise AdminApiError("no broker answered (" + "; ".join(reasons) + "): are the bootstrap servers right, "
                            "and the cluster up?")

    def send_to_broker(self, broker_id: int, api: tuple[int, int, int], build: Callable[[int], object]):
        address = self.brokers().get(broker_id)
        if address is None:
            raise AdminApiError(f"broker {broker_id} is not in the cluster's metadata")
        try:
            return self.send(address, api, build)
        except BrokerUnavailable as error:
            raise AdminApiError(f"broker {broker_id} did not answer: {error}") from None

    def send_to_controller(self, api: tuple[int, int, int], build: Callable[[int], object]):
        """To the controller, asking Metadata again while the answer is NOT_CONTROLLER."""
        backoff = Backoff(FIRST_BACKOFF_S, MAX_BACKOFF_S, self._sessions.remaining_s, self._sleep)
        reason = "no controller known"
        for attempt in range(CONTROLLER_ATTEMPTS):
            controller = self.metadata(refresh=attempt > 0).controller_id
            address = self.brokers().get(controller)
            if address is not None:
                try:
                    response = self.send(address, api, build)
                except BrokerUnavailable as error:
                    reason = f"controller {controller} unreachable: {error}"
                else:
                    if not ap.find_error(response, ap.NOT_CONTROLLER):
                        return response
                    reason = f"NOT_CONTROLLER from broker {controller}"
            if not backoff.wait():
                break
        raise AdminApiError(f"{ap.API_NAMES[api[0]]}: no controller took the request ({reason}); "
                            f"gave up after {CONTROLLER_ATTEMPTS} attempts or at the deadline (--timeout)")

    # --- sessions -------------------------------------------------------------------------------

    def version(self, address: BrokerAddress, api: tuple[int, int, int]) -> int:
        version = self._sessions.version(address, api)
        if version is None:
            raise self._unsupported(address, api)
        return version

    def send(self, address: BrokerAddress, api: tuple[int, int, int], build: Callable[[int], object]):
        return self._sessions.send(address, api, build, lambda: self._unsupported(address, api))

    def remaining_s(self) -> float:
        return self._sessions.remaining_s()

    @staticmethod
    def _unsupported(address: BrokerAddress, api: tuple[int, int, int]) -> AdminApiError:
        return AdminApiError(f"broker {address.host}:{address.port} does not support {ap.API_NAMES[api[0]]} "
                             f"(API {api[0]}) in versions {api[1]}-{api[2]}")
