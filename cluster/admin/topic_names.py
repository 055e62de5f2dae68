"""Kafka's topic name rules."""

import re

MAX_NAME_LENGTH = 249
_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")


class InvalidTopicName(ValueError):
    pass


def validate_topic_name(name: str) -> None:
    if not name:
        raise InvalidTopicName("topic name is empty")
    if name in (".", ".."):
        raise InvalidTopicName(f"topic name cannot be {name!r}")
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidTopicName(f"topic name is {len(name)} characters; the limit is {MAX_NAME_LENGTH}")
    if not _LEGAL.match(name):
        raise InvalidTopicName(
            f"topic name {name!r} has illegal characters; use ASCII letters, digits, '.', '_' and '-'"
        )


def collision_key(name: str) -> str:
    """'.' and '_' collide in metric names, so Kafka treats them as equal."""
    return name.replace(".", "_")


class BadTopicPattern(ValueError):
    pass


def select_topics(patterns: list[str], existing: list[str]) -> list[str]:
    """The topics `patterns` name, in the order of `existing` (sorted names).

    As kafka-topics.sh's --topic, a pattern is a regular expression that must
    match a whole name; a pattern that is exactly an existing name selects
    that topic alone (so "orders.v1" does not also pick "orders_v1"). A
    pattern that selects nothing is an error naming it."""
    selected: set[str] = set()
    for pattern in patterns:
        if pattern in existing:
            selected.add(pattern)
            continue
        try:
            compiled = re.compile(pattern)
        except re.error as error:
            raise BadTopicPattern(f"{pattern!r} is neither a topic nor a valid regular expression ({error})") \
                from None
        matched = [name for name in existing if compiled.fullmatch(name)]
        if not matched:
            raise BadTopicPattern(f"no topic matches {pattern!r} (see `kafkactl topics list`)")
        selected.update(matched)
    return [name for name in existing if name in selected]
