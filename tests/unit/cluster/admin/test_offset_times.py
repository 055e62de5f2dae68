"""--to-datetime and --by-duration read as kafka-consumer-groups.sh reads them."""

import pytest

from kafkactl.cluster.admin.offset_times import BadTimeSpec, parse_datetime_ms, parse_duration_ms


@pytest.mark.parametrize("text, expected_ms", [
    ("2020-11-10T16:51:38.198Z", 1605027098198),
    ("2020-11-10T16:51:38.198", 1605027098198),             # no zone: UTC, as Kafka appends "Z"
    ("2020-11-10T16:51:38.198+08:00", 1605027098198 - 8 * 3600 * 1000),
    ("2020-11-10T16:51:38.198+0800", 1605027098198 - 8 * 3600 * 1000),
    ("2020-11-10T16:51:38.198+08", 1605027098198 - 8 * 3600 * 1000),
    ("2020-11-10T16:51:38.198-05:30", 1605027098198 + 5 * 3600 * 1000 + 30 * 60 * 1000),
    ("2020-11-10T16:51:38", 1605027098000),
    ("2020-11-10T16:51:38.1987654Z", 1605027098198),        # truncated to milliseconds
    ("1970-01-01T00:00:00Z", 0),
])
def test_datetimes(text, expected_ms):
    assert parse_datetime_ms(text) == expected_ms


@pytest.mark.parametrize("text", [
    "2020-11-10 16:51:38", "2020-11-10", "2020-13-01T00:00:00", "2021-02-29T00:00:00", "2020-11-10T25:00:00",
    "2020-11-10T16:51:38+19:00", "yesterday", "",
])
def test_bad_datetimes(text):
    with pytest.raises(BadTimeSpec):
        parse_datetime_ms(text)


@pytest.mark.parametrize("text, expected_ms", [
    ("PT1H", 3600_000),
    ("pt30m", 1800_000),
    ("P1D", 86400_000),
    ("P1DT12H", 129600_000),
    ("PT0.5S", 500),
    ("PT1M-10S", 50_000),
    ("PT1.25S", 1250),
    ("PT0S", 0),
    ("P2DT3H4M5.006S", ((2 * 24 + 3) * 3600 + 4 * 60 + 5) * 1000 + 6),
])
def test_durations(text, expected_ms):
    assert parse_duration_ms(text) == expected_ms


@pytest.mark.parametrize("text, fragment", [
    ("1h", "not an ISO-8601 duration"),
    ("P", "not an ISO-8601 duration"),
    ("PT", "not an ISO-8601 duration"),
    ("P1DT", "not an ISO-8601 duration"),
    ("P1Y", "not an ISO-8601 duration"),      # years, months, weeks: Java refuses them too
    ("P1W", "not an ISO-8601 duration"),
    ("-PT1H", "negative"),
    ("PT-1H", "negative"),
    ("P40000D", "longer than 100 years"),
])
def test_bad_durations(text, fragment):
    with pytest.raises(BadTimeSpec, match=fragment):
        parse_duration_ms(text)
