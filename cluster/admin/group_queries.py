"""Consumer groups over the Kafka protocol: what `kafkactl groups` asks brokers.

A group lives on its coordinator, a broker found with FindCoordinator (one
request for every group where the broker speaks v4, else one per group);
DescribeGroups, OffsetFetch, OffsetCommit, DeleteGroups and OffsetDelete go
to it. ListGroups goes to every broker, each listing the groups it
coordinates; ListOffsets goes to each partition's leader. So these work
against any ZooKeeper-mode Kafka as against the reference cluster.

One `GroupAdmin` serves one command: it keeps a connection per broker (each
opened with ApiVersions v0, then the highest version both sides speak; see
broker_queries.py) and a deadline for everything it does. Coordinator errors
that Kafka calls retriable (COORDINATOR_LOAD_IN_PROGRESS while a new
coordinator reads its partition of __consumer_offsets, COORDINATOR_NOT_AVAILABLE,
NOT_COORDINATOR after the coordinator moved) and lost connections are retried
with a doubling backoff until the deadline, the coordinator looked up again
except after a load in progress. What is not retriable is returned to the
caller as Kafka's error name; `GroupQueryError` means no answer in time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

from kafkactl.cluster.admin import group_protocol as gp
from kafkactl.cluster.admin.broker_queries import BrokerAddress
from kafkactl.cluster.admin.broker_sessions import Backoff, BrokerSessions, BrokerUnavailable

LOAD_IN_PROGRESS = "coordinator_load_in_progress"
NOT_AVAILABLE = "coordinator_not_available"
NOT_COORDINATOR = "not_coordinator"
RETRIABLE = frozenset({LOAD_IN_PROGRESS, NOT_AVAILABLE, NOT_COORDINATOR})

FIRST_BACKOFF_S = 0.05
MAX_BACKOFF_S = 1.0
MAX_ROUNDS = 60                  # with the backoff above: about a minute, whatever the deadline

TopicPartition = tuple[str, int]
R = TypeVar("R")


class GroupQueryError(Exception):
    """No usable answer before the deadline (or a broker that lacks an API)."""


class GroupAdmin:
    """The group APIs against one cluster, for the length of one command."""

    def __init__(self, brokers: Iterable[BrokerAddress], timeout_s: float, connect=None,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> None:
        self.brokers = list(brokers)
        if not self.brokers:
            raise GroupQueryError("the cluster lists no broker: is it up?")
        self._sleep = sleep
        self._sessions = BrokerSessions(timeout_s, connect, clock)
        self._coordinators: dict[str, BrokerAddress] = {}
        self._bootstrap = 0

    def close(self) -> None:
        self._sessions.close()

    def __enter__(self) -> "GroupAdmin":
        return self

    def __exit__(self, *_) -> None:
        self.close()

    def coordinator_of(self, group: str) -> BrokerAddress | None:
        """The coordinator last found for `group` (None before any request about it)."""
        return self._coordinators.get(group)

    # --- the group APIs ---------------------------------------------------------------------

    def list_groups(self) -> tuple[list[gp.ListedGroup], dict[int, str]]:
        """Every broker's groups (each group once), and why brokers did not answer."""
        groups: dict[str, gp.ListedGroup] = {}
        failures: dict[int, str] = {}
        for broker in self.brokers:
            try:
                for group in self._list_groups_of(broker):
                    groups.setdefault(group.group_id, group)
            except GroupQueryError as error:
                failures[broker.broker_id] = str(error)
        return sorted(groups.values(), key=lambda g: g.group_id), failures

    def describe_groups(self, groups: list[str]) -> dict[str, gp.GroupDescription]:
        def ask(address, batch):
            return gp.group_descriptions(self._send(address, gp.DESCRIBE_GROUPS,
                                                    lambda v: gp.describe_groups_request(v, batch)))

        return self._per_coordinator(groups, ask, lambda d: d.error)

    def fetch_offsets(self, groups: list[str]) -> dict[str, gp.GroupOffsets]:
        """Every committed offset of each group (v8: one request per coordinator)."""
        def ask(address, batch):
            if self._version(address, gp.OFFSET_FETCH) >= gp.MULTI_GROUP_OFFSET_FETCH:
                return self._fetch(address, batch)
            answers = {}
            for group in batch:
                answers.update(self._fetch(address, [group]))
            return answers

        return self._per_coordinator(groups, ask, lambda o: o.error)

    def commit_offsets(self, group: str, offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, str | None]:
        """Commit as an admin (no member, generation -1): per partition None or Kafka's error."""
        def ask(address, batch):
            response = self._send(address, gp.OFFSET_COMMIT, lambda v: gp.offset_commit_request(v, group, offsets))
            return {group: gp.partition_errors(response)}

        return self._per_coordinator([group], ask, _retriable_in)[group]

    def delete_groups(self, groups: list[str]) -> dict[str, str | None]:
        def ask(address, batch):
            return gp.deleted_groups(self._send(address, gp.DELETE_GROUPS,
                                                lambda v: gp.delete_groups_request(v, batch)))

        return self._per_coordinator(groups, ask, lambda error: error)

    def delete_offsets(self, group: str, partitions: list[TopicPartition]) \
            -> tuple[str | None, dict[TopicPartition, str | None]]:
        """OffsetDelete: the group's error, and per partition None or Kafka's error."""
        def ask(address, batch):
            response = self._send(address, gp.OFFSET_DELETE, lambda v: gp.offset_delete_request(v, group, partitions))
            return {group: (gp.error_name(response.error_code), gp.partition_errors(response))}

        return self._per_coordinator([group], ask, lambda answer: answer[0])[group]

    def list_offsets(self, leaders: Mapping[TopicPartition, BrokerAddress],
                     timestamps: Mapping[TopicPartition, int]) -> dict[TopicPartition, tuple[int, str | None]]:
        """Per partition (offset, error) from its leader; a leader that cannot be
        reached gives its partitions the error "leader_not_reachable"."""
        by_leader: dict[BrokerAddress, dict[TopicPartition, int]] = {}
        for tp, timestamp in timestamps.items():
            by_leader.setdefault(leaders[tp], {})[tp] = timestamp
        answers: dict[TopicPartition, tuple[int, str | None]] = {}
        for leader, wanted in by_leader.items():
            try:
                answers.update(gp.listed_offsets(
                    self._send(leader, gp.LIST_OFFSETS, lambda v: gp.list_offsets_request(v, wanted))))
            except BrokerUnavailable:
                answers.update({tp: (-1, "leader_not_reachable") for tp in wanted})
        return answers

    # --- coordinators and retries -----------------------------------------------------------

    def _per_coordinator(self, groups: list[str], ask: Callable[[BrokerAddress, list[str]], dict[str, R]],
                         retriable: Callable[[R], str | None]) -> dict[str, R]:
        """`ask` each group's coordinator about its groups (one call per coordinator),
        until every group has an answer that is not a retriable error."""
        results: dict[str, R] = {}
        pending = list(dict.fromkeys(groups))
        reasons: dict[str, str] = {}
        backoff = self._backoff()
        for _ in range(MAX_ROUNDS):
            for address, batch in self._coordinators_of(pending, reasons).items():
                self._ask_coordinator(address, batch, ask, retriable, results, reasons)
            pending = [g for g in pending if g not in results]
            if not pending:
                return results
            if not backoff.wait():
                break
        raise self._gave_up(pending, reasons)

    def _ask_coordinator(self, address, batch, ask, retriable, results, reasons) -> None:
        try:
            answers = ask(address, batch)
        except BrokerUnavailable as error:
            for group in batch:
                self._coordinators.pop(group, None)
                reasons[group] = f"coordinator {address.broker_id} unreachable: {error}"
            return
        for group in batch:
            if group not in answers:
                reasons[group] = f"coordinator {address.broker_id} did not answer for the group"
                continue
            answer = answers[group]
            error = retriable(answer)
            if error in RETRIABLE:
                reasons[group] = f"{error.upper()} from broker {address.broker_id}"
                if error != LOAD_IN_PROGRESS:    # loading: the right broker, just not ready yet
                    self._coordinators.pop(group, None)
            else:
                results[group] = answer

    def _coordinators_of(self, groups: list[str], reasons: dict[str, str]) -> dict[BrokerAddress, list[str]]:
        """The known coordinators of `groups`, looking up those not known yet."""
        unknown = [g for g in groups if g not in self._coordinators]
        if unknown:
            self._find_coordinators(unknown, reasons)
        by_address: dict[BrokerAddress, list[str]] = {}
        for group in groups:
            if group in self._coordinators:
                by_address.setdefault(self._coordinators[group], []).append(group)
        return by_address

    def _find_coordinators(self, groups: list[str], reasons: dict[str, str]) -> None:
        broker = self._bootstrap_broker(reasons, groups)
        if broker is None:
            return
        batched = self._version(broker, gp.FIND_COORDINATOR) >= gp.BATCHED_FIND_COORDINATOR
        try:
            for batch in ([groups] if batched else [[g] for g in groups]):
                response = self._send(broker, gp.FIND_COORDINATOR, lambda v: gp.find_coordinator_request(v, batch))
                for group, found in gp.coordinators(response, batch).items():
                    self._found(found, reasons)
        except BrokerUnavailable as error:
            self._bootstrap += 1           # ask the next broker next round
            for group in groups:
                reasons.setdefault(group, f"broker {broker.broker_id} unreachable: {error}")

    def _found(self, found: gp.Coordinator, reasons: dict[str, str]) -> None:
        if found.error is None:
            self._coordinators[found.group_id] = BrokerAddress(found.node_id, found.host, found.port)
        elif found.error in RETRIABLE:
            detail = f": {found.message}" if found.message else ""
            reasons[found.group_id] = f"no coordinator ({found.error.upper()}{detail})"
        else:
            raise GroupQueryError(f"group {found.group_id!r}: FindCoordinator failed: {found.error.upper()}"
                                  + (f" ({found.message})" if found.message else ""))

    def _bootstrap_broker(self, reasons: dict[str, str], groups: list[str]) -> BrokerAddress | None:
        """A broker that answers ApiVersions, trying each once from the last good one."""
        for i in range(len(self.brokers)):
            broker = self.brokers[(self._bootstrap + i) % len(self.brokers)]
            try:
                self._sessions.session(broker)
            except BrokerUnavailable as error:
                for group in groups:
                    reasons[group] = f"broker {broker.broker_id} unreachable: {error}"
                continue
            self._bootstrap = (self._bootstrap + i) % len(self.brokers)
            return broker
        return None

    def _list_groups_of(self, broker: BrokerAddress) -> list[gp.ListedGroup]:
        backoff = self._backoff()
        reason = ""
        for _ in range(MAX_ROUNDS):
            try:
                error, groups = gp.listed_groups(self._send(broker, gp.LIST_GROUPS, gp.list_groups_request))
            except BrokerUnavailable as unavailable:
                error, groups = None, None
                reason = f"unreachable: {unavailable}"
            if groups is not None and error is None:
                return groups
            if error is not None and error not in RETRIABLE:
                raise GroupQueryError(f"ListGroups failed: {error.upper()}")
            reason = reason if error is None else error.upper()
            if not backoff.wait():
                break
        raise GroupQueryError(f"no answer to ListGroups in time ({reason})")

    def _backoff(self) -> Backoff:
        return Backoff(FIRST_BACKOFF_S, MAX_BACKOFF_S, self._sessions.remaining_s, self._sleep)

    def _gave_up(self, pending: list[str], reasons: dict[str, str]) -> GroupQueryError:
        group = pending[0]
        more = f" (and {len(pending) - 1} more groups)" if len(pending) > 1 else ""
        return GroupQueryError(f"group {group!r}{more}: {reasons.get(group, 'no answer')}; gave up at the deadline "
                               f"(--timeout)")

    # --- sessions ---------------------------------------------------------------------------

    def _fetch(self, address: BrokerAddress, groups: list[str]) -> dict[str, gp.GroupOffsets]:
        return gp.fetched_offsets(self._send(address, gp.OFFSET_FETCH, lambda v: gp.offset_fetch_request(v, groups)),
                                  groups)

    def _version(self, address: BrokerAddress, api: tuple[int, int, int]) -> int:
        version = self._sessions.version(address, api)
        if version is None:
            raise self._unsupported(address, api)
        return version

    def _send(self, address: BrokerAddress, api: tuple[int, int, int], build: Callable[[int], object]):
        return self._sessions.send(address, api, build, lambda: self._unsupported(address, api))

    @staticmethod
    def _unsupported(address: BrokerAddress, api: tuple[int, int, int]) -> GroupQueryError:
        return GroupQueryError(f"broker {address.broker_id} does not support {_API_NAMES[api[0]]} "
                               f"(API {api[0]}) in versions {api[1]}-{api[2]}")


_API_NAMES = {gp.FIND_COORDINATOR[0]: "FindCoordinator", gp.LIST_GROUPS[0]: "ListGroups",
              gp.DESCRIBE_GROUPS[0]: "DescribeGroups", gp.OFFSET_FETCH[0]: "OffsetFetch",
              gp.OFFSET_COMMIT[0]: "OffsetCommit", gp.DELETE_GROUPS[0]: "DeleteGroups",
              gp.OFFSET_DELETE[0]: "OffsetDelete", gp.LIST_OFFSETS[0]: "ListOffsets"}


def _retriable_in(errors: Mapping[TopicPartition, str | None]) -> str | None:
    """OffsetCommit says coordinator errors per partition: retry when any is retriable."""
    return next((e for e in errors.values() if e in RETRIABLE), None)
