"""The controller's channel against a real broker process."""

from __future__ import annotations

import threading

from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.api_versions.v3.response import ApiVersionsResponse
from kio.schema.errors import ErrorCode

from kafkactl.cluster.controller.channel import BrokerEndpoint, BrokerRemovedError, ControllerChannel


def api_versions():
    return ApiVersionsRequest(client_software_name="controller", client_software_version="1")


def test_requests_arrive_in_order_with_callbacks_and_survive_a_broker_restart(start_cluster):
    cluster, status = start_cluster(brokers=1)
    broker = status.broker(1)
    channel = ControllerChannel(controller_id=1)
    channel.add_broker(BrokerEndpoint(1, broker.host, broker.port))
    results, done = [], threading.Event()

    def callback(index):
        def record(response, error):
            results.append((index, error, response.error_code if response else None))
            if len(results) == 20:
                done.set()
        return record

    for i in range(10):
        channel.send(1, api_versions(), ApiVersionsResponse, callback(i))
    cluster.kill_broker(1)
    restarted = threading.Thread(target=cluster.up)
    restarted.start()
    for i in range(10, 20):
        channel.send(1, api_versions(), ApiVersionsResponse, callback(i))
    restarted.join()
    assert done.wait(30), results
    assert [i for i, _, _ in results] == list(range(20))
    assert all(error is None and code == ErrorCode.none for _, error, code in results)
    channel.shutdown()


def test_removing_a_broker_fails_what_was_not_delivered():
    channel = ControllerChannel(controller_id=1)
    channel.add_broker(BrokerEndpoint(9, "127.0.0.1", 1))  # nothing listens there
    errors, done = [], threading.Event()

    def record(response, error):
        errors.append(error)
        done.set()

    channel.send(9, api_versions(), ApiVersionsResponse, record)
    channel.remove_broker(9)
    assert done.wait(10)
    assert isinstance(errors[0], BrokerRemovedError)
    failed = []
    channel.send(9, api_versions(), ApiVersionsResponse, lambda r, e: failed.append(e))
    assert isinstance(failed[0], BrokerRemovedError)
