"""A short-lived kazoo session with bounded retries and a timeout everywhere.

kazoo's synchronous calls wait forever by default, and its connection retry
policy retries forever; both are bounded here so a dead ZooKeeper turns into
an error instead of a hang.
"""

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from kafkactl.cluster.local.errors import LocalClusterError

SESSION_TIMEOUT_S = 10.0
_log = logging.getLogger(__name__)
# kazoo logs connection trouble at WARNING; failures reach callers as
# exceptions, so without a configured handler this stays silent instead of
# falling through to logging's stderr last resort.
_log.addHandler(logging.NullHandler())

if TYPE_CHECKING:
    from kazoo.client import KazooClient


@contextmanager
def zk_session(connect: str, timeout_s: float) -> Iterator["KazooClient"]:
    from kazoo.client import KazooClient  # heavy: imported only when needed

    # Connection attempts are bounded by time, not by count: a server that
    # has just started may drop the first few sessions, and giving up after
    # N quick tries would leave start() waiting out its whole timeout.
    client = KazooClient(
        hosts=connect, timeout=SESSION_TIMEOUT_S, logger=_log,
        connection_retry={"max_tries": -1, "delay": 0.1, "max_delay": 1.0,
                          "deadline": max(timeout_s, 1.0)},
        command_retry={"max_tries": 3, "delay": 0.1, "max_delay": 1.0},
    )
    try:
        client.start(timeout=timeout_s)
    except Exception as exc:  # kazoo's timeout class depends on the handler
        client.stop()
        client.close()
        raise LocalClusterError(f"cannot connect to ZooKeeper at {connect}: {exc}") from exc
    try:
        yield client
    finally:
        client.stop()
        client.close()


def registered_broker_ids(client, timeout_s: float) -> set[int]:
    """Ids under /brokers/ids; empty until the first broker creates the path."""
    from kazoo.exceptions import NoNodeError

    try:
        children = client.get_children_async("/brokers/ids").get(timeout=timeout_s)
    except NoNodeError:
        return set()
    return {int(c) for c in children if c.isdigit()}
