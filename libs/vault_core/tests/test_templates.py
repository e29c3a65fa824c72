"""Templates, slugs and capture paths (docs/design.md#tools)."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vault_core import templates
from vault_core.errors import InvalidArgumentError, InvalidPathError
from vault_core.testing import FIXED_NOW
from vault_core.vault import rfc3339

# ---------------------------------------------------------------- slug


@pytest.mark.parametrize(
    ("title", "expected"),
    [
        ("Hello World", "hello-world"),
        ("Über Größe", "ueber-groesse"),
        ("ÄÖÜ", "aeoeue"),
        ("Straße", "strasse"),
        ("Café crème à la carte", "cafe-creme-a-la-carte"),
        ("Ma\u0308rchen", "maerchen"),  # ä typed as a + combining diaeresis (macOS)
        ("  --Project: Alpha / Beta!!  ", "project-alpha-beta"),
        ("2026 plan, v2.1", "2026-plan-v2-1"),
        ("snake_case_name", "snake-case-name"),
        ("日本語", "note"),
        ("!!!", "note"),
        ("", "note"),
        ("Notes 日本語 2", "notes-2"),
    ],
)
def test_slug_follows_the_spec_rules(title: str, expected: str) -> None:
    assert templates.slug(title) == expected


def test_slug_is_cut_to_80_characters() -> None:
    assert templates.slug("a" * 100) == "a" * 80


def test_slug_does_not_end_with_a_dash_after_cutting() -> None:
    assert templates.slug("x" * 79 + " y") == "x" * 79


@given(st.text(max_size=300))
def test_slug_is_always_1_to_80_safe_characters_without_edge_dashes(title: str) -> None:
    result = templates.slug(title)
    assert re.fullmatch(r"[a-z0-9-]{1,80}", result)
    assert not result.startswith("-")
    assert not result.endswith("-")


# ---------------------------------------------------------------- render


def test_render_replaces_every_placeholder_at_a_fixed_time() -> None:
    template = (
        "{{title}}|{{date}}|{{time}}|{{datetime}}|{{year}}|{{month}}|{{day}}|{{slug}}|{{ title }}"
    )
    assert templates.render(template, "Über Größe: Café!", FIXED_NOW) == (
        "Über Größe: Café!|2026-01-02|03:04|2026-01-02T03:04:05Z|2026|01|02"
        "|ueber-groesse-cafe|Über Größe: Café!"
    )


def test_render_writes_the_offset_of_a_non_utc_time() -> None:
    summer = dt.datetime(2026, 7, 9, 18, 30, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert templates.render("{{datetime}} {{time}}", "x", summer) == (
        "2026-07-09T18:30:00+02:00 18:30"
    )


def test_render_leaves_unknown_placeholders_untouched() -> None:
    text = "{{author}} {title} {{ Title }} {{date"
    assert templates.render(text, "T", FIXED_NOW) == text


def test_render_does_not_expand_placeholders_inside_the_title() -> None:
    assert templates.render("# {{title}}", "About {{date}}", FIXED_NOW) == "# About {{date}}"


def test_render_of_a_full_template() -> None:
    template = '---\ntitle: "{{title}}"\ntags: []\n---\n# {{title}}\n\nDate: {{date}}\n'
    assert templates.render(template, "Weekly sync", FIXED_NOW) == (
        '---\ntitle: "Weekly sync"\ntags: []\n---\n# Weekly sync\n\nDate: 2026-01-02\n'
    )


# ---------------------------------------------------------------- paths


@pytest.mark.parametrize(
    ("name", "path"),
    [
        ("meeting", "templates/meeting.md"),
        ("meeting.md", "templates/meeting.md"),
        ("  meeting  ", "templates/meeting.md"),
        ("Meeting.MD", "templates/Meeting.MD"),
        ("team/standup", "templates/team/standup.md"),
    ],
)
def test_template_path_lives_under_templates_with_md(name: str, path: str) -> None:
    assert templates.template_path(name) == path


def test_default_template_target_is_in_the_inbox_with_date_and_slug() -> None:
    assert templates.default_template_target("Weekly Sync", FIXED_NOW) == (
        "inbox/2026-01-02-weekly-sync.md"
    )


@pytest.mark.parametrize(
    ("day", "path"),
    [
        (dt.date(2026, 1, 2), "journal/2026/2026-01-02.md"),
        (dt.date(1999, 12, 31), "journal/1999/1999-12-31.md"),
    ],
)
def test_daily_path_is_journal_year_date(day: dt.date, path: str) -> None:
    assert templates.daily_path(day) == path


@pytest.mark.parametrize(
    ("day", "heading"),
    [
        (dt.date(2006, 1, 2), "Monday, 2 January 2006"),
        (dt.date(2026, 2, 28), "Saturday, 28 February 2026"),
        (dt.date(2024, 12, 29), "Sunday, 29 December 2024"),
    ],
)
def test_daily_heading_is_english_long_form(day: dt.date, heading: str) -> None:
    assert templates.daily_heading(day) == heading


def test_inbox_path_has_date_time_and_slug() -> None:
    assert templates.inbox_path("Call the plumber!", FIXED_NOW) == (
        "inbox/2026-01-02-0304-call-the-plumber.md"
    )


@pytest.mark.parametrize(
    ("rel", "n", "numbered"),
    [
        ("inbox/x.md", 2, "inbox/x-2.md"),
        ("inbox/2026-01-02-0304-call.md", 3, "inbox/2026-01-02-0304-call-3.md"),
        ("a.b/c.md", 2, "a.b/c-2.md"),
    ],
)
def test_numbered_puts_the_number_before_the_extension(rel: str, n: int, numbered: str) -> None:
    assert templates.numbered(rel, n) == numbered


# ---------------------------------------------------------------- parse_day


@pytest.mark.parametrize(
    ("text", "day"),
    [
        ("2026-01-31", dt.date(2026, 1, 31)),
        (" 2024-02-29 ", dt.date(2024, 2, 29)),
    ],
)
def test_parse_day_accepts_a_calendar_day(text: str, day: dt.date) -> None:
    assert templates.parse_day(text) == day


@pytest.mark.parametrize("text", ["2026-1-31", "31.01.2026", "2026/01/31", "20260131", "", "today"])
def test_parse_day_refuses_another_format(text: str) -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        templates.parse_day(text)
    assert "YYYY-MM-DD" in caught.value.message
    assert caught.value.code == "invalid_argument"


@pytest.mark.parametrize("text", ["2026-02-30", "2025-02-29", "2026-13-01", "2026-00-10"])
def test_parse_day_refuses_a_day_that_is_not_in_the_calendar(text: str) -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        templates.parse_day(text)
    assert caught.value.message == f"{text} is not a calendar day"


# ---------------------------------------------------------------- capture_title


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("Buy milk\nand bread", "Buy milk"),
        ("\n\n   \n## Idea: faster index\nbody", "Idea: faster index"),
        ("- [ ] call Anna", "[ ] call Anna"),
        ("> * quoted bullet", "quoted bullet"),
        ("#tagged thought", "tagged thought"),
        ("x" * 70, "x" * 60),
        ("a" * 59 + " b", "a" * 59),
    ],
)
def test_capture_title_is_the_cleaned_first_line_cut_to_60(text: str, title: str) -> None:
    assert templates.capture_title(text) == title


@pytest.mark.parametrize("text", ["", "   \n\n", "###\n---\n> >"])
def test_capture_title_falls_back_when_no_line_has_text(text: str) -> None:
    assert templates.capture_title(text) == "capture"


@pytest.mark.parametrize("name", ["../secret", "/etc/passwd", ".hidden", "a/../../b", ""])
def test_a_template_name_that_is_a_path_out_is_refused(name: str) -> None:
    with pytest.raises(InvalidPathError):
        templates.template_path(name)


def test_a_naive_time_is_written_as_utc() -> None:
    assert rfc3339(dt.datetime(2026, 1, 2, 3, 4, 5)) == "2026-01-02T03:04:05Z"
