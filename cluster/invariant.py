"""Invariant checks that survive `python -O`.

`assert` is stripped under -O; the properties this module guards (offsets
only grow, a batch is whole, a leader epoch never goes back) must hold in
production too, so they are checked with a plain `if` and a typed error.
"""


class InvariantViolation(RuntimeError):
    """A property the design guarantees did not hold: a bug, never bad input."""


def invariant(condition: bool, message: str) -> None:
    if not condition:
        raise InvariantViolation(message)
