"""The common base of the cluster's typed operating errors.

An operating error is one Kafka answers with an error code (a storage
failure, an out-of-range offset, a corrupt batch, a stale controller): it
is part of normal operation and is answered, not a bug. Each is a
`KafkaError` whose `error_code` is Kafka's code, so a handler maps any of
them to the wire with `error.error_code`, without probing attributes.
InvariantViolation (invariant.py) is deliberately not one: it is a bug and
stops the process (fatal.py).
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode


class KafkaError(Exception):
    """An error answered with Kafka's `error_code`."""

    error_code: ErrorCode = ErrorCode.unknown_server_error
