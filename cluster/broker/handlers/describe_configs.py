"""DescribeConfigs (API 32, v0-v4): this broker's configs, and a topic's.

BROKER resource (named by this broker's id, or "" as Kafka allows): every key
of the broker's properties file that maps one to one onto a setting, with
its effective value, plus `log.dir.media`, the media class of every log dir
as the broker uses it ("PATH:ssd,PATH:hdd": configured, else probed from the
block device at start). A value set dynamically (/config/brokers, applied by
this broker) is reported with source DYNAMIC_BROKER_CONFIG or
DYNAMIC_DEFAULT_BROKER_CONFIG, one equal to the built-in default with
DEFAULT_CONFIG, others STATIC_BROKER_CONFIG. Keys Kafka's broker reconfigures
are not read-only, the others are (as Kafka's ConfigHelper says). Another broker's id is an
INVALID_REQUEST, as in Kafka (ask that broker). With include_synonyms (v1+),
each broker key lists every level that sets it, the one in effect first, as
Kafka does: DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG,
STATIC_BROKER_CONFIG, DEFAULT_CONFIG (so a client sees the cluster-wide
default under a broker's own value).

TOPIC resource: every topic key this broker resolves, with the value in
effect. As Kafka's broker in ZooKeeper mode (ConfigHelper.createTopicConfigEntry),
its levels are the topic's override (/config/topics, DYNAMIC_TOPIC_CONFIG)
followed by the levels of the broker key it defaults to (Kafka's
TopicConfigSynonyms: retention.ms -> log.retention.ms, segment.bytes ->
log.segment.bytes, cleanup.policy -> log.cleanup.policy, ...), in the same
order as for the broker resource; the source is the first level's, and
with include_synonyms every level is listed. Kafka also names log.retention.hours,
log.roll.hours and the like there, but only after a log.retention.ms (its
configSynonyms drops what comes before the key itself); this broker keeps
server.properties resolved into the *.ms value, so those show as that key's
static value, in milliseconds.

v0 has no source, only `is_default`: true for DEFAULT_CONFIG, as Kafka up to
2.6 answers (2.7 and 2.8 always send false, a regression of their generated
serializer; a client reading v0 turns false into a static or topic source).
"""

from __future__ import annotations

import dataclasses
import datetime

from kio.schema.errors import ErrorCode

from kafkactl.cluster.admin import broker_configs
from kafkactl.cluster.broker import config as broker_config
from kafkactl.cluster.broker.dynamic_config import DEFAULT_SOURCE
from kafkactl.cluster.broker.topic_config import TOPIC_KEYS
from kafkactl.cluster.protocol.build import make, nested
from kafkactl.cluster.protocol.codec import response_class

TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4

# Kafka's ConfigSource ids.
DYNAMIC_TOPIC_CONFIG = 1
DYNAMIC_BROKER_CONFIG = 2
DYNAMIC_DEFAULT_BROKER_CONFIG = 3
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5

# Kafka's ConfigType ids (v3+).
BOOLEAN, STRING, INT, LONG, LIST = 1, 2, 3, 5, 7

LOG_DIR_MEDIA = "log.dir.media"
_ALIASES = frozenset({"log.dir"})   # same setting as log.dirs


def handle(services, header, request):
    cls = response_class(32, header.api_version)
    synonyms = bool(getattr(request, "include_synonyms", False))     # v1+
    results = tuple(_describe(services, cls, resource, synonyms) for resource in request.resources)
    return make(cls, throttle_time=datetime.timedelta(0), results=results)


def _describe(services, cls, resource, synonyms: bool = False):
    if resource.resource_type == BROKER_RESOURCE:
        if resource.resource_name not in ("", str(services.config.broker_id)):
            return _error(cls, resource, ErrorCode.invalid_request,
                          f"unexpected broker id, expected {services.config.broker_id} or empty string, "
                          f"but received {resource.resource_name}")
        entries = broker_entries(services)
    elif resource.resource_type == TOPIC_RESOURCE:
        if resource.resource_name not in services.metadata.snapshot.topics:
            return _error(cls, resource, ErrorCode.unknown_topic_or_partition,
                          f"topic {resource.resource_name} does not exist")
        entries = topic_entries(services, resource.resource_name)
    else:
        return _error(cls, resource, ErrorCode.invalid_request,
                      f"resource type {resource.resource_type} is not supported by this broker")
    keys = resource.configuration_keys
    if keys:   # null or empty: all keys
        entries = [e for e in entries if e[0] in set(keys)]
    configs = tuple(_entry(cls, *entry[:5], synonyms=entry[5] if synonyms and len(entry) > 5 else ())
                    for entry in entries)
    return nested(cls, "DescribeConfigsResult", error_code=ErrorCode.none, error_message=None,
                  resource_type=resource.resource_type, resource_name=resource.resource_name, configs=configs)


def _error(cls, resource, code: ErrorCode, message: str):
    return nested(cls, "DescribeConfigsResult", error_code=code, error_message=message,
                  resource_type=resource.resource_type, resource_name=resource.resource_name, configs=())


def _entry(cls, name: str, value: str | None, source: int, config_type: int, read_only: bool = True,
           synonyms: tuple = ()):
    return nested(cls, "DescribeConfigsResourceResult", name=name, value=value, read_only=read_only,
                  config_source=source, is_default=source == DEFAULT_CONFIG, is_sensitive=False,
                  synonyms=tuple(nested(cls, "DescribeConfigsSynonym", name=n, value=v, source=src)
                                 for n, v, src in synonyms),
                  config_type=config_type, documentation=None)


# --- broker --------------------------------------------------------------------

def _in_effect(services):
    """(config, {dynamic key: (value, source)}) this broker applies now."""
    dynamic = getattr(services, "dynamic", None)
    if dynamic is None:
        return services.config, {}
    return dynamic.config, dynamic.sources


# Kafka reports a broker config as writable when its broker reconfigures it
# (DynamicBrokerConfig.AllDynamicConfigs), which leaves out the three
# throttle rates DynamicConfig.Broker adds.
_WRITABLE = frozenset(name for name, spec in broker_configs.KEYS.items() if spec.group != broker_configs.REPLICATION)


def _dynamic_source(source: str) -> int:
    return DYNAMIC_DEFAULT_BROKER_CONFIG if source == DEFAULT_SOURCE else DYNAMIC_BROKER_CONFIG


def broker_entries(services) -> list[tuple]:
    """(name, value, source, type, read only, synonyms) of every broker config this broker can state cheaply."""
    config, dynamic = _in_effect(services)
    layers = getattr(getattr(services, "dynamic", None), "layers", {})
    defaults = _defaults(type(config))
    entries = []
    for name, key in sorted(broker_config._KEYS.items()):
        if key.scale != 1 or name in _ALIASES or name == LOG_DIR_MEDIA:
            continue
        value = getattr(config, key.attribute)
        default = defaults.get(key.attribute, _MISSING)
        static = getattr(services.config, key.attribute)
        synonyms = _synonyms(name, layers, static, default)
        source = synonyms[0][2] if synonyms else STATIC_BROKER_CONFIG
        entries.append((name, _text(value), source, _type_of(name, value), name not in _WRITABLE, synonyms))
    # Dynamic-only keys (the replication throttle rates): shown when set.
    for name, (value, source) in dynamic.items():
        if name not in broker_config._KEYS:
            entries.append((name, value, _dynamic_source(source), LONG, name not in _WRITABLE,
                            _synonyms(name, layers, _MISSING, _MISSING)))
    entries.append(_log_dir_media(services))
    return sorted(entries)


def _synonyms(name: str, layers, static, default) -> tuple[tuple[str, str | None, int], ...]:
    """Every level that sets `name`, the one in effect first, as Kafka lists them with
    include_synonyms: the broker's own dynamic value, the cluster-wide dynamic default,
    server.properties (a value other than the built-in default: the file itself is not
    kept), the built-in default."""
    found = [(name, raw, _dynamic_source(source)) for raw, source in layers.get(name, ())]
    if static is not _MISSING and static != default:
        found.append((name, _text(static), STATIC_BROKER_CONFIG))
    if default is not _MISSING:
        found.append((name, _text(default), DEFAULT_CONFIG))
    return tuple(found)


def _log_dir_media(services) -> tuple[str, str, int, int]:
    log_dirs = services.replica_manager.log_manager.log_dirs
    value = ",".join(f"{d.path}:{d.media}" for d in log_dirs)
    source = STATIC_BROKER_CONFIG if services.config.log_dir_media else DEFAULT_CONFIG
    return LOG_DIR_MEDIA, value, source, LIST


_MISSING = object()


def _defaults(config_cls) -> dict[str, object]:
    defaults = {}
    for f in dataclasses.fields(config_cls):
        if f.default is not dataclasses.MISSING:
            defaults[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            defaults[f.name] = f.default_factory()
    return defaults


def _text(value) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (tuple, list)):
        return ",".join(_text(v) for v in value)
    if isinstance(value, dict):
        return ",".join(f"{k}:{v}" for k, v in value.items())
    if isinstance(value, broker_config.Endpoint):
        return value.uri()
    return str(value)


def _type_of(name: str, value) -> int:
    if isinstance(value, bool):
        return BOOLEAN
    if isinstance(value, int):
        return LONG if name.endswith((".ms", ".bytes")) else INT
    if isinstance(value, (tuple, list, dict)):
        return LIST
    return STRING


# --- topic ---------------------------------------------------------------------

# Topic key -> the broker key that is its default (Kafka's TopicConfigSynonyms).
TOPIC_TO_BROKER_KEY = {spec.topic_key: name for name, spec in broker_configs.KEYS.items() if spec.topic_key}


def topic_entries(services, topic: str) -> list[tuple]:
    return topic_entries_for(services, services.replica_manager.topic_configs.get(topic, {}))


def topic_entries_for(services, overrides: dict[str, str]) -> list[tuple]:
    """(name, value, source, type, read only, synonyms) of every topic key, for a
    topic with these overrides: every topic config is alterable (AlterConfigs,
    IncrementalAlterConfigs), so none is read-only, as Kafka answers."""
    config, _ = _in_effect(services)
    defaults = config.default_log_config()
    layers = getattr(getattr(services, "dynamic", None), "layers", {})
    broker_defaults = _defaults(type(services.config))
    entries = []
    for name, (field_name, _) in sorted(TOPIC_KEYS.items()):
        if name not in overrides and field_name is None:
            continue        # validated only: this broker has no value of its own to state
        synonyms = _topic_synonyms(name, overrides, layers, services.config, broker_defaults)
        value = overrides[name] if name in overrides else _text(getattr(defaults, field_name))
        # Kafka: the first level that sets the key is its source; none at all is DEFAULT_CONFIG.
        source = synonyms[0][2] if synonyms else DEFAULT_CONFIG
        # The key's type, whatever level sets it (Kafka: LogConfig.configType).
        config_type = STRING if field_name is None else _type_of(name, getattr(defaults, field_name))
        entries.append((name, value, source, config_type, False, synonyms))
    return entries


def _topic_synonyms(name: str, overrides: dict[str, str], layers, static_config,
                    broker_defaults: dict[str, object]) -> tuple[tuple[str, str | None, int], ...]:
    """The topic's own override first, then the levels of the broker key it defaults to
    (`static_config`: server.properties as read; `broker_defaults`: the built-in ones)."""
    own = ((name, overrides[name], DYNAMIC_TOPIC_CONFIG),) if name in overrides else ()
    broker_key = TOPIC_TO_BROKER_KEY.get(name)
    key = broker_config._KEYS.get(broker_key) if broker_key else None
    if key is None:    # a broker key this broker does not read: no broker level to name
        return own
    return own + _synonyms(broker_key, layers, getattr(static_config, key.attribute),
                           broker_defaults.get(key.attribute, _MISSING))
