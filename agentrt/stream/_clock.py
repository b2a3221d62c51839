"""The timestamps of stream events: RFC 3339 text in UTC with microseconds, and back.

Every stream event carries one (``2026-11-22T04:58:00.123456Z``), and a streamed
answer makes one event per text delta, so :func:`rfc3339_now` is on the hot path.
Formatting a date is what costs: the text up to the seconds is made once a second,
that up to the milliseconds is cached per millisecond (:func:`millisecond`), and the
last three digits come from a table (:data:`MICROS`). :func:`rfc3339_to_ns` reads any RFC 3339
date-time back as integer nanoseconds.
"""

import re
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

__all__ = ("MICROS", "make_clock", "millisecond", "rfc3339_now", "rfc3339_to_ns")

MICROS: tuple[str, ...] = tuple(f"{micro:03d}Z" for micro in range(1000))
"""The end of a timestamp after its milliseconds: the microseconds' last three digits and ``Z``."""

_gmtime = time.gmtime
_strftime = time.strftime


_MILLIS: tuple[str, ...] = tuple(f".{milli:03d}" for milli in range(1000))

# (second, its text up to the seconds) of the last millisecond() call: formatting the
# date is most of the cost, and it changes once a second. One tuple, so that a thread
# never pairs one second's number with another's text.
_second: tuple[int, str] = (-1, "")


def millisecond(nanoseconds: int) -> tuple[int, int, str]:
    """The millisecond holding an instant, for a timestamp cache.

    Args:
        nanoseconds: The instant, in nanoseconds since the Unix epoch.

    Returns:
        ``(start, end, text)``: the millisecond's first nanosecond, the first one
        after it, and its timestamp up to the milliseconds
        (``2026-11-22T04:58:00.123``). Any instant ``t`` with ``start <= t < end``
        is ``text + MICROS[(t - start) // 1000]``.
    """
    global _second
    milliseconds = nanoseconds // 1_000_000
    start = milliseconds * 1_000_000
    seconds, fraction = divmod(milliseconds, 1000)
    cached, date = _second
    if cached != seconds:
        date = _strftime("%Y-%m-%dT%H:%M:%S", _gmtime(seconds))
        _second = (seconds, date)
    return start, start + 1_000_000, date + _MILLIS[fraction]


def make_clock(time_ns: Callable[[], int] = time.time_ns) -> Callable[[], str]:
    """An :func:`rfc3339_now` reading ``time_ns`` (tests pass a fake clock).

    The unchecked event builders of :mod:`agentrt.stream.events` inline the same
    few lines (a call is a fifth of the cost there).
    """
    # (start, end, text) of the last millisecond seen; one tuple, so that a thread
    # reading it never pairs one millisecond's start with another's text.
    cache = (0, 0, "")

    def rfc3339_now() -> str:
        """The current UTC time as RFC 3339 with microseconds: ``2026-11-22T04:58:00.123456Z``.

        Equal to ``datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")``, at a
        tenth of its cost: the date and time are formatted once per millisecond.
        """
        nonlocal cache
        now = time_ns()
        start, end, text = cache
        if not start <= now < end:  # a new millisecond, or the clock stepped back
            cache = start, end, text = millisecond(now)
        return text + MICROS[(now - start) // 1000]

    return rfc3339_now


rfc3339_now = make_clock()

# The shape of RFC 3339 (section 5.6), with the field ranges a regex can check; the
# calendar (February 30) is left to datetime.
_RFC3339 = re.compile(
    r"[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])[Tt]"
    r"(?:[01][0-9]|2[0-3]):[0-5][0-9]:([0-5][0-9]|60)(?:\.([0-9]+))?"
    r"(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])",
    re.ASCII,
)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_SECOND = timedelta(seconds=1)
_MICROSECOND = timedelta(microseconds=1)


def rfc3339_to_ns(value: str) -> int:
    """The instant an RFC 3339 date-time names, in nanoseconds since the Unix epoch.

    Any offset is accepted (``Z`` or ``±HH:MM``), and any number of fraction digits
    (beyond nine they are cut). A leap second (``:60``) counts as the start of the
    next second. Integers compare exactly, where ``datetime`` would drop nanoseconds.

    Args:
        value: The date-time text, for example ``2026-11-22T04:58:00.123456Z``.

    Raises:
        ValueError: ``value`` is not an RFC 3339 date-time, or names no real date.
    """
    match = _RFC3339.fullmatch(value)
    if match is None:
        raise ValueError(
            f"{value!r} is not an RFC 3339 date-time (like 2026-11-22T04:58:00.123456Z)"
        )
    try:
        # The regex guarantees a form fromisoformat reads the same way, and it is ten
        # times cheaper than building the datetime from the groups.
        moment = datetime.fromisoformat(value)
    except ValueError:
        moment = _unusual_rfc3339(value, leap=match.group(1) == "60")
    nanoseconds = (moment - _EPOCH) // _MICROSECOND * 1000
    fraction = match.group(2)
    if fraction is not None and len(fraction) > 6:
        nanoseconds += int(fraction[6:9].ljust(3, "0"))
    return nanoseconds


def _unusual_rfc3339(value: str, *, leap: bool) -> datetime:
    """Read what fromisoformat refuses: lowercase ``t``/``z``, a leap second, or no real date."""
    text = value.upper()
    if leap:
        text = f"{text[:17]}59{text[19:]}"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError as error:  # February 30, year 0
        raise ValueError(f"{value!r} is not a real date-time: {error}") from None
    return moment + _SECOND if leap else moment
