"""The argument languages: spans, points in time, globs, regexes and `$1` expansion."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vault_node import grammar
from vault_node.errors import ArgumentError

NOW = dt.datetime(2026, 3, 15, 10, 30, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("text", "delta"),
    [
        ("12h", dt.timedelta(hours=12)),
        ("7d", dt.timedelta(days=7)),
        ("2w", dt.timedelta(days=14)),
        ("6m", dt.timedelta(days=180)),
        ("1y", dt.timedelta(days=365)),
        (" 3D ", dt.timedelta(days=3)),
    ],
)
def test_spans_count_hours_days_weeks_months_and_years(text: str, delta: dt.timedelta) -> None:
    assert grammar.parse_span(text) == delta


@pytest.mark.parametrize("text", ["", "7", "d", "7s", "-1d", "1.5d", "99999y"])
def test_anything_else_is_not_a_span(text: str) -> None:
    with pytest.raises(ArgumentError):
        grammar.parse_span(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("today", dt.datetime(2026, 3, 15, tzinfo=dt.UTC)),
        ("2026-01-02", dt.datetime(2026, 1, 2, tzinfo=dt.UTC)),
        ("2026-01", dt.datetime(2026, 1, 1, tzinfo=dt.UTC)),
        ("2026-01-02T03:04:05Z", dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)),
        (
            "2026-01-02T03:04:05+01:00",
            dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.timezone(dt.timedelta(hours=1))),
        ),
        ("7d", NOW - dt.timedelta(days=7)),
    ],
)
def test_every_time_form_of_the_spec_is_read(text: str, expected: dt.datetime) -> None:
    assert grammar.parse_time(text, NOW) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("yesterday", dt.datetime(2026, 3, 14, tzinfo=dt.UTC)),
        ("this week", dt.datetime(2026, 3, 9, tzinfo=dt.UTC)),  # 15 March 2026 is a Sunday
        ("since last week", dt.datetime(2026, 3, 2, tzinfo=dt.UTC)),
        ("Last  Month", dt.datetime(2026, 2, 1, tzinfo=dt.UTC)),
        ("this month", dt.datetime(2026, 3, 1, tzinfo=dt.UTC)),
        ("last year", dt.datetime(2025, 1, 1, tzinfo=dt.UTC)),
        ("in March", dt.datetime(2026, 3, 1, tzinfo=dt.UTC)),
        ("since February", dt.datetime(2026, 2, 1, tzinfo=dt.UTC)),
        ("in April", dt.datetime(2025, 4, 1, tzinfo=dt.UTC)),  # the last April, not the next
        ("Sept 2024", dt.datetime(2024, 9, 1, tzinfo=dt.UTC)),
        ("since 2026-01-02", dt.datetime(2026, 1, 2, tzinfo=dt.UTC)),
        ("Monday", dt.datetime(2026, 3, 9, tzinfo=dt.UTC)),  # the last Monday
        ("sunday", dt.datetime(2026, 3, 15, tzinfo=dt.UTC)),  # today is one
        ("last Sunday", dt.datetime(2026, 3, 8, tzinfo=dt.UTC)),  # one before today
        ("3 days ago", dt.datetime(2026, 3, 12, tzinfo=dt.UTC)),
        ("two weeks ago", dt.datetime(2026, 2, 23, tzinfo=dt.UTC)),  # that week's Monday
        ("last weekend", dt.datetime(2026, 3, 7, tzinfo=dt.UTC)),
        ("this morning", dt.datetime(2026, 3, 15, tzinfo=dt.UTC)),
        ("5 December", dt.datetime(2025, 12, 5, tzinfo=dt.UTC)),  # the last 5 December
        ("since Mar 3", dt.datetime(2026, 3, 3, tzinfo=dt.UTC)),
    ],
)
def test_a_time_in_plain_words_is_the_start_of_the_day_week_month_or_year_it_names(
    text: str, expected: dt.datetime
) -> None:
    assert grammar.parse_time(text, NOW) == expected


@pytest.mark.parametrize(
    "text",
    [
        "tomorrow",
        "2026-02-30",
        "2026-13",
        "02.01.2026",
        "12:00",
        "in Smarch",
        "next week",
        "31 February",
        "in 3 days",
    ],
)
def test_an_unreadable_time_names_the_forms(text: str) -> None:
    with pytest.raises(ArgumentError, match="YYYY-MM-DD"):
        grammar.parse_time(text, NOW, "modified_after")


def at(*parts: int) -> dt.datetime:
    return dt.datetime(*parts, tzinfo=dt.UTC)  # type: ignore[misc]


def test_a_question_of_what_was_made_goes_by_created_dates() -> None:
    for question in ("notes created last week", "what did I add in March", "new notes today"):
        found = grammar.question_time(question, NOW)
        assert found is not None
        assert found.dated_by == ("updated" if "add " in question else "created"), question


@pytest.mark.parametrize(
    ("question", "phrase", "rest", "after", "before"),
    [
        ("what did we decide on pricing since last week?", "since last week",
         "what did we decide on pricing?", at(2026, 3, 2), None),
        ("meeting notes from last week", "from last week", "meeting notes",
         at(2026, 3, 2), at(2026, 3, 9)),
        ("Last week's notes on pricing", "Last week's", "Last week's notes on pricing",
         at(2026, 3, 2), at(2026, 3, 9)),
        ("In March, what did I plan?", "In March", "what did I plan?",
         at(2026, 3, 1), at(2026, 4, 1)),
        ("notes in December 2025", "in December 2025", "notes", at(2025, 12, 1), at(2026, 1, 1)),
        ("what changed yesterday", "yesterday", "what changed yesterday",
         at(2026, 3, 14), at(2026, 3, 15)),
        ("yesterday?", "yesterday", "", at(2026, 3, 14), at(2026, 3, 15)),
        ("backups in the last 3 days", "in the last 3 days", "backups",
         NOW - dt.timedelta(days=3), None),
        ("after February", "after February", "", at(2026, 3, 1), None),
        ("api before 2026-02-01", "before 2026-02-01", "api", None, at(2026, 2, 1)),
        ("until 2025", "until 2025", "", None, at(2026, 1, 1)),
        ("since 2024-05 the roadmap", "since 2024-05", "the roadmap", at(2024, 5, 1), None),
        ("during this year", "during this year", "", at(2026, 1, 1), at(2027, 1, 1)),
        ("open today's daily note", "today's", "open today's daily note",
         at(2026, 3, 15), at(2026, 3, 16)),
        ("what changed since Monday?", "since Monday", "what changed?", at(2026, 3, 9), None),
        ("notes from last Friday", "from last Friday", "notes", at(2026, 3, 13), at(2026, 3, 14)),
        ("standup on Sunday", "on Sunday", "standup", at(2026, 3, 15), at(2026, 3, 16)),
        # A day of a calendar week: last week is 2 to 8 March.
        ("notes from Friday last week", "from Friday last week", "notes", at(2026, 3, 6),
         at(2026, 3, 7)),
        ("standup on Monday of last week", "on Monday of last week", "standup", at(2026, 3, 2),
         at(2026, 3, 3)),
        ("last week's Tuesday notes", "last week's Tuesday", "last week's Tuesday notes",
         at(2026, 3, 3), at(2026, 3, 4)),
        ("pricing since Wednesday this week", "since Wednesday this week", "pricing",
         at(2026, 3, 11), None),
        ("before Thursday last week", "before Thursday last week", "", None, at(2026, 3, 5)),
        ("meeting on 2026-03-05", "on 2026-03-05", "meeting", at(2026, 3, 5), at(2026, 3, 6)),
        # A rolling span: `the last week` counts back from now, `last week` is a calendar one.
        ("what changed in the past week", "in the past week", "what changed",
         NOW - dt.timedelta(days=7), None),
        ("notes from the last two weeks", "from the last two weeks", "notes",
         NOW - dt.timedelta(days=14), None),
        ("what did I do over the past couple of days", "over the past couple of days",
         "what did I do", NOW - dt.timedelta(days=2), None),
        ("decisions over the last month", "over the last month", "decisions",
         NOW - dt.timedelta(days=30), None),
        # A time ago is the day, week, month or year that was that long ago.
        ("meeting notes 3 days ago", "3 days ago", "meeting notes", at(2026, 3, 12),
         at(2026, 3, 13)),
        ("what did we decide two weeks ago?", "two weeks ago", "what did we decide?",
         at(2026, 2, 23), at(2026, 3, 2)),
        ("a month ago", "a month ago", "", at(2026, 2, 1), at(2026, 3, 1)),
        ("since a few days ago", "since a few days ago", "", at(2026, 3, 12), None),
        ("what did I write this morning", "this morning", "what did I write",
         at(2026, 3, 15), at(2026, 3, 16)),
        # NOW is a Sunday: the weekend is this one, the last weekend the one before.
        ("what happened last weekend", "last weekend", "what happened", at(2026, 3, 7),
         at(2026, 3, 9)),
        ("notes over the weekend", "over the weekend", "notes", at(2026, 3, 14),
         at(2026, 3, 16)),
        # A day with its month; without a year, the last such day.
        ("notes since 1 March", "since 1 March", "notes", at(2026, 3, 1), None),
        ("meeting on the 5th of March", "on the 5th of March", "meeting", at(2026, 3, 5),
         at(2026, 3, 6)),
        ("December 5, 2025 notes", "December 5, 2025", "notes", at(2025, 12, 5),
         at(2025, 12, 6)),
        ("notes from 20 March", "from 20 March", "notes", at(2025, 3, 20), at(2025, 3, 21)),
        ("since Mar 3", "since Mar 3", "", at(2026, 3, 3), None),
    ],
)  # fmt: skip
def test_a_time_a_question_names_is_read_with_the_question_left_without_it(
    question: str, phrase: str, rest: str, after: dt.datetime | None, before: dt.datetime | None
) -> None:
    found = grammar.question_time(question, NOW)
    assert found == grammar.QuestionTime(phrase, rest, after, before)


@pytest.mark.parametrize(
    "question",
    [
        "plans in 2027",  # a year alone after in or from may be what the note is about
        "notes from 2024",
        "the march of progress",
        "notes about may",
        "in mar",
        "since 2026-02-30",  # no such day: words like any others
        "in 9999-12",
        "in the last 999 years",
        "how do I rotate the API key?",
        "",
        "Monday standup notes",  # a weekday alone may be a name
        "what is due before Friday",  # more often the next Friday than the last
        "notes on March planning",  # `on` takes a day alone
        "what is due before March 20",  # a day ahead this year: more likely the next one
        "which 3 may I delete",  # `may` with a number and no word before it: a verb
        "notes in 3 days",  # ahead
        "notes on 31 February",  # no such day
        "notes from 0 March",
    ],
)
def test_a_question_naming_no_readable_time_is_left_as_it_is(question: str) -> None:
    assert grammar.question_time(question, NOW) is None


_TIME_WORDS = ["since", "after", "before", "until", "in", "during", "from", "the", "last",
               "past", "this", "week", "month", "year", "today", "yesterday", "March", "may",
               "December", "0", "3", "999", "days", "0001-01", "9999-12", "9999-12-31",
               "on", "Monday", "friday", "ago", "two", "a", "few", "couple", "of",
               "weekend", "5th", "31", "Dec", "over", "morning",
               "2026-02-30", "1900", "2099", "'s", "?", "notes",
               # the other languages' (time_phrases)
               "seit", "vor", "letzten", "Woche", "Tagen", "März", "im", "depuis", "hier",
               "il", "y", "jours", "mars", "en", "hace", "días", "desde", "fa", "giorni",
               "dall'", "há", "geleden", "sinds", "zwei", "quelques", "2025", "1er", "5.",
               "de", "с", "прошлой", "недели", "дня", "назад", "上周", "天", "前", "月",
               "日", "以来", "自", "以降", "か月", "十二", "2025年", "지난주", "일", "전",
               "월", "이후", "bis", "nach", "dem", "avant", "jusqu'à", "antes", "hasta",
               "prima", "até", "tot", "до", "после", "之前", "以前", "まで", "까지"]  # fmt: skip


@given(st.lists(st.sampled_from(_TIME_WORDS), max_size=8), st.sampled_from([" ", ""]),
       st.text(max_size=12))  # fmt: skip
def test_any_question_is_read_or_left_as_it_is_never_refused(
    words: list[str], joiner: str, noise: str
) -> None:
    question = joiner.join(words) + noise
    found = grammar.question_time(question, NOW)
    if found is not None:
        assert found.phrase in question
        assert found.after is not None or found.before is not None
        if found.after is not None and found.before is not None:
            assert found.after < found.before


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("*.md", "a.md", True),
        ("*.md", "wiki/a.md", False),
        ("wiki/*.md", "wiki/a.md", True),
        ("wiki/?.md", "wiki/ab.md", False),
        ("wiki/[ab].md", "wiki/b.md", True),
        ("wiki/[^ab].md", "wiki/b.md", False),
        ("wiki/\\*.md", "wiki/*.md", True),
        ("a+b(c).md", "a+b(c).md", True),
    ],
)
def test_globs_behave_like_go_path_match(pattern: str, path: str, matches: bool) -> None:
    assert (grammar.glob_regex(pattern).fullmatch(path) is not None) is matches


@given(st.text(alphabet="ab/.*?", max_size=12), st.text(alphabet="ab/.", max_size=12))
def test_a_star_never_matches_across_a_slash(pattern: str, path: str) -> None:
    regex = grammar.glob_regex(pattern)
    if regex.fullmatch(path) is not None:
        assert path.count("/") == pattern.count("/")


def test_a_regex_compiles_case_insensitively_unless_asked() -> None:
    assert grammar.compile_regex("abc", case_sensitive=False).search("xABCx")
    assert not grammar.compile_regex("abc").search("ABC")
    with pytest.raises(ArgumentError, match="invalid regular expression"):
        grammar.compile_regex("(")


@pytest.mark.parametrize("pattern", [r"(\w)\1", r"foo(?=bar)", r"(?<!x)y"])
def test_backreferences_and_lookaround_are_refused_as_go_refuses_them(pattern: str) -> None:
    with pytest.raises(ArgumentError, match="RE2"):
        grammar.compile_regex(pattern)


def test_a_pathological_pattern_runs_in_linear_time() -> None:
    # With Python's re this search backtracks 2^40 times; RE2 answers at once. The point
    # is that it returns at all (a test never times things: pytest's timeout guards it).
    regex = grammar.compile_regex(r"(a+)+$")
    assert regex.search("a" * 40 + "b") is None
    assert regex.search("a" * 10_000 + "b") is None


def test_an_invalid_pattern_is_not_printed_by_re2(capfd: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ArgumentError):
        grammar.compile_regex("(secret-term")
    captured = capfd.readouterr()
    assert "secret-term" not in captured.out + captured.err


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("$1-$2", "ab-cd"),
        ("${1}x", "abx"),
        ("${word}!", "ab!"),
        ("$$1", "$1"),
        ("$9 and $missing", " and "),
        ("\\1 stays", "\\1 stays"),
    ],
)
def test_dollar_references_expand_like_go(template: str, expected: str) -> None:
    match = grammar.compile_regex(r"(?P<word>ab)(cd)").search("xxabcd")
    assert match is not None
    assert grammar.expand_dollars(template, match) == expected
