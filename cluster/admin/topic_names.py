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
