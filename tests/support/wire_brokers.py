"""Brokers simulated at the wire for admin client unit tests: each request is
encoded and decoded as a broker decodes it, each answer encoded and decoded
as the client reads it, so the kio entities on both sides are the real ones."""

from __future__ import annotations

from kafkactl.cluster.admin.broker_queries import BrokerAddress, _Session
from kafkactl.cluster.broker.broker_client import BrokerConnectionError, decode_response, encode_request
from kafkactl.cluster.protocol.codec import decode_request, encode_response

# The group APIs and ListOffsets, at the versions Kafka 3.x serves.
ALL_VERSIONS = {10: (0, 4), 16: (0, 4), 15: (0, 5), 9: (0, 8), 8: (0, 8), 42: (0, 2), 47: (0, 0), 2: (0, 7)}


class FakeBroker:
    """Answers requests with `handlers[api_key](request, version)`; records them."""

    def __init__(self, broker_id: int, versions=None, host: str = "h") -> None:
        self.address = BrokerAddress(broker_id, host, 9000 + broker_id)
        self.versions = dict(ALL_VERSIONS if versions is None else versions)
        self.handlers = {}
        self.requests: list[tuple[int, int, object]] = []
        self.down = 0            # how many more requests fail as a broken connection


class FakeSession:
    def __init__(self, broker: FakeBroker) -> None:
        self.broker = broker
        self.versions = broker.versions
        self.client = self

    version = _Session.version

    def request(self, request, timeout_s, response_cls):
        assert 0 < timeout_s <= 15
        if self.broker.down:
            self.broker.down -= 1
            raise BrokerConnectionError("connection reset")
        frame = encode_request(request, 1, "kafkactl")
        _, decoded = decode_request(frame[4:], request.__api_key__, request.__version__)
        self.broker.requests.append((request.__api_key__, request.__version__, decoded))
        response = self.broker.handlers[request.__api_key__](decoded, request.__version__)
        return decode_response(encode_response(response, 1)[4:], response_cls, 1)

    def close(self) -> None:
        pass


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
