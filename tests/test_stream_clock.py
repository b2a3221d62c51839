"""agentrt/stream/_clock.py: RFC 3339 timestamps made per millisecond, and read back."""

import math
import re
import time
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentrt.stream._clock import MICROS, make_clock, millisecond, rfc3339_now, rfc3339_to_ns

FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"
CANONICAL = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z")
INSTANTS = st.integers(min_value=10**9, max_value=253402300799 * 10**9 + 999_999_999)


def expected(nanoseconds: int) -> str:
    """What datetime makes of an instant, in the timestamps' format."""
    moment = datetime.fromtimestamp(nanoseconds // 10**9, UTC)
    return moment.replace(microsecond=nanoseconds // 1000 % 10**6).strftime(FORMAT)


@given(INSTANTS)
def test_millisecond_holds_the_instant_and_formats_it(nanoseconds: int) -> None:
    start, end, text = millisecond(nanoseconds)
    assert start <= nanoseconds < end == start + 1_000_000
    assert start % 1_000_000 == 0
    assert text + MICROS[(nanoseconds - start) // 1000] == expected(nanoseconds)


@given(st.lists(INSTANTS, min_size=2, max_size=8), st.integers(0, 999))
def test_millisecond_formats_each_second_anew_however_instants_alternate(
    seconds: list[int], milli: int
) -> None:
    # The date is made once a second and kept: back and forth between seconds (two
    # clocks, a clock stepped back), every instant still gets its own second's date.
    instants = [(s // 10**9) * 10**9 + milli * 10**6 for s in seconds]
    for nanoseconds in [*instants, *reversed(instants), *instants]:
        start, _, text = millisecond(nanoseconds)
        assert text + MICROS[(nanoseconds - start) // 1000] == expected(nanoseconds)


def test_micros_are_the_last_three_digits_and_the_zone() -> None:
    assert len(MICROS) == 1000
    assert (MICROS[0], MICROS[7], MICROS[999]) == ("000Z", "007Z", "999Z")


@given(INSTANTS)
def test_clock_formats_like_datetime(nanoseconds: int) -> None:
    assert make_clock(lambda: nanoseconds)() == expected(nanoseconds)


def test_clock_cache_follows_millisecond_and_second_boundaries_and_backward_steps() -> None:
    second = 1_795_323_480 * 10**9
    readings = [
        second + 999_998_999,
        second + 999_999_000,  # the next millisecond: the cached text must change
        second + 999_999_999,
        second + 10**9,  # the next second
        second + 10**9 + 1_000,
        second + 500_000_000,  # the wall clock stepped back (NTP)
        second + 500_000_999,
        second + 3 * 10**9 + 7_000,
    ]
    clock_values = iter(readings)
    clock = make_clock(lambda: next(clock_values))
    got = [clock() for _ in readings]
    assert got == [expected(reading) for reading in readings]
    assert got[:5] == [
        "2026-11-22T04:58:00.999998Z",
        "2026-11-22T04:58:00.999999Z",
        "2026-11-22T04:58:00.999999Z",
        "2026-11-22T04:58:01.000000Z",
        "2026-11-22T04:58:01.000001Z",
    ]


def test_rfc3339_now_matches_datetime_now() -> None:
    before = datetime.now(UTC).strftime(FORMAT)
    now = rfc3339_now()
    after = datetime.now(UTC).strftime(FORMAT)
    assert CANONICAL.fullmatch(now)
    # Same fixed-width format, so text order is time order.
    assert before <= now <= after


def test_rfc3339_now_is_non_decreasing_across_a_second_boundary() -> None:
    boundary = math.floor(time.time()) + 1
    # Waiting for the wall clock's next second is the point here, not synchronisation.
    time.sleep(max(0.0, boundary - 0.01 - time.time()))
    values = [rfc3339_now()]
    # Read until a reading falls in a later second than the first; a process descheduled
    # past the boundary during the sleep then still sees one (the next second's) boundary.
    deadline = boundary + 2.5
    while values[-1][:19] == values[0][:19] and time.time() < deadline:
        values.append(rfc3339_now())
    values.extend(rfc3339_now() for _ in range(100))
    assert values == sorted(values)
    assert len({value[:19] for value in values}) >= 2  # a boundary was crossed


# -- rfc3339_to_ns -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "nanoseconds"),
    [
        ("1970-01-01T00:00:00Z", 0),
        ("1970-01-01T00:00:00.1Z", 100_000_000),
        ("1970-01-01T00:00:00.123456789Z", 123_456_789),
        ("1970-01-01T00:00:00.1234567891Z", 123_456_789),
        ("1970-01-01T00:00:00.0000019Z", 1_900),
        ("1970-01-01t01:00:00+01:00", 0),
        ("1970-01-01T00:00:00-00:01", 60 * 10**9),
        ("1970-01-01T00:00:00z", 0),
        ("2016-12-31T23:59:60Z", 1_483_228_800 * 10**9),  # a leap second
        ("1969-12-31T23:59:59.5Z", -500_000_000),
    ],
)
def test_rfc3339_to_ns(text: str, nanoseconds: int) -> None:
    assert rfc3339_to_ns(text) == nanoseconds


@pytest.mark.parametrize(
    "text",
    [
        "2026-11-22",
        "2026-11-22T04:58:00",  # no offset
        "2026-11-22 04:58:00Z",  # a space is ISO 8601, not RFC 3339's date-time
        "2026-11-22T04:58Z",
        "2026-13-01T00:00:00Z",
        "2026-11-22T24:00:00Z",
        "2026-11-22T04:58:00.Z",
        "2026-11-22T04:58:00+24:00",
        "20261122T045800Z",
        "\uff12\uff10\uff12\uff16-11-22T04:58:00Z",  # fullwidth digits, which \\d would take
        "2026-11-22T04:58:00Z ",
    ],
)
def test_rfc3339_to_ns_rejects_other_formats(text: str) -> None:
    with pytest.raises(ValueError, match="is not an RFC 3339 date-time"):
        rfc3339_to_ns(text)


@pytest.mark.parametrize("text", ["2026-02-29T00:00:00Z", "0000-01-01T00:00:00Z"])
def test_rfc3339_to_ns_rejects_dates_that_do_not_exist(text: str) -> None:
    with pytest.raises(ValueError, match="is not a real date-time"):
        rfc3339_to_ns(text)


@given(
    moment=st.datetimes(
        min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC)
    ),
    offset_minutes=st.integers(min_value=-23 * 60 - 59, max_value=23 * 60 + 59),
)
def test_rfc3339_to_ns_agrees_with_datetime(moment: datetime, offset_minutes: int) -> None:
    local = moment.astimezone(timezone(timedelta(minutes=offset_minutes)))
    expected = (moment - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1) * 1000
    assert rfc3339_to_ns(local.isoformat(timespec="microseconds")) == expected
