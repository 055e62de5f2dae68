"""A violated invariant stops the process; operating errors carry Kafka's code.

`fatal._exit` is the one place the process ends: the tests replace it to
see the halt without exiting (the replacement raises SystemExit, which
no `except Exception` in the code under test can swallow either).
"""

import logging
import socket
import struct
import subprocess
import sys
import threading

import pytest
from kio.schema.errors import ErrorCode

from kafkactl.cluster import fatal
from kafkactl.cluster.broker.network import SocketServer
from kafkactl.cluster.broker.network.workers import WorkerPool
from kafkactl.cluster.broker.role_changes import StaleControllerEpochError
from kafkactl.cluster.errors import KafkaError
from kafkactl.cluster.invariant import InvariantViolation
from kafkactl.cluster.log.errors import (
    KafkaStorageError, LogClosedError, LogError, OffsetOutOfRangeError, OutOfOrderSequenceError,
)
from kafkactl.cluster.protocol.record_batch import CorruptRecordError, InvalidRecordError, RecordBatchError
from kafkactl.cluster.protocol.record_validation import RecordValidationError

WAIT_S = 5.0
# A halt replaced by an exception ends the thread that halted: expected here.
pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")


class Halted(SystemExit):
    pass


@pytest.fixture
def halts(monkeypatch):
    """The statuses the process would have exited with, and when: a set event."""
    seen, happened = [], threading.Event()

    def exit_(status):
        seen.append(status)
        happened.set()
        raise Halted(status)
    monkeypatch.setattr(fatal, "_exit", exit_)
    return seen, happened


def test_halt_logs_and_exits_non_zero(halts, caplog):
    seen, _ = halts
    with caplog.at_level(logging.CRITICAL), pytest.raises(Halted):
        fatal.halt("two leaders in epoch 7", InvariantViolation("two leaders"))
    assert seen == [fatal.EXIT_STATUS] and fatal.EXIT_STATUS != 0
    assert "halting: two leaders in epoch 7" in caplog.text


def test_halt_if_fatal_lets_other_errors_pass(halts):
    seen, _ = halts
    fatal.halt_if_fatal(ValueError("bad input"), "somewhere")
    with pytest.raises(Halted):
        fatal.halt_if_fatal(InvariantViolation("broken"), "somewhere")
    assert seen == [fatal.EXIT_STATUS]


def test_halt_survives_python_dash_o():
    # No assert anywhere on the way: -O strips nothing of it.
    code = ("from kafkactl.cluster import fatal; from kafkactl.cluster.invariant import invariant\n"
            "try:\n    invariant(False, 'x')\nexcept Exception as e:\n    fatal.halt_if_fatal(e, 'test')\n"
            "print('ran on')")
    result = subprocess.run([sys.executable, "-O", "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == fatal.EXIT_STATUS and "ran on" not in result.stdout, result.stderr


def test_the_thread_hook_halts_on_an_invariant_escaping_a_thread(halts, monkeypatch):
    seen, happened = halts
    monkeypatch.setattr(threading, "excepthook", threading.excepthook)   # restored afterwards
    fatal.install_thread_hook()

    def run():
        raise InvariantViolation("offsets went back")
    thread = threading.Thread(target=run)
    thread.start()
    thread.join(WAIT_S)
    assert happened.wait(WAIT_S) and seen == [fatal.EXIT_STATUS]


# --- the network handler path

class BrokenDispatcher:
    def __init__(self, error: Exception) -> None:
        self.error = error

    def dispatch(self, frame, client_ip=""):
        raise self.error


def _request_frame(correlation_id: int) -> bytes:
    body = struct.pack(">hhih", 3, 9, correlation_id, -1)   # Metadata, header v1, null client id
    return struct.pack(">i", len(body)) + body


def _serve_one(error: Exception):
    server = SocketServer("127.0.0.1", 0, BrokenDispatcher(error), max_connections=4, max_frame_bytes=1 << 20)
    server.start()
    client = socket.create_connection(("127.0.0.1", server.port), timeout=WAIT_S)
    client.sendall(_request_frame(1))
    return server, client


def test_an_invariant_violation_in_a_request_handler_halts_the_broker(halts):
    seen, happened = halts
    server, client = _serve_one(InvariantViolation("high watermark above the log end"))
    try:
        assert happened.wait(WAIT_S), "the network layer swallowed the violation"
        assert seen == [fatal.EXIT_STATUS]
    finally:
        client.close()
        server.stop()


def test_another_internal_error_only_closes_the_connection(halts):
    seen, _ = halts
    server, client = _serve_one(RuntimeError("a bug in one handler"))
    try:
        assert client.recv(1) == b""          # closed, the broker runs on
        assert seen == []
    finally:
        client.close()
        server.stop()


def test_a_worker_pool_task_that_breaks_an_invariant_halts(halts):
    seen, happened = halts
    pool = WorkerPool("test-worker")

    def task():
        raise InvariantViolation("broken")
    pool.submit(task)
    assert happened.wait(WAIT_S) and seen == [fatal.EXIT_STATUS]


# --- the common base of operating errors

@pytest.mark.parametrize("error, code", [
    (LogError("x"), ErrorCode.unknown_server_error),
    (OffsetOutOfRangeError("x", 0, 10), ErrorCode.offset_out_of_range),
    (KafkaStorageError("x"), ErrorCode.kafka_storage_error),
    (LogClosedError("x"), ErrorCode.kafka_storage_error),
    (OutOfOrderSequenceError("x"), ErrorCode.out_of_order_sequence_number),
    (RecordBatchError("x"), ErrorCode.unknown_server_error),
    (CorruptRecordError("x"), ErrorCode.corrupt_message),
    (InvalidRecordError("x"), ErrorCode.invalid_record),
    (RecordValidationError(87, "x"), ErrorCode.invalid_record),
    (StaleControllerEpochError("LeaderAndIsr", 1, 3, 4), ErrorCode.stale_controller_epoch),
], ids=lambda value: type(value).__name__ if isinstance(value, Exception) else "")
def test_operating_errors_share_a_base_with_their_kafka_code(error, code):
    assert isinstance(error, KafkaError)
    assert error.error_code == code and isinstance(error.error_code, ErrorCode)


def test_an_invariant_violation_is_no_operating_error():
    assert not issubclass(InvariantViolation, KafkaError)
