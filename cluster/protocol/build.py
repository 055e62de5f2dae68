"""Build kio response entities for any version from one set of field values.

Each kio version module has its own classes, and fields come and go between
versions. Handlers describe a response once; `make` keeps the fields the
target version has and drops the rest, so one handler serves every version.
"""

from __future__ import annotations

import dataclasses
import sys
from functools import cache
from types import ModuleType


@cache
def _field_names(cls) -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(cls))


def module_of(response_cls) -> ModuleType:
    return sys.modules[response_cls.__module__]


def make(cls, **values):
    names = _field_names(cls)
    return cls(**{k: v for k, v in values.items() if k in names})


def nested(response_cls, class_name: str, /, **values):
    """An instance of the nested class `class_name` from the same version module."""
    return make(getattr(module_of(response_cls), class_name), **values)


def has_field(cls, name: str) -> bool:
    return name in _field_names(cls)
