"""The small languages tool arguments speak (docs/design.md#tool-contract): times, spans,
globs, regexes, `$1`.

Each parser turns bad input into an ArgumentError whose message shows a valid example.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Literal

import re2

from vault_node import time_phrases
from vault_node.errors import ArgumentError

_SPAN = re.compile(r"([0-9]+)\s*([hdwmy])")
_SPAN_DAYS = {"d": 1, "w": 7, "m": 30, "y": 365}
_MAX_SPAN_DAYS = 500 * 365
_MONTH = re.compile(r"[0-9]{4}-[0-9]{2}")
_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_DOLLAR = re.compile(r"\$(\$|[0-9]+|\{[A-Za-z_0-9]+\}|[A-Za-z_][A-Za-z_0-9]*)")
TIME_FORMS = (
    "YYYY-MM-DD, YYYY-MM, an RFC 3339 time, today, yesterday, (since) last week, this month,"
    " in March, March 2026, 5 December, Monday, last Friday, 3 days ago, last weekend, or a"
    " span like 7d, 2w, 6m, 1y, 12h"
)
_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
            "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
            "few": 3, "a few": 3, "several": 3, "couple": 2, "a couple": 2,
            "couple of": 2, "a couple of": 2}  # fmt: skip
_NAMED_MONTH = re.compile(r"(?:in\s+)?([a-z]+)(?:\s+([0-9]{4}))?")
_PERIOD = re.compile(r"(this|last)\s+(week|month|year)")
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_WEEKDAY = re.compile(rf"(last\s+)?({'|'.join(_WEEKDAYS)})")
_WEEK_DAY_FORM = (
    rf"(?P<day>{'|'.join(_WEEKDAYS)})\s+(?:of\s+)?(?P<week>this|last)\s+week"
    rf"|(?P<week2>this|last)\s+week['’]?s\s+(?P<day2>{'|'.join(_WEEKDAYS)})"
)
_WEEK_DAY = re.compile(_WEEK_DAY_FORM)
"""A day of a calendar week: `Friday last week`, `last week's Friday`, `Monday of this week`."""
_WEEK_DAY_UNNAMED = re.sub(r"\?P<\w+>", "?:", _WEEK_DAY_FORM)  # for patterns holding it


def parse_span(text: str) -> dt.timedelta:
    """`12h`, `7d`, `2w`, `6m` (months of 30 days), `1y` (365 days) → a duration."""
    match = _SPAN.fullmatch(text.strip().lower())
    if not match:
        raise ArgumentError(f"{text!r} is not a span; use a number and h, d, w, m or y, e.g. 30d")
    count, unit = int(match.group(1)), match.group(2)
    days = count / 24 if unit == "h" else count * _SPAN_DAYS[unit]
    if days > _MAX_SPAN_DAYS:
        raise ArgumentError(f"{text!r} reaches too far back; use at most 500 years")
    return dt.timedelta(hours=count) if unit == "h" else dt.timedelta(days=days)


def is_span(text: str) -> bool:
    return _SPAN.fullmatch(text.strip().lower()) is not None


def parse_time(text: str, now: dt.datetime, name: str = "time") -> dt.datetime:
    """A point in time from any form of docs/design.md#tool-contract (a span counts back)."""
    value = text.strip()
    if value[:6].lower() == "since ":
        value = value[6:].strip()
    lowered = " ".join(value.lower().split())
    lowered = "today" if lowered in _TODAY_PARTS else lowered
    words = _in_words(lowered, now)
    if words is not None:
        return words
    try:
        spoken = _spoken_period(lowered, now)
    except (KeyError, ValueError, OverflowError):
        spoken = None  # `31 February`: not a day, so not readable
    if spoken is not None:
        return spoken[0]
    if is_span(lowered):
        return now - parse_span(lowered)
    try:
        if _DAY.fullmatch(value):
            return dt.datetime.combine(dt.date.fromisoformat(value), dt.time(), now.tzinfo)
        if _MONTH.fullmatch(value):
            return dt.datetime.combine(dt.date.fromisoformat(value + "-01"), dt.time(), now.tzinfo)
        moment = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise ArgumentError(f"{name} {text!r} is not readable; use {TIME_FORMS}") from exc
    return moment if moment.tzinfo else moment.replace(tzinfo=now.tzinfo)


def _in_words(text: str, now: dt.datetime) -> dt.datetime | None:
    """The start of a day, week (Monday), month or year named in plain words, or None."""
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    if text in ("today", "yesterday"):
        return today - dt.timedelta(days=int(text == "yesterday"))
    period = _PERIOD.fullmatch(text)
    if period:
        back = period.group(1) == "last"
        if period.group(2) == "week":
            return today - dt.timedelta(days=today.weekday() + 7 * back)
        if period.group(2) == "month":
            first = today.replace(day=1)
            return (first - dt.timedelta(days=1)).replace(day=1) if back else first
        return today.replace(month=1, day=1, year=today.year - back)
    week_day = _WEEK_DAY.fullmatch(text)
    if week_day:  # that day of the week named, Monday its first
        which = week_day["week"] or week_day["week2"]
        monday = today - dt.timedelta(days=today.weekday() + 7 * (which == "last"))
        return monday + dt.timedelta(days=_WEEKDAYS.index(week_day["day"] or week_day["day2"]))
    weekday = _WEEKDAY.fullmatch(text)
    if weekday:  # the last such day, today included; `last Monday` a Monday before today
        back = (today.weekday() - _WEEKDAYS.index(weekday.group(2))) % 7
        return today - dt.timedelta(days=back or 7 * bool(weekday.group(1)))
    named = _NAMED_MONTH.fullmatch(text)
    if named and named.group(1) in _MONTHS:
        month = _MONTHS[named.group(1)]
        year = int(named.group(2)) if named.group(2) else now.year - (month > now.month)
        return today.replace(year=year, month=month, day=1)
    return None


Bounds = tuple[dt.datetime | None, dt.datetime | None]


def _bounds(found: re.Match[str], now: dt.datetime) -> Bounds | None:
    """The after and before bounds of a `_QUESTION_TIME` match; None when it is more
    likely no time of the past."""
    if found["count"] or found["one"]:
        units = {"hour": "h", "day": "d", "week": "w", "month": "m", "year": "y"}
        count = _number(found["count"]) if found["count"] else 1
        unit = (found["unit"] or found["one"]).lower()
        return now - parse_span(f"{count}{units[unit]}"), None
    named = (
        found["point"]
        or found["within"]
        or found["within_named"]
        or found["day"]
        or found["spoken"]
        or found["bare"]
    )
    point = " ".join(named.lower().split())
    rel = (found["rel"] or "").lower()
    if rel in ("after", "before", "until") and (_WEEKDAY.fullmatch(point) or _ahead(point, now)):
        return None  # `before Friday`, `until December 24`: more often the next one
    start, end = _period(point, now)
    by_word: dict[str, Bounds] = {
        "since": (start, None),
        "after": (end, None),
        "before": (None, start),
        "until": (None, end),
    }
    return by_word.get(rel, (start, end))


def _period(text: str, now: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
    """The start and end (the next period's start) of the day, week, month or year `text`
    names: one of `_POINT`'s forms, lowercase with single spaces."""
    if _YEAR.fullmatch(text):
        return _month_start(int(text), 1, now), _month_start(int(text) + 1, 1, now)
    if text in _TODAY_PARTS:
        text = "today"
    spoken = _spoken_period(text, now)
    if spoken is not None:
        return spoken
    start = parse_time(text, now)
    if (
        text in ("today", "yesterday")
        or _DAY.fullmatch(text)
        or _WEEKDAY.fullmatch(text)
        or _WEEK_DAY.fullmatch(text)
    ):
        return start, start + dt.timedelta(days=1)
    if text.endswith("week"):
        return start, start + dt.timedelta(days=7)
    if text.endswith("year"):
        return start, start.replace(year=start.year + 1)
    return start, _month_start(start.year + start.month // 12, start.month % 12 + 1, now)


def _month_start(year: int, month: int, now: dt.datetime) -> dt.datetime:
    return dt.datetime(year, month, 1, tzinfo=now.tzinfo)


def _spoken_period(text: str, now: dt.datetime) -> tuple[dt.datetime, dt.datetime] | None:
    """The forms only a question speaks: `3 days ago`, `two weeks ago` (the day, week,
    month or year that was that long ago), `last weekend` (Saturday and Sunday), `5
    December`, `December 5, 2025` (a day; without a year the last such day)."""
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    ago = _AGO.fullmatch(text)
    if ago:
        count, unit = _number(ago["n"]), ago["u"]
        if unit == "day":
            start = today - dt.timedelta(days=count)
            return start, start + dt.timedelta(days=1)
        if unit == "week":
            start = today - dt.timedelta(days=today.weekday() + 7 * count)
            return start, start + dt.timedelta(days=7)
        if unit == "month":
            months = today.year * 12 + today.month - 1 - count
            start = _month_start(months // 12, months % 12 + 1, now)
            return start, _month_start((months + 1) // 12, (months + 1) % 12 + 1, now)
        start = _month_start(today.year - count, 1, now)
        return start, start.replace(year=start.year + 1)
    weekend = _WEEKEND.fullmatch(text)
    if weekend:  # `this`: this week's; `last`: the one before; `the`: the latest begun
        saturday = today + dt.timedelta(days=5 - today.weekday())
        which = weekend["which"]
        if which == "last" or (which == "the" and today.weekday() < 5):
            saturday -= dt.timedelta(days=7)
        return saturday, saturday + dt.timedelta(days=2)
    dated = _DAY_MONTH.fullmatch(text) or _MONTH_DAY.fullmatch(text)
    if dated:
        month, day = _MONTHS[dated["month"]], int(dated["day"])
        year = int(dated["year"]) if dated["year"] else now.year - _ahead(text, now)
        start = dt.datetime(year, month, day, tzinfo=now.tzinfo)
        return start, start + dt.timedelta(days=1)
    return None


def _ahead(text: str, now: dt.datetime) -> bool:
    """A day named by its month without a year that is still to come this year (so the
    last such day was last year's)."""
    dated = _DAY_MONTH.fullmatch(text) or _MONTH_DAY.fullmatch(text)
    if dated is None or dated["year"]:
        return False
    return (_MONTHS[dated["month"]], int(dated["day"])) > (now.month, now.day)


def _number(text: str) -> int:
    """`3`, `three`, `a few` → 3."""
    words = " ".join(text.lower().split())
    return int(words) if words.isdigit() else _NUMBERS[words]


@dataclass(frozen=True)
class QuestionTime:
    """A time a question names in plain words, read as a filter on the notes' dates."""

    phrase: str
    rest: str
    """What is searched for: the question without the phrase (a period alone stays)."""
    after: dt.datetime | None
    before: dt.datetime | None
    dated_by: Literal["updated", "created"] = "updated"
    """`created` when the question asks what was made then ("notes created last week")."""


# In a question, months by their full names: `mar` or `jan` may well be words of their own.
_FULL_MONTHS = "|".join(name for name in _MONTHS if name not in ("jan", "feb", "mar", "apr",
                        "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec"))  # fmt: skip
_NAMED = (
    _WEEK_DAY_UNNAMED  # before `last week`, which it may hold
    + rf"|(?:this|last)\s+(?:week|month|year)|today|yesterday|last\s+(?:{'|'.join(_WEEKDAYS)})"
)
_TODAY_PARTS = ("this morning", "this afternoon", "this evening", "tonight", "earlier today")
# A count in words or digits: `3`, `three`, `a few`, `a couple of`.
_COUNT = r"[0-9]{1,3}|(?:a\s+)?few|several|(?:a\s+)?couple(?:\s+of)?|" + "|".join(
    sorted((word for word in _NUMBERS if " " not in word), key=len, reverse=True)
)
_AGO_FORM = rf"(?P<n>{_COUNT})\s+(?P<u>day|week|month|year)s?\s+ago"
_WEEKEND_FORM = r"(?P<which>last|this|the)\s+weekend"


def _day_month_forms(months: list[str]) -> tuple[str, str]:
    """`(the) 5(th) (of) December(, 2025)` and `Dec(.) 5(th)(, 2025)`, months of `months`."""
    month = rf"(?P<month>{'|'.join(sorted(months, key=len, reverse=True))})"
    day, year = r"(?P<day>[0-9]{1,2})(?:st|nd|rd|th)?", r"(?:,?\s+(?P<year>[0-9]{4}))?"
    return rf"(?:the\s+)?{day}\s+(?:of\s+)?{month}{year}", rf"{month}\.?\s+{day}{year}"


_AGO = re.compile(_AGO_FORM)
_WEEKEND = re.compile(_WEEKEND_FORM)
_DAY_MONTH, _MONTH_DAY = (re.compile(form) for form in _day_month_forms(list(_MONTHS)))


def _spoken(months: list[str]) -> str:
    """Forms that name their time alone, so they need no word before them (`notes from 3
    days ago`, `notes 3 days ago`): a time ago, a weekend, a part of today, a day with its
    month (of `months`); the same forms `_spoken_period` reads, without their group names
    (a pattern names each group once)."""
    forms = (_AGO_FORM, _WEEKEND_FORM, "|".join(_TODAY_PARTS), *_day_month_forms(months))
    return re.sub(r"\?P<\w+>", "?:", "|".join(forms))


_SPOKEN = _spoken(list(_MONTHS))
_SPOKEN_ALONE = _spoken([month for month in _MONTHS if month != "may"])  # `which 3 may I`
_POINT = (
    rf"{_SPOKEN}|{_NAMED}|(?:{_FULL_MONTHS})(?:\s+[0-9]{{4}})?"
    rf"|[0-9]{{4}}-[0-9]{{2}}(?:-[0-9]{{2}})?|{'|'.join(_WEEKDAYS)}"
)
_UNIT = r"(?:hour|day|week|month|year)"
_QUESTION_TIME = re.compile(
    rf"\b(?:(?P<rel>since|after|before|until)\s+(?P<point>{_POINT}|(?:19|20)[0-9]{{2}})"
    rf"|(?:in|during|from|over|on)\s+(?P<within>{_SPOKEN})"
    rf"|(?:in|during|from)\s+(?P<within_named>{_POINT})"
    rf"|on\s+(?P<day>{_WEEK_DAY_UNNAMED}"
    rf"|(?:last\s+)?(?:{'|'.join(_WEEKDAYS)})|[0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}})"
    rf"|(?P<spoken>{_SPOKEN_ALONE})"
    rf"|(?P<bare>{_NAMED})"
    rf"|(?:(?:in|over|during|within|for|from)\s+)?(?:the\s+|this\s+)?(?:last|past)"
    rf"\s+(?:(?P<count>{_COUNT})\s+(?P<unit>{_UNIT})s?|(?P<one>{_UNIT})))"
    r"(?:['’]s)?\b",
    re.IGNORECASE,
)
_YEAR = re.compile(r"(?:19|20)[0-9]{2}")
_MADE = re.compile(r"\b(?:created|added|new\s+notes?)\b", re.IGNORECASE)
_BEFORE_MARK = re.compile(r"\s+([?.!,;:])")


def question_time(question: str, now: dt.datetime) -> QuestionTime | None:
    """The first time a question names in English plain words — `since last week`, `in
    March`, `before 2026-02-01`, `yesterday`, `in the last 3 days` — or, when it names
    none, in another language `time_phrases` reads (`seit gestern`, `3天前`), and the
    question without it; None when it names none. `since` a period counts from its start, `after`
    from its end, `before` up to its start, `until` up to its end; `in`, `during` or `from`
    a period, `on` a day (`on Monday`, `on 2026-03-05`), and a period alone (`last week's
    notes`) mean within it; a period alone stays in the words searched too, unless it is
    all there is. A question of what was created, added or new goes by the notes'
    `created` dates. A year alone counts only after since, after, before or until (`plans
    in 2027` is about 2027, and `notes from 2024` may be too), a weekday only after since,
    from, on or last (`before Friday` is more often the next one)."""
    found = _QUESTION_TIME.search(question)
    if found is not None:
        start, end = found.span()
    else:  # `seit letzter Woche`, `3天前`: read as the English phrase each means
        abroad = time_phrases.find(question)
        found = _QUESTION_TIME.fullmatch(abroad[2]) if abroad else None
        if abroad is None or found is None:
            return None
        start, end = abroad[:2]
    try:
        bounds = _bounds(found, now)
    except (ArgumentError, ValueError, OverflowError):
        return None  # `since 2026-02-30`: no time, so words like any others
    if bounds is None:
        return None
    after, before = bounds
    rest = " ".join((question[:start] + " " + question[end:]).split())
    rest = _BEFORE_MARK.sub(r"\1", rest).strip(" ,;:-")
    if not any(char.isalnum() for char in rest):
        rest = ""  # "yesterday?"
    elif found["bare"]:
        rest = question  # "today's daily note": the words may be the subject too
    made = _MADE.search(question) is not None or time_phrases.made(question)
    return QuestionTime(question[start:end], rest, after, before,
                        "created" if made else "updated")  # fmt: skip


def parse_day(text: str, today: dt.date, name: str) -> dt.date:
    """A calendar day: YYYY-MM-DD, RFC 3339, YYYY-MM, today, or a span back from today."""
    now = dt.datetime.combine(today, dt.time(12))
    return parse_time(text, now, name).date()


def glob_regex(pattern: str) -> re.Pattern[str]:
    """Go's `path.Match`: `*` and `?` never cross '/', `[...]` classes, `\\` escapes."""
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "\\":
            if i + 1 >= len(pattern):
                raise _bad_glob(pattern, "it ends with a lone backslash")
            i += 1
            out.append(re.escape(pattern[i]))
        elif ch == "[":
            i, cls = _glob_class(pattern, i)
            out.append(cls)
        else:
            out.append(re.escape(ch))
        i += 1
    return re.compile("".join(out))


def _glob_class(pattern: str, start: int) -> tuple[int, str]:
    end = pattern.find(
        "]", start + 2 if pattern[start + 1 : start + 2] in ("^", "]") else start + 1
    )
    if end == -1:
        raise _bad_glob(pattern, "a [ is never closed")
    body = pattern[start + 1 : end]
    negate = body.startswith("^")
    body = body[1:] if negate else body
    if not body:
        raise _bad_glob(pattern, "a character class is empty")
    escaped = body.replace("\\", "\\\\").replace("[", "\\[")
    return end, f"[{'^' if negate else ''}{escaped}]"


def _bad_glob(pattern: str, why: str) -> ArgumentError:
    return ArgumentError(
        f"invalid glob pattern {pattern!r}: {why}; use * (within one folder), ? and [abc], "
        "e.g. wiki/*.md"
    )


def compile_regex(pattern: str, *, case_sensitive: bool = True) -> re2._Regexp[str]:
    """An RE2 expression (the spec's Go syntax), or an ArgumentError quoting RE2's complaint.

    RE2 matches in time linear in the text: no pattern can make a grep or a replace
    backtrack for hours and hold the node (Python's `re` can, e.g. `(a+)+$`). It has no
    backreferences or lookaround, as Go has none."""
    if not pattern:
        raise ArgumentError("pattern is empty; pass the text or expression to look for")
    options = re2.Options()
    options.log_errors = False  # RE2 would print the pattern to stderr
    options.case_sensitive = case_sensitive
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        raw = exc.args[0] if exc.args else b"not valid"
        why = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        raise ArgumentError(
            f"invalid regular expression {pattern!r}: {why}; this is RE2 (Go) syntax, without "
            "backreferences or lookaround; escape special characters such as ( [ . * with a "
            "backslash, or search literally"
        ) from exc


def expand_dollars(template: str, match: re2._Match[str]) -> str:
    """Go's `Expand`: `$1`, `${1}`, `${name}` are groups, `$$` is a dollar; the rest is literal."""

    def group(m: re.Match[str]) -> str:
        ref = m.group(1)
        if ref == "$":
            return "$"
        ref = ref.strip("{}")
        key: int | str = int(ref) if ref.isdigit() else ref
        try:
            return match.group(key) or ""
        except IndexError:  # no such group: Go expands it to nothing
            return ""

    return _DOLLAR.sub(group, template)
