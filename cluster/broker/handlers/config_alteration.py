"""What AlterConfigs and IncrementalAlterConfigs share: the ZooKeeper work
and the answer (the rules are cluster/admin/config_requests.py's).

On the request thread, each resource is named (its entity, or refused at
once). The ZooKeeper work runs on the admin-work thread (admin_work.py): per
resource, the topic must exist, the stored config is read, the new one
decided and checked whole (a broker's config also against this broker as
it runs: the values it would refuse to apply, such as log.cleaner.threads
beyond double the count in effect, are refused with INVALID_REQUEST, as
Kafka's DynamicBrokerConfig.validate does), then written with its change notification in one
multi conditional on the version read (configs.write, as `kafkactl configs
alter` writes) unless `validate_only`. A concurrent change to the same
znode makes the multi fail; the resource is read and decided again, at most
CONFLICT_ATTEMPTS times, then answered with the error. Resources are
independent: one refused does not stop the others, as in Kafka.

The answer waits for the work at most ANSWER_TIMEOUT_S (the requests carry
no timeout; clients wait request.timeout.ms, 30 s by default), then says
REQUEST_TIMED_OUT for every resource not yet answered.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable

from kio.schema.errors import ErrorCode

from kafkactl.cluster import fatal
from kafkactl.cluster.admin import config_requests as rules
from kafkactl.cluster.admin import configs
from kafkactl.cluster.broker import dynamic_config
from kafkactl.cluster.broker.deferred import FutureAnswer
from kafkactl.cluster.broker.handlers.group_answers import NO_THROTTLE
from kafkactl.cluster.protocol.build import make, nested
from kafkactl.cluster.protocol.codec import response_class
from kafkactl.cluster.zk import layout
from kafkactl.cluster.zk.client import wait

log = logging.getLogger(__name__)

ANSWER_TIMEOUT_S = 30.0
CONFLICT_ATTEMPTS = 3

# (error, message) per resource, in request order.
Result = tuple[ErrorCode, str | None]
Decide = Callable[[configs.Entity, dict[str, str], list[rules.Operation]], dict[str, str]]


def handle(services, header, request, api_key: int, operations_of: Callable, decide: Decide):
    """Answer the request; `operations_of(resource)` lists its Operations,
    `decide(entity, stored config, operations)` is the new config."""
    cls = response_class(api_key, header.api_version)
    named = []
    for resource in request.resources:
        try:
            entity = rules.entity_of(resource.resource_type, resource.resource_name, services.config.broker_id)
        except rules.Refused as refused:
            entity = refused
        named.append((resource.resource_type, resource.resource_name, entity, operations_of(resource)))
    pending = [item for item in named if isinstance(item[2], configs.Entity)]

    def build(outcome) -> object:
        results = outcome if isinstance(outcome, dict) else {}
        if not isinstance(outcome, dict) and outcome is not None and pending:
            log.warning("config change not carried out: %s", outcome)
        return make(cls, throttle_time=NO_THROTTLE, responses=tuple(
            nested(cls, "AlterConfigsResourceResponse", resource_type=resource_type, resource_name=name,
                   **_result(entity, results.get(index)))
            for index, (resource_type, name, entity, _) in enumerate(named)))

    if not pending or services.admin_work is None:
        return build({})
    deadline = time.monotonic() + ANSWER_TIMEOUT_S
    validate_only = bool(request.validate_only)
    work = [(index, entity, resource_type, name, ops)
            for index, (resource_type, name, entity, ops) in enumerate(named) if isinstance(entity, configs.Entity)]
    running = functools.partial(_check_running, services)
    future = services.admin_work.submit(lambda zk: _alter(zk, work, decide, validate_only, running), deadline)
    return FutureAnswer(future, ANSWER_TIMEOUT_S, build, on_timeout=None)


def _result(entity, result: Result | None) -> dict:
    if isinstance(entity, rules.Refused):
        return {"error_code": entity.error, "error_message": entity.message}
    if result is None:   # the work did not run in time, or failed as a whole
        return {"error_code": ErrorCode.request_timed_out, "error_message": "the config change did not complete in time"}
    return {"error_code": result[0], "error_message": result[1]}


def _alter(zk, work, decide: Decide, validate_only: bool, running: Callable) -> dict[int, Result]:
    """The admin-work thread: every named resource, one after the other."""
    results = {}
    for index, entity, resource_type, name, operations in work:
        try:
            results[index] = _alter_one(zk, entity, rules.label(resource_type, name), operations, decide,
                                        validate_only, running)
        except rules.Refused as refused:
            results[index] = (refused.error, refused.message)
        except configs.ConcurrentChange:
            results[index] = (ErrorCode.request_timed_out,
                              f"{entity.path} kept changing while it was written; nothing was written")
        except Exception as error:    # ZooKeeper unreachable: this resource fails, the next may not
            fatal.halt_if_fatal(error, "config change")
            log.warning("config change of %s failed: %s", entity.path, error)
            results[index] = (ErrorCode.unknown_server_error, f"{type(error).__name__}: {error}")
    return results


def _alter_one(zk, entity: configs.Entity, resource: str, operations, decide: Decide,
               validate_only: bool, running: Callable) -> Result:
    client, timeout_s = zk.client, zk.timeout_s
    if entity.entity_type == configs.TOPICS and wait(client.exists_async(layout.topic(entity.name)),
                                                     timeout_s) is None:
        raise rules.Refused(ErrorCode.unknown_topic_or_partition, f"Topic '{entity.name}' does not exist.")
    for attempt in range(CONFLICT_ATTEMPTS):
        stored = configs.read_configs(client, [entity], timeout_s)[entity]
        config = decide(entity, stored.config, operations)
        rules.check(entity, resource, config)
        if entity.entity_type == configs.BROKERS:
            running(zk, entity, resource, config)
        if validate_only:
            return ErrorCode.none, None
        try:
            if configs.write(client, stored, config, timeout_s):
                log.info("config of %s now %s (Admin API)", entity.path, config)
            return ErrorCode.none, None
        except configs.ConcurrentChange:
            if attempt == CONFLICT_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


def _check_running(services, zk, entity: configs.Entity, resource: str, config: dict[str, str]) -> None:
    """Refused when this broker would not apply `config` as the entity's
    (the default's or its own) beside the other one as stored, from the
    config in effect now (dynamic_config.resolve's UpdateRefused)."""
    own_id = services.config.broker_id
    other = configs.broker_entity(None if entity.name != configs.BROKER_DEFAULT else own_id)
    stored = configs.read_configs(zk.client, [other], zk.timeout_s)[other].config
    default, own = (config, stored) if entity.name == configs.BROKER_DEFAULT else (stored, config)
    in_effect = services.dynamic or dynamic_config.static(services.config)
    try:
        dynamic_config.resolve(services.config, default, own, in_effect.config.log_cleaner_threads)
    except dynamic_config.UpdateRefused as refused:
        raise rules.Refused(ErrorCode.invalid_request, f"Invalid config value for resource {resource}: {refused}")
