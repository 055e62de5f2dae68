"""InitProducerId: producer ids for idempotent producers (no transactions).

Ids come from blocks reserved in `/latest_producer_id_block` with a
conditional update, as Kafka's brokers do, so ids never repeat across
brokers or restarts.
"""

from __future__ import annotations

import datetime
import threading

from kio.schema.errors import ErrorCode

from kafkactl.cluster import fatal
from kafkactl.cluster.protocol.build import make
from kafkactl.cluster.protocol.codec import response_class

MAX_PRODUCER_EPOCH = 32767


class ProducerIdManager:
    def __init__(self, allocate_block) -> None:
        self._allocate_block = allocate_block
        self._lock = threading.Lock()
        self._next = 0
        self._end = -1  # inclusive end of the current block

    def next_id(self) -> int:
        with self._lock:
            if self._next > self._end:
                block = self._allocate_block()
                self._next, self._end = block.block_start, block.block_end
            producer_id = self._next
            self._next += 1
            return producer_id


def handle(services, header, request):
    cls = response_class(22, header.api_version)
    base = dict(throttle_time=datetime.timedelta(0))
    if request.transactional_id is not None:
        return make(cls, error_code=ErrorCode.transactional_id_authorization_failed,
                    producer_id=-1, producer_epoch=-1, **base)
    existing_id = getattr(request, "producer_id", -1)
    existing_epoch = getattr(request, "producer_epoch", -1)
    if existing_id >= 0 and 0 <= existing_epoch < MAX_PRODUCER_EPOCH:
        # KIP-360: an idempotent producer may bump its own epoch to reset sequences.
        return make(cls, error_code=ErrorCode.none, producer_id=existing_id,
                    producer_epoch=existing_epoch + 1, **base)
    try:
        producer_id = services.producer_ids.next_id()
    except Exception as error:
        fatal.halt_if_fatal(error, "InitProducerId")
        return make(cls, error_code=ErrorCode.coordinator_not_available,
                    producer_id=-1, producer_epoch=-1, **base)
    return make(cls, error_code=ErrorCode.none, producer_id=producer_id, producer_epoch=0, **base)
