"""The times `groups reset-offsets` takes: --to-datetime and --by-duration.

Both read as kafka-consumer-groups.sh reads them, so a command line moved
from Kafka's script means the same instant here:
- --to-datetime: ISO-8601 `YYYY-MM-DDTHH:MM:SS[.fraction][zone]`, the zone
  `Z`, `+HH`, `+HHMM` or `+HH:MM`; without a zone the time is UTC (Kafka's
  Utils.getDateTime appends "Z"). Kafka insists on exactly three fraction
  digits; any number from 0 to 9 is accepted here, truncated to milliseconds.
- --by-duration: Java's Duration.parse syntax, `PnDTnHnMn.nS` (days, hours,
  minutes, seconds; each part optional but at least one; signs allowed on
  parts), e.g. `PT1H`, `P1DT12H`, `PT0.5S`. Years, months and weeks are
  refused as Java refuses them (their length varies). The whole duration
  must not be negative: a reset "by -1 hour" would point into the future.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone


class BadTimeSpec(ValueError):
    """The text is not a datetime or duration Kafka's tool would take."""


_DATETIME = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?"
    r"(Z|[+-]\d{2}(?::?\d{2})?)?")

_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?\d+)D)?"
    r"(T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?(?:([-+]?\d+)(?:[.,](\d{0,9}))?S)?)?",
    re.IGNORECASE)

MS_PER_S = 1000
MAX_DURATION_MS = 100 * 365 * 24 * 3600 * MS_PER_S   # a century: anything longer is a typo


def parse_datetime_ms(text: str) -> int:
    """Milliseconds since the epoch of an ISO-8601 date and time (UTC without a zone)."""
    match = _DATETIME.fullmatch(text.strip())
    if match is None:
        raise BadTimeSpec(f"{text!r} is not YYYY-MM-DDTHH:MM:SS[.SSS][Z|+HH:MM]")
    year, month, day, hour, minute, second = (int(g) for g in match.group(1, 2, 3, 4, 5, 6))
    fraction, zone = match.group(7) or "", match.group(8)
    try:
        moment = datetime(year, month, day, hour, minute, second, tzinfo=_zone(zone))
    except ValueError as error:   # e.g. month 13, February 30
        raise BadTimeSpec(f"{text!r}: {error}") from None
    millis = int(fraction[:3].ljust(3, "0")) if fraction else 0
    return _epoch_ms(moment) + millis


def _zone(text: str | None) -> timezone:
    if text is None or text == "Z":
        return timezone.utc
    sign = -1 if text[0] == "-" else 1
    digits = text[1:].replace(":", "")
    hours, minutes = int(digits[:2]), int(digits[2:] or 0)
    if hours > 18 or minutes > 59:   # Java's ZoneOffset limit: +-18:00
        raise BadTimeSpec(f"zone offset {text!r} is out of range")
    return timezone(sign * timedelta(hours=hours, minutes=minutes))


def _epoch_ms(moment: datetime) -> int:
    delta = moment - datetime(1970, 1, 1, tzinfo=timezone.utc)
    return (delta.days * 86400 + delta.seconds) * MS_PER_S + delta.microseconds // 1000


def parse_duration_ms(text: str) -> int:
    """Milliseconds of a Java/ISO-8601 duration such as PT1H or P1DT30M."""
    match = _DURATION.fullmatch(text.strip())
    if match is None or (match.group(3) is not None and match.group(3).upper() == "T") \
            or not any(match.group(2, 4, 5, 6)):
        raise BadTimeSpec(f"{text!r} is not an ISO-8601 duration such as PT1H, PT30M or P1DT12H")
    sign, days, _, hours, minutes, seconds, fraction = match.groups()
    total_ms = (_int(days) * 86400 + _int(hours) * 3600 + _int(minutes) * 60) * MS_PER_S
    second_sign = -1 if (seconds or "").startswith("-") else 1
    total_ms += _int(seconds) * MS_PER_S + second_sign * int((fraction or "0")[:3].ljust(3, "0"))
    total_ms = -total_ms if sign == "-" else total_ms
    if total_ms < 0:
        raise BadTimeSpec(f"{text!r} is negative: a duration goes back from now")
    if total_ms > MAX_DURATION_MS:
        raise BadTimeSpec(f"{text!r} is longer than 100 years")
    return total_ms


def _int(text: str | None) -> int:
    return int(text) if text else 0
