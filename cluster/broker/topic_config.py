"""Topic-level config overrides (`/config/topics/<t>`) resolved into a LogConfig.

Names and meanings are Kafka's. `validate_topic_config` is what a writer
(auto-creation, `kafkactl topics create`, `configs alter`) calls before
writing; `log_config_for` never fails on a stored value, it falls back to the
broker default and logs, because a bad znode must not stop a broker.
"""

from __future__ import annotations

import dataclasses
import difflib
import logging

from kafkactl.cluster.broker.config import BrokerConfig, parse_int
from kafkactl.cluster.log.config import LogConfig, normalise_cleanup_policy

log = logging.getLogger(__name__)


class TopicConfigError(ValueError):
    """A topic config key is unknown or its value is invalid; names the key."""


def _int_at_least(minimum: int):
    def parse(raw: str) -> int:
        value = parse_int(raw)
        if value < minimum:
            raise ValueError(f"must be >= {minimum}")
        return value
    return parse


def _int_or_unlimited(raw: str) -> int:
    value = parse_int(raw)
    if value != -1 and value <= 0:
        raise ValueError("must be > 0, or -1 for no limit")
    return value


def _ratio(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise ValueError("not a number") from None
    if not 0 <= value <= 1:
        raise ValueError("must be between 0 and 1")
    return value


def _bool(raw: str) -> bool:
    if raw.strip().lower() not in ("true", "false"):
        raise ValueError("expected true or false")
    return raw.strip().lower() == "true"


def _one_of(*choices: str):
    def parse(raw: str) -> str:
        if raw not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}")
        return raw
    return parse


def _cleanup_policy(raw: str) -> str:
    return normalise_cleanup_policy(raw)


def _throttled_replicas(raw: str) -> str:
    from kafkactl.cluster.broker.quota import ThrottledReplicasError, parse_throttled_replicas
    try:
        parse_throttled_replicas(raw)
    except ThrottledReplicasError as error:
        raise ValueError(str(error)) from None
    return raw


# topic key -> (LogConfig field or None if only validated, parser)
TOPIC_KEYS = {
    "segment.bytes": ("segment_bytes", _int_at_least(14)),
    "segment.ms": ("segment_ms", _int_at_least(1)),
    "retention.ms": ("retention_ms", _int_or_unlimited),
    "retention.bytes": ("retention_bytes", _int_or_unlimited),
    "flush.messages": ("flush_messages", _int_at_least(1)),
    "flush.ms": ("flush_ms", _int_at_least(0)),
    "index.interval.bytes": ("index_interval_bytes", _int_at_least(0)),
    "segment.index.bytes": ("segment_index_bytes", _int_at_least(4)),
    "max.message.bytes": ("max_message_bytes", _int_at_least(0)),
    "file.delete.delay.ms": ("file_delete_delay_ms", _int_at_least(0)),
    "min.insync.replicas": ("min_insync_replicas", _int_at_least(1)),
    "unclean.leader.election.enable": ("unclean_leader_election_enable", _bool),
    "message.timestamp.type": ("message_timestamp_type", _one_of("CreateTime", "LogAppendTime")),
    "cleanup.policy": ("cleanup_policy", _cleanup_policy),
    "compression.type": (None, _one_of("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
    "delete.retention.ms": ("delete_retention_ms", _int_at_least(0)),
    "min.compaction.lag.ms": ("min_compaction_lag_ms", _int_at_least(0)),
    "max.compaction.lag.ms": ("max_compaction_lag_ms", _int_at_least(1)),
    "min.cleanable.dirty.ratio": ("min_cleanable_dirty_ratio", _ratio),
    "preallocate": (None, _bool),
    "message.downconversion.enable": (None, _bool),
    "follower.replication.throttled.replicas": (None, _throttled_replicas),
    "leader.replication.throttled.replicas": (None, _throttled_replicas),
    "segment.jitter.ms": (None, _int_at_least(0)),
    "message.timestamp.difference.max.ms": (None, _int_at_least(0)),
}


def did_you_mean(key: str, known) -> str:
    """"; did you mean KEY?" naming the closest known key, or "" if none is close
    (shared by the topic and the broker config checks)."""
    close = difflib.get_close_matches(key, list(known), n=1)
    return f"; did you mean {close[0]}?" if close else ""


def parse_topic_value(key: str, raw: str):
    entry = TOPIC_KEYS.get(key)
    if entry is None:
        raise TopicConfigError(f"{key}: unknown topic config{did_you_mean(key, TOPIC_KEYS)}")
    try:
        return entry[1](raw)
    except ValueError as error:
        raise TopicConfigError(f"{key}: invalid value {raw!r} ({error})") from None


def validate_topic_config(overrides: dict[str, str]) -> None:
    for key, raw in overrides.items():
        parse_topic_value(key, raw)
    # Kafka's LogConfig.validateValues: the two compaction lags must not cross.
    if "min.compaction.lag.ms" in overrides and "max.compaction.lag.ms" in overrides:
        low, high = (parse_topic_value(k, overrides[k]) for k in ("min.compaction.lag.ms", "max.compaction.lag.ms"))
        if low > high:
            raise TopicConfigError(f"min.compaction.lag.ms: {low} is greater than max.compaction.lag.ms {high}; "
                                   "a record would have to be both kept and compacted")


def log_config_for(broker: BrokerConfig, overrides: dict[str, str]) -> LogConfig:
    config = broker.default_log_config()
    changes = {}
    for key, raw in overrides.items():
        try:
            value = parse_topic_value(key, raw)
        except TopicConfigError as error:
            log.warning("ignoring stored topic config: %s", error)
            continue
        field = TOPIC_KEYS[key][0]
        if field is not None:
            changes[field] = value
    return dataclasses.replace(config, **changes) if changes else config
