"""Random, valid instances of kio schema classes, for round-trip and fuzz tests.

Every field gets a value of its wire type: arrays of 0-3 elements, nullable
fields sometimes null, tagged fields sometimes set. Seeded, so a failing case
replays from its seed.
"""

from __future__ import annotations

import datetime
import random
import uuid
from dataclasses import fields

from kio.schema.errors import ErrorCode
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
    is_optional,
)

_INT_RANGES = {
    "int8": (-128, 127), "uint8": (0, 255), "int16": (-2**15, 2**15 - 1), "uint16": (0, 2**16 - 1),
    "int32": (-2**31, 2**31 - 1), "uint32": (0, 2**32 - 1),
    "int64": (-2**63, 2**63 - 1), "uint64": (0, 2**64 - 1),
}


def sample(cls, rng: random.Random, depth: int = 0):
    values = {}
    for field in fields(cls):
        tagged = get_field_tag(field) is not None
        if tagged and rng.random() < 0.5:
            continue   # left at its default: not on the wire
        values[field.name] = _value(field, rng, depth, nullable=not tagged and is_optional(field))
    return cls(**values)


def _value(field, rng: random.Random, depth: int, nullable: bool):
    if nullable and rng.random() < 0.2:
        return None
    shape = classify_field(field)
    if isinstance(shape, EntityTupleField):
        return tuple(sample(shape.type_, rng, depth + 1) for _ in range(_count(rng, depth)))
    if isinstance(shape, EntityField):
        return sample(shape.type_, rng, depth + 1)
    kafka_type = get_schema_field_type(field)
    if isinstance(shape, PrimitiveTupleField):
        return tuple(_primitive(kafka_type, rng) for _ in range(_count(rng, depth)))
    return _primitive(kafka_type, rng)


def _count(rng: random.Random, depth: int) -> int:
    return rng.randint(0, 3 if depth < 3 else 1)


def _primitive(kafka_type: str, rng: random.Random):
    if kafka_type in _INT_RANGES:
        low, high = _INT_RANGES[kafka_type]
        return rng.choice((0, 1, -1 if low < 0 else 2, low, high, rng.randint(low, high)))
    if kafka_type == "bool":
        return rng.random() < 0.5
    if kafka_type == "string":
        return "".join(rng.choice("abcxyz-._é") for _ in range(rng.randint(0, 12)))
    if kafka_type in ("bytes", "records"):
        return rng.randbytes(rng.randint(0, 20))
    if kafka_type == "uuid":
        return uuid.UUID(int=rng.getrandbits(128))
    if kafka_type == "float64":
        return rng.uniform(-1e6, 1e6)
    if kafka_type == "error_code":
        return ErrorCode.none
    if kafka_type == "timedelta_i32":
        return datetime.timedelta(milliseconds=rng.randint(0, 2**31 - 1))
    if kafka_type == "timedelta_i64":
        return datetime.timedelta(milliseconds=rng.randint(0, 2**40))
    if kafka_type == "datetime_i64":
        return datetime.datetime.fromtimestamp(rng.randint(0, 2**32), tz=datetime.timezone.utc)
    raise ValueError(f"no sample for kafka_type {kafka_type!r}")
