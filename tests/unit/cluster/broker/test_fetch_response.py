"""Fetch v12 responses written straight to bytes are kio's bytes, record
regions spliced in the same places."""

from dataclasses import dataclass
from types import SimpleNamespace

import pytest
from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker.fetch_session import FetchContext
from kafkactl.cluster.broker.handlers import fetch
from kafkactl.cluster.broker.partition import ReadResult


@dataclass(frozen=True)
class Region:
    data: bytes

    @property
    def length(self) -> int:
        return len(self.data)


def wire(response) -> bytes:
    return b"".join(part.data if isinstance(part, Region) else part for part in response.parts)


def read(error=ErrorCode.none, high_watermark=10, log_start_offset=0, records=b""):
    region = Region(records) if records else None
    return ReadResult(error, high_watermark, log_start_offset, region, len(records))


CASES = {
    "nothing": [],
    "one empty": [("t", 0, read())],
    "errors and offsets": [("t", 0, read(ErrorCode.not_leader_or_follower, -1, -1)),
                           ("t", 1, read(high_watermark=2**40, log_start_offset=7))],
    "records between empty partitions": [("t", 0, read()), ("t", 1, read(records=b"x" * 300)),
                                         ("u-\u00e9", 0, read(records=b"y")), ("t", 2, read())],
    "records last": [("a" * 200, 3, read(records=b"z" * 70000))],
    "many": [(f"topic-{p % 3}", p, read(high_watermark=p, records=b"r" if p % 7 == 0 else b""))
             for p in range(400)],
}


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("error, session_id", [(ErrorCode.none, 0), (ErrorCode.none, 123456),
                                               (ErrorCode.fetch_session_id_not_found, 0)])
def test_the_direct_v12_response_is_kios(monkeypatch, name, error, session_id):
    reads = CASES[name]
    header = SimpleNamespace(api_version=12, correlation_id=99)
    context = FetchContext([], error=error)
    context.session_id = session_id
    direct = fetch._response(header, reads, context)
    monkeypatch.setattr(fetch.fetch_response, "VERSION", -1)      # the kio path
    through_kio = fetch._response(header, reads, context)
    assert wire(direct) == wire(through_kio)
    assert direct.size == through_kio.size == len(wire(direct))
    regions = [part for part in direct.parts if isinstance(part, Region)]
    assert regions == [r.region for _, _, r in reads if r.region is not None]
