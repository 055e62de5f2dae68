"""`python -m kafkactl.cluster.broker server.properties [--override key=value ...]`."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading

from kafkactl.cluster.broker.config import ConfigError, load_config


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kafkactl-broker", description="Run one reference broker.")
    parser.add_argument("config", help="path to a Kafka-style server.properties")
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(levelname)s [%(threadName)s] %(name)s: %(message)s",
        stream=sys.stderr,
    )
    log = logging.getLogger("kafkactl.broker")
    try:
        overrides = dict(_split_override(item) for item in args.override)
        config, warnings = load_config(args.config, overrides)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for warning in warnings:
        log.warning(warning)

    # Imported after the config is read, so a bad config fails fast and cheap.
    from kafkactl.cluster import fatal
    from kafkactl.cluster.broker.broker import Broker
    from kafkactl.cluster.broker.zk_agent import RegistrationError
    from kafkactl.cluster.log.errors import KafkaStorageError
    from kafkactl.cluster.zk.client import ZooKeeperUnavailable

    raise_open_files_limit(log)
    fatal.install_thread_hook()    # an InvariantViolation that ends a thread ends the process
    broker = Broker(config)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    try:
        broker.start()
    except (ZooKeeperUnavailable, RegistrationError, KafkaStorageError) as error:
        log.error("broker failed to start: %s", error)  # an operating error: no traceback
        return 1
    except Exception as error:
        fatal.halt_if_fatal(error, "broker start-up")
        log.exception("broker failed to start: %s", error)
        return 1
    # A timed wait: a process-directed SIGTERM may land on any thread; CPython
    # runs the Python handler on the main thread only when it returns to the
    # interpreter, which an untimed wait never does.
    while not stop.wait(0.5):
        pass
    broker.shutdown()
    return 0


def raise_open_files_limit(log) -> None:
    """Every connection is a file descriptor: raise the soft limit to the hard
    one (a distribution's soft default of 1024 would refuse clients long
    before max.connections)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError) as error:
            log.warning("cannot raise the open files limit from %s to %s: %s", soft, hard, error)
    log.info("open files limit: %s", soft)


def _split_override(item: str) -> tuple[str, str]:
    key, sep, value = item.partition("=")
    if not sep or not key:
        raise ConfigError(f"--override {item!r}: expected KEY=VALUE")
    return key.strip(), value


if __name__ == "__main__":
    sys.exit(main())
