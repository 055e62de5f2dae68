"""A stand-in broker for CLI tests: honours the broker start-up contract only.

`python -m fake_broker server.properties` listens on the configured port,
registers the ephemeral /brokers/ids/<id> znode, appends a line to
<first log dir>/starts.log (so tests can see data dirs survive a restart),
and deregisters on SIGTERM. With `fake.hang=true` it never registers. It lets the CLI tests run whether or not the
real broker works yet.
"""

import json
import signal
import socket
import sys
import threading
import time
from pathlib import Path


def read_properties(path: str) -> dict[str, str]:
    props = {}
    for line in Path(path).read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            props[key.strip()] = value.strip()
    return props


def register(zk, path: str, value: bytes, session_timeout_s: float) -> None:
    """Create our ephemeral znode, waiting out a crashed predecessor's session."""
    from kazoo.exceptions import NodeExistsError

    deadline = time.monotonic() + 1.5 * session_timeout_s
    while True:
        try:
            zk.create(path, value, ephemeral=True)
            return
        except NodeExistsError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def main(config_file: str) -> None:
    from kazoo.client import KazooClient

    props = read_properties(config_file)
    broker_id = int(props["broker.id"])
    host, port = props["listeners"].split("://")[1].rsplit(":", 1)
    listener = socket.create_server((host, int(port)))
    log_dir = Path(props["log.dirs"].split(",")[0])
    with open(log_dir / "starts.log", "a") as starts:
        starts.write(f"{time.time()}\n")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    if props.get("fake.hang") == "true":  # a broker that never becomes ready
        stop.wait(3600)
        return
    session_timeout_s = int(props.get("zookeeper.session.timeout.ms", "18000")) / 1000
    zk = KazooClient(hosts=props["zookeeper.connect"], timeout=session_timeout_s)
    zk.start(timeout=10)
    zk.ensure_path("/brokers/ids")
    endpoint = f"PLAINTEXT://{host}:{port}"
    value = {"version": 5, "host": host, "port": int(port), "endpoints": [endpoint],
             "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
             "jmx_port": -1, "features": {}, "timestamp": str(int(time.time() * 1000))}
    register(zk, f"/brokers/ids/{broker_id}", json.dumps(value).encode(), session_timeout_s)
    print(f"fake broker {broker_id} registered", file=sys.stderr, flush=True)
    while not stop.wait(0.2):
        pass
    zk.delete(f"/brokers/ids/{broker_id}")
    zk.stop()
    zk.close()
    listener.close()
    print(f"fake broker {broker_id} stopped", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
