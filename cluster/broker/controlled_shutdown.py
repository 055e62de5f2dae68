"""Controlled shutdown: before stopping, ask the controller to move this
broker's leaderships away and take it out of the ISRs (seed 002).

A rolling restart then never shows an offline partition nor fails an acks=-1
producer: leadership moves while this broker still serves, instead of after
its ZooKeeper session is gone. Retried with Kafka's settings
(`controlled.shutdown.max.retries`, `controlled.shutdown.retry.backoff.ms`);
if it never succeeds the broker stops anyway, as Kafka does.
"""

from __future__ import annotations

import logging
import time

from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker.broker_client import BrokerClient
from kafkactl.cluster.protocol import control

log = logging.getLogger(__name__)

REQUEST_TIMEOUT_S = 30.0


def controlled_shutdown(config, metadata, broker_epoch: int) -> bool:
    """True once the controller has moved everything it could."""
    for attempt in range(config.controlled_shutdown_max_retries + 1):
        if attempt:
            time.sleep(config.controlled_shutdown_retry_backoff_ms / 1000)
        outcome = _attempt(config.broker_id, broker_epoch, metadata.snapshot)
        if outcome is True:
            log.info("controlled shutdown of broker %s succeeded", config.broker_id)
            return True
        log.warning("controlled shutdown attempt %d failed: %s", attempt + 1, outcome)
    log.warning("controlled shutdown did not complete; stopping anyway")
    return False


def _attempt(broker_id: int, broker_epoch: int, snapshot) -> bool | str:
    controller = snapshot.brokers.get(snapshot.controller_id)
    if controller is None:
        return "no known controller"
    client = BrokerClient(controller.host, controller.port, f"broker-{broker_id}",
                          request_timeout_s=REQUEST_TIMEOUT_S)
    try:
        response = client.request(
            control.ControlledShutdownRequest(broker_id=broker_id, broker_epoch=broker_epoch),
            response_cls=control.ControlledShutdownResponse)
    except OSError as error:
        return f"controller {snapshot.controller_id} unreachable: {error}"
    finally:
        client.close()
    if response.error_code != ErrorCode.none:
        return f"controller answered {response.error_code.name}"
    if response.remaining_partitions:
        remaining = ", ".join(f"{p.topic_name}-{p.partition_index}" for p in response.remaining_partitions[:5])
        return f"{len(response.remaining_partitions)} partitions could not move ({remaining})"
    return True
