"""Asking brokers over the Kafka protocol what ZooKeeper does not know.

- log end offsets of any replica: ListOffsets with replica_id -2 (Kafka's
  debugging replica id), which a follower answers too, with its own log end
  offset (no isolation level applies to a non-client replica id);
- log dirs with partition sizes and the volume's total and usable bytes:
  DescribeLogDirs (v4 adds total_bytes/usable_bytes);
- the broker's configs, e.g. `log.dir.media`: DescribeConfigs on the BROKER
  resource;
- moving replicas between its log dirs: AlterReplicaLogDirs (KIP-113); the
  moves under way show in DescribeLogDirs as future replicas.

Each broker is asked on its own connection, first with ApiVersions v0 (which
every Kafka speaks) to pick the highest version both sides know; brokers are
asked in parallel, every socket call bounded by the timeout. A broker that
cannot be reached gives a `BrokerQueryError`, never an exception to the caller.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from kafkactl.cluster.protocol.list_offsets import DEBUGGING_REPLICA_ID, LATEST_TIMESTAMP

CLIENT_ID = "kafkactl"
READ_UNCOMMITTED = 0
BROKER_RESOURCE = 4              # DescribeConfigs resource type
TOPIC_RESOURCE = 2

# (lowest, highest) version of each API that this module can build with kio.
LIST_OFFSETS = (2, 1, 7)
DESCRIBE_CONFIGS = (32, 1, 4)
DESCRIBE_LOG_DIRS = (35, 1, 4)
ALTER_REPLICA_LOG_DIRS = (34, 1, 2)


@dataclass(frozen=True, slots=True)
class BrokerAddress:
    broker_id: int
    host: str
    port: int


@dataclass(frozen=True, slots=True)
class BrokerQueryError:
    """Why a broker gave no usable answer (it is a value, not raised)."""
    broker_id: int
    reason: str

    def __str__(self) -> str:
        return f"broker {self.broker_id} did not answer ({self.reason})"


@dataclass(frozen=True, slots=True)
class OffsetAnswer:
    offset: int          # -1 with an error
    error: str | None    # Kafka's error name, lower case, e.g. "not_leader_or_follower"


@dataclass(frozen=True, slots=True)
class LogDirInfo:
    path: str
    error: str | None
    total_bytes: int                     # -1: the broker does not say (DescribeLogDirs < v4)
    usable_bytes: int
    partition_sizes: dict[tuple[str, int], int] = field(default_factory=dict)
    # Replicas moving into this dir (is_future_key): (size in bytes, offsets behind the current log).
    future_replicas: dict[tuple[str, int], tuple[int, int]] = field(default_factory=dict)

    @property
    def used_bytes(self) -> int:
        return sum(self.partition_sizes.values())


class _Session:
    """One connection to one broker, with the API versions it announced."""

    def __init__(self, address: BrokerAddress, timeout_s: float) -> None:
        from kafkactl.cluster.broker.broker_client import BrokerClient

        self.address = address
        self.client = BrokerClient(address.host, address.port, CLIENT_ID,
                                   connect_timeout_s=timeout_s, request_timeout_s=timeout_s)
        self.versions = self._api_versions()

    def _api_versions(self) -> dict[int, tuple[int, int]]:
        from kio.schema.api_versions.v0.request import ApiVersionsRequest

        response = self.client.request(ApiVersionsRequest())
        return {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in response.api_keys}

    def version(self, api: tuple[int, int, int]) -> int | None:
        """The highest version of `api` both sides speak, or None."""
        api_key, ours_min, ours_max = api
        theirs = self.versions.get(api_key)
        if theirs is None:
            return None
        version = min(ours_max, theirs[1])
        return version if version >= max(ours_min, theirs[0]) else None

    def close(self) -> None:
        self.client.close()


def ask_brokers(brokers: Iterable[BrokerAddress], question: Callable[[_Session], object],
                timeout_s: float) -> dict[int, object]:
    """Per broker id, `question`'s answer or a BrokerQueryError; brokers asked in parallel."""
    return ask_each({b: question for b in brokers}, timeout_s)


def ask_each(questions: dict[BrokerAddress, Callable[[_Session], object]], timeout_s: float) -> dict[int, object]:
    """Each broker its own question, in parallel: per broker id, the answer or a BrokerQueryError."""
    if not questions:
        return {}
    with ThreadPoolExecutor(max_workers=min(16, len(questions))) as pool:
        futures = {b.broker_id: pool.submit(_ask_one, b, q, timeout_s) for b, q in questions.items()}
        return {broker_id: future.result() for broker_id, future in futures.items()}


def _ask_one(address: BrokerAddress, question, timeout_s: float):
    from kafkactl.cluster.broker.broker_client import BrokerConnectionError

    session = None
    try:
        session = _Session(address, timeout_s)
        return question(session)
    except BrokerConnectionError as error:
        return BrokerQueryError(address.broker_id, str(error))
    except _Unsupported as error:
        return BrokerQueryError(address.broker_id, str(error))
    finally:
        if session is not None:
            session.close()


class _Unsupported(Exception):
    pass


def _request(session: _Session, api: tuple[int, int, int], build: Callable[[int], object]):
    from kafkactl.cluster.protocol.codec import response_class

    version = session.version(api)
    if version is None:
        raise _Unsupported(f"it does not support API {api[0]} in versions {api[1]}-{api[2]}")
    request = build(version)
    return session.client.request(request, response_cls=response_class(api[0], version))


def _request_class(api_key: int, version: int):
    from kio.index import load_request_schema

    return load_request_schema(api_key, version)


# --- ListOffsets -----------------------------------------------------------------

def log_end_offsets(partitions: Iterable[tuple[str, int]]) -> Callable[[_Session], dict]:
    """A question: this broker's log end offset of each partition it holds."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)

    def ask(session: _Session) -> dict[tuple[str, int], OffsetAnswer]:
        response = _request(session, LIST_OFFSETS, lambda v: _list_offsets_request(v, by_topic))
        answers = {}
        for topic in response.topics:
            for p in topic.partitions:
                error = None if p.error_code == 0 else p.error_code.name
                answers[(topic.name, p.partition_index)] = OffsetAnswer(p.offset if error is None else -1, error)
        return answers

    return ask


def _list_offsets_request(version: int, by_topic: dict[str, list[int]]):
    from kafkactl.cluster.protocol.build import make, nested

    cls = _request_class(2, version)
    topics = tuple(
        nested(cls, "ListOffsetsTopic", name=topic, partitions=tuple(
            nested(cls, "ListOffsetsPartition", partition_index=p, current_leader_epoch=-1,
                   timestamp=LATEST_TIMESTAMP, max_num_offsets=1) for p in sorted(indexes)))
        for topic, indexes in sorted(by_topic.items()))
    return make(cls, replica_id=DEBUGGING_REPLICA_ID, isolation_level=READ_UNCOMMITTED, topics=topics)


# --- DescribeLogDirs ------------------------------------------------------------------

def describe_log_dirs(session: _Session) -> list[LogDirInfo]:
    """A question: every log dir of the broker, with its partitions' sizes."""
    from kafkactl.cluster.protocol.build import make

    response = _request(session, DESCRIBE_LOG_DIRS,
                        lambda v: make(_request_class(35, v), topics=None))
    top_error = getattr(response, "error_code", 0)
    if top_error != 0:
        raise _Unsupported(f"DescribeLogDirs failed: {top_error.name}")
    return [_log_dir(result) for result in response.results]


def _log_dir(result) -> LogDirInfo:
    sizes = {(t.name, p.partition_index): p.partition_size
             for t in result.topics for p in t.partitions if not p.is_future_key}
    futures = {(t.name, p.partition_index): (p.partition_size, p.offset_lag)
               for t in result.topics for p in t.partitions if p.is_future_key}
    error = None if result.error_code == 0 else result.error_code.name
    return LogDirInfo(result.log_dir, error, getattr(result, "total_bytes", -1),
                      getattr(result, "usable_bytes", -1), sizes, futures)


# --- AlterReplicaLogDirs ---------------------------------------------------------------

def alter_replica_log_dirs(wanted: dict[tuple[str, int], str]) -> Callable[[_Session], dict]:
    """A question: move (or place) each partition's replica on this broker into
    the given log dir; per partition None, or Kafka's error name (lower case)."""
    by_dir: dict[str, dict[str, list[int]]] = {}
    for (topic, partition), path in sorted(wanted.items()):
        by_dir.setdefault(path, {}).setdefault(topic, []).append(partition)

    def ask(session: _Session) -> dict[tuple[str, int], str | None]:
        from kafkactl.cluster.protocol.build import make, nested

        def build(version: int):
            cls = _request_class(34, version)
            return make(cls, dirs=tuple(
                nested(cls, "AlterReplicaLogDir", path=path, topics=tuple(
                    nested(cls, "AlterReplicaLogDirTopic", name=t, partitions=tuple(p)) for t, p in topics.items()))
                for path, topics in by_dir.items()))

        response = _request(session, ALTER_REPLICA_LOG_DIRS, build)
        return {(t.topic_name, p.partition_index): None if p.error_code == 0 else p.error_code.name
                for t in response.results for p in t.partitions}

    return ask


# --- DescribeConfigs --------------------------------------------------------------------

def broker_configs(keys: list[str] | None = None) -> Callable[[_Session], dict[str, str | None]]:
    """A question: the broker's own configs (all, or only `keys`), name -> value."""

    def ask(session: _Session) -> dict[str, str | None]:
        from kafkactl.cluster.protocol.build import make, nested

        def build(version: int):
            cls = _request_class(32, version)
            resource = nested(cls, "DescribeConfigsResource", resource_type=BROKER_RESOURCE,
                              resource_name=str(session.address.broker_id),
                              configuration_keys=tuple(keys) if keys is not None else None)
            return make(cls, resources=(resource,), include_synonyms=False, include_documentation=False)

        response = _request(session, DESCRIBE_CONFIGS, build)
        [result] = response.results
        if result.error_code != 0:
            raise _Unsupported(f"DescribeConfigs failed: {result.error_code.name} {result.error_message or ''}")
        return {entry.name: entry.value for entry in result.configs}

    return ask


def parse_log_dir_media(value: str | None) -> dict[str, str]:
    """`log.dir.media` ("PATH:ssd,PATH:hdd") as path -> media class."""
    media = {}
    for item in (value or "").split(","):
        path, sep, media_class = item.strip().rpartition(":")
        if sep and path:
            media[path] = media_class
    return media
