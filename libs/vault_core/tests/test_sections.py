"""Section edits (docs/design.md#section-edits): extents, the three lookup passes, the eight
modes, string edits."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vault_core import sections
from vault_core.errors import (
    AmbiguousEditError,
    HeadingNotFoundError,
    InvalidArgumentError,
    NotFoundError,
)
from vault_core.sections import Section

NOTE = """# Project Atlas

Intro paragraph.

## Open questions

- Which database?
- Who owns the deploy?

### Details

Notes on the details.


## Decisions

- Use SQLite.
"""

NEW = "- How do we back up?"

HEADING_MODES = [m for m in sections.MODES if m not in sections.NOTE_MODES]
CONTENT_MODES = [m for m in sections.MODES if m != "delete_section"]


def edit(body: str, mode: str, heading: str | None = None, content: str | None = NEW) -> str:
    return sections.section_edit(body, mode, heading=heading, content=content)


# ------------------------------------------------ extents (docs/design.md#section-extent)


def test_headings_lists_every_section_with_its_extent() -> None:
    assert sections.headings(NOTE) == [
        Section(1, "Project Atlas", 0, 17),
        Section(2, "Open questions", 4, 14),
        Section(3, "Details", 9, 14),
        Section(2, "Decisions", 14, 17),
    ]


def test_a_section_includes_its_subsections_and_ends_before_the_next_heading_of_its_level() -> None:
    section = sections.find_section(NOTE, "Open questions")
    lines = NOTE.split("\n")
    assert lines[section.start] == "## Open questions"
    assert "### Details" in lines[section.start : section.end]
    assert lines[section.end] == "## Decisions"


def test_a_subsection_ends_before_a_heading_of_a_higher_level() -> None:
    body = "## A\n### A1\none\n#### A1a\ndeep\n## B\ntwo\n"
    assert sections.find_section(body, "A1") == Section(3, "A1", 1, 5)
    assert sections.find_section(body, "A1a") == Section(4, "A1a", 3, 5)


def test_a_section_at_the_end_of_the_body_runs_to_the_end() -> None:
    section = sections.find_section(NOTE, "Decisions")
    assert (section.start, section.end) == (14, 17)
    assert edit(NOTE, "replace_section", "Decisions", "- Use Postgres.") == (
        NOTE.replace("## Decisions\n\n- Use SQLite.", "## Decisions\n- Use Postgres.")
    )


def test_an_empty_body_has_no_headings() -> None:
    assert sections.headings("") == []


# ------------------------------------------------ the eight modes (docs/design.md#section-modes)

EXPECTED = {
    "append_to_section": """# Project Atlas

Intro paragraph.

## Open questions

- Which database?
- Who owns the deploy?

### Details

Notes on the details.
- How do we back up?

## Decisions

- Use SQLite.
""",
    "prepend_to_section": """# Project Atlas

Intro paragraph.

## Open questions
- How do we back up?

- Which database?
- Who owns the deploy?

### Details

Notes on the details.


## Decisions

- Use SQLite.
""",
    "replace_section": """# Project Atlas

Intro paragraph.

## Open questions
- How do we back up?

## Decisions

- Use SQLite.
""",
    "insert_before_section": """# Project Atlas

Intro paragraph.

- How do we back up?

## Open questions

- Which database?
- Who owns the deploy?

### Details

Notes on the details.


## Decisions

- Use SQLite.
""",
    "insert_after_section": """# Project Atlas

Intro paragraph.

## Open questions

- Which database?
- Who owns the deploy?

### Details

Notes on the details.

- How do we back up?

## Decisions

- Use SQLite.
""",
    "delete_section": """# Project Atlas

Intro paragraph.

## Decisions

- Use SQLite.
""",
    "append_to_note": NOTE + "\n- How do we back up?\n",
    "prepend_to_note": "- How do we back up?\n\n" + NOTE,
}


def test_the_expected_table_covers_all_eight_modes() -> None:
    assert set(EXPECTED) == set(sections.MODES)
    assert len(sections.MODES) == 8


@pytest.mark.parametrize("mode", sections.MODES)
def test_each_mode_produces_exactly_the_expected_text(mode: str) -> None:
    heading = None if mode in sections.NOTE_MODES else "Open questions"
    content = None if mode == "delete_section" else NEW
    assert edit(NOTE, mode, heading, content) == EXPECTED[mode]


def test_append_to_section_inserts_before_the_next_heading() -> None:
    body = "## A\none\n\n\n## B\ntwo\n"
    assert edit(body, "append_to_section", "A", "added") == "## A\none\nadded\n\n## B\ntwo\n"


def test_append_to_section_of_the_last_section_appends_to_the_body() -> None:
    body = "## A\none\n## B\ntwo\n\n\n"
    assert edit(body, "append_to_section", "B", "added") == "## A\none\n## B\ntwo\nadded\n"


def test_insert_after_a_subsection_lands_before_the_parents_next_sibling() -> None:
    body = "## A\n### A1\none\n## B\n"
    assert edit(body, "insert_after_section", "A1", "after") == (
        "## A\n### A1\none\n\nafter\n\n## B\n"
    )


def test_insert_before_the_first_line_puts_the_content_on_top() -> None:
    assert edit("# Title\ntext\n", "insert_before_section", "Title", "above") == (
        "above\n\n# Title\ntext\n"
    )


def test_delete_section_removes_its_subsections_too() -> None:
    body = "# T\n## A\n### A1\none\n## B\ntwo\n"
    assert edit(body, "delete_section", "A", None) == "# T\n## B\ntwo\n"


def test_delete_section_needs_no_content() -> None:
    assert sections.section_edit("# T\n## A\nx\n", "delete_section", heading="A", content=None) == (
        "# T\n"
    )


def test_deleting_the_only_section_leaves_an_empty_body() -> None:
    assert edit("# Only\n", "delete_section", "Only", None) == ""


@pytest.mark.parametrize("mode", sections.NOTE_MODES)
def test_the_note_modes_need_no_heading(mode: str) -> None:
    assert edit("", mode, None, "first") == "first\n"


def test_append_to_note_separates_with_one_blank_line_whatever_the_trailing_newlines() -> None:
    assert edit("text\n\n\n\n", "append_to_note", None, "more") == "text\n\nmore\n"
    assert edit("text", "append_to_note", None, "\n\nmore") == "text\n\nmore\n"


def test_prepend_to_note_separates_with_one_blank_line() -> None:
    assert edit("text\n", "prepend_to_note", None, "first\n\n\n") == "first\n\ntext\n"


def test_crlf_content_given_to_an_edit_is_normalised() -> None:
    body = "## A\none\n## B\n"
    assert edit(body, "append_to_section", "A", "x\r\ny\r\n") == "## A\none\nx\ny\n\n## B\n"
    assert edit(body, "append_to_note", None, "x\r\ny") == "## A\none\n## B\n\nx\ny\n"


# ------------------------------------------------ lookup (docs/design.md#heading-lookup)

LOOKUP = "## Open questions archive\n## Open questions\n## open\n## Open\n"


def test_an_exact_match_beats_an_earlier_prefix_match() -> None:
    assert sections.find_section("## Open questions\nx\n## open\ny\n", "open").start == 2


def test_an_exact_match_beats_an_earlier_case_insensitive_match() -> None:
    assert sections.find_section(LOOKUP, "Open").start == 3
    assert sections.find_section(LOOKUP, "open").start == 2


def test_a_case_insensitive_match_beats_an_earlier_prefix_match() -> None:
    found = sections.find_section(LOOKUP, "OPEN QUESTIONS")
    assert (found.start, found.text) == (1, "Open questions")


def test_a_prefix_finds_a_heading_when_nothing_matches_whole() -> None:
    body = "## Intro\n## Open questions\nx\n## Done\n"
    found = sections.find_section(body, "Open")
    assert (found.text, found.start, found.end) == ("Open questions", 1, 3)
    assert sections.find_section(body, "open q").text == "Open questions"


def test_within_one_pass_the_first_heading_in_the_note_wins() -> None:
    body = "## Notes\na\n## Notes\nb\n"
    assert sections.find_section(body, "Notes").start == 0
    assert sections.find_section(body, "NOTES").start == 0


@pytest.mark.parametrize(
    "given_heading", ["## Open questions", "  ##   Open questions  ", "#Open questions"]
)
def test_a_heading_given_with_leading_hashes_and_spaces_is_the_same_heading(
    given_heading: str,
) -> None:
    assert sections.find_section(NOTE, given_heading) == Section(2, "Open questions", 4, 14)
    assert edit(NOTE, "append_to_section", given_heading) == EXPECTED["append_to_section"]


def test_a_missing_heading_raises_with_a_pointer_to_note_outline() -> None:
    with pytest.raises(HeadingNotFoundError) as caught:
        sections.section_edit(
            NOTE, "append_to_section", heading="## Risks", content="x", path="wiki/atlas.md"
        )
    error = caught.value
    assert error.heading == "Risks"
    assert error.path == "wiki/atlas.md"
    assert error.code == "not_found"
    assert "note_outline" in error.message
    assert '"Risks"' in error.message
    assert "wiki/atlas.md" in error.message


def test_a_heading_of_only_hashes_is_refused_as_empty() -> None:
    with pytest.raises(InvalidArgumentError, match="heading is empty"):
        sections.find_section(NOTE, " ## ")


# ---------------------------------------------------------------- code is not structure

FENCED_BODIES = {
    "backticks": "## A\n```sh\n## Not a heading\n```\ntail\n## B\n",
    "tildes": "## A\n~~~\n## Not a heading\n~~~\ntail\n## B\n",
    "indented in a list item": "## A\n- step\n    ```\n    ## Not a heading\n    ```\ntail\n## B\n",
    "inside a callout": "## A\n> [!example]\n> ```md\n> ## Not a heading\n> ```\ntail\n## B\n",
    "longer fence": "## A\n````\n```\n## Not a heading\n````\ntail\n## B\n",
}


@pytest.mark.parametrize("body", FENCED_BODIES.values(), ids=FENCED_BODIES.keys())
def test_a_heading_inside_fenced_code_is_not_a_heading(body: str) -> None:
    assert [s.text for s in sections.headings(body)] == ["A", "B"]
    section_a = sections.find_section(body, "A")
    assert body.split("\n")[section_a.end] == "## B"
    with pytest.raises(HeadingNotFoundError):
        sections.find_section(body, "Not a heading")


def test_appending_to_a_section_with_code_lands_after_the_code() -> None:
    body = FENCED_BODIES["backticks"]
    assert edit(body, "append_to_section", "A", "added") == (
        "## A\n```sh\n## Not a heading\n```\ntail\nadded\n\n## B\n"
    )


def test_an_unclosed_fence_hides_every_later_heading() -> None:
    body = "## A\n```\n## B\n## C\n"
    assert sections.headings(body) == [Section(2, "A", 0, 4)]


# ---------------------------------------------------------------- argument checks


def test_an_unknown_mode_is_refused_with_the_list_of_modes() -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        edit(NOTE, "append_to_heading", "Open questions")
    assert "unknown mode: 'append_to_heading'" in caught.value.message
    assert "append_to_section" in caught.value.message
    assert "prepend_to_note" in caught.value.message


@pytest.mark.parametrize("heading", [None, "", "   "])
@pytest.mark.parametrize("mode", HEADING_MODES)
def test_a_heading_mode_without_a_heading_is_refused(mode: str, heading: str | None) -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        edit(NOTE, mode, heading, NEW)
    assert not isinstance(caught.value, HeadingNotFoundError)
    assert f"mode {mode} needs a heading" in caught.value.message


@pytest.mark.parametrize("mode", CONTENT_MODES)
def test_a_mode_without_content_is_refused(mode: str) -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        edit(NOTE, mode, "Open questions", None)
    assert caught.value.message == f"mode {mode} needs content"


# ---------------------------------------------------------------- blank lines


def test_runs_of_three_or_more_blank_lines_become_two() -> None:
    assert sections.collapse_blank_lines("a\n\n\n\n\nb\n\n\nc\n\nd\n") == "a\n\n\nb\n\n\nc\n\nd\n"


def test_the_body_ends_with_exactly_one_newline() -> None:
    assert sections.collapse_blank_lines("a\n\n\n\n") == "a\n"
    assert sections.collapse_blank_lines("a") == "a\n"
    assert sections.collapse_blank_lines("\n\n") == ""


def test_blank_lines_inside_fenced_code_are_not_collapsed() -> None:
    body = "a\n```\nx\n\n\n\n\ny\n```\n\n\n\n\nb\n"
    assert sections.collapse_blank_lines(body) == "a\n```\nx\n\n\n\n\ny\n```\n\n\nb\n"


def test_a_section_edit_collapses_the_blank_lines_it_leaves() -> None:
    body = "## A\nold\n## B\n\n\n\n\nkeep\n"
    assert edit(body, "replace_section", "A", "new\n\n\n\n") == "## A\nnew\n\n\n## B\n\n\nkeep\n"


def test_a_section_edit_keeps_blank_lines_inside_code_elsewhere_in_the_note() -> None:
    body = "## A\nx\n## B\n```py\ndef f():\n\n\n\n    pass\n```\n"
    assert edit(body, "append_to_section", "A", "y") == (
        "## A\nx\ny\n\n## B\n```py\ndef f():\n\n\n\n    pass\n```\n"
    )


# ---------------------------------------------------------------- string_edit


def test_string_edit_replaces_a_unique_match() -> None:
    assert sections.string_edit("alpha beta gamma\n", "beta", "BETA") == ("alpha BETA gamma\n", 1)


def test_string_edit_refuses_text_that_is_not_there() -> None:
    with pytest.raises(NotFoundError) as caught:
        sections.string_edit("alpha\n", "omega", "x", path="wiki/a.md")
    assert "old_string not found in wiki/a.md" in caught.value.message
    assert "note_read" in caught.value.message


def test_string_edit_refuses_an_ambiguous_match_without_replace_all() -> None:
    with pytest.raises(AmbiguousEditError) as caught:
        sections.string_edit("todo\ntodo\n", "todo", "done")
    assert caught.value.count == 2
    assert "appears 2 times" in caught.value.message
    assert "replace_all" in caught.value.message


def test_string_edit_with_replace_all_returns_the_count() -> None:
    assert sections.string_edit("a-a-a", "a", "b", replace_all=True) == ("b-b-b", 3)


def test_string_edit_refuses_an_empty_old_string() -> None:
    with pytest.raises(InvalidArgumentError, match="old_string is empty"):
        sections.string_edit("text", "", "x")


def test_string_edit_refuses_identical_old_and_new() -> None:
    with pytest.raises(InvalidArgumentError, match="identical"):
        sections.string_edit("text", "text", "text")


def test_string_edit_normalises_crlf_in_its_arguments() -> None:
    assert sections.string_edit("a\nb\nc\n", "a\r\nb", "x\r\ny") == ("x\ny\nc\n", 1)


# ---------------------------------------------------------------- create: true


def test_scaffold_for_a_heading_mode_adds_the_wanted_heading() -> None:
    assert sections.scaffold("Meeting 2026-01-02", "append_to_section", "## Actions") == (
        "# Meeting 2026-01-02\n\n## Actions\n"
    )


@pytest.mark.parametrize("mode", sections.NOTE_MODES)
def test_scaffold_for_a_note_mode_has_only_the_title(mode: str) -> None:
    assert sections.scaffold("Meeting", mode, "Ignored") == "# Meeting\n"


def test_a_scaffolded_note_takes_the_edit_that_created_it() -> None:
    body = sections.scaffold("Meeting", "append_to_section", "Actions")
    assert edit(body, "append_to_section", "Actions", "- [ ] Send minutes") == (
        "# Meeting\n\n## Actions\n- [ ] Send minutes\n"
    )


# ---------------------------------------------------------------- properties

_TEXT = st.text(alphabet=st.sampled_from("ab #`~>-\n\r\t[]x"), max_size=200)


def _kept(text: str) -> list[str]:
    return [line.rstrip("\r") for line in text.split("\n") if line.strip()]


@given(body=_TEXT, content=_TEXT)
def test_append_to_note_never_loses_a_line_of_the_note(body: str, content: str) -> None:
    result = edit(body, "append_to_note", None, content)
    assert _kept(result) == _kept(body) + _kept(content.replace("\r\n", "\n"))
    assert result == "" or (result.endswith("\n") and not result.endswith("\n\n"))


@given(body=_TEXT, content=_TEXT)
def test_prepend_to_note_never_loses_a_line_of_the_note(body: str, content: str) -> None:
    result = edit(body, "prepend_to_note", None, content)
    assert _kept(result) == _kept(content.replace("\r\n", "\n")) + _kept(body)
    assert result == "" or (result.endswith("\n") and not result.endswith("\n\n"))


def test_old_and_new_that_differ_only_in_line_endings_are_identical() -> None:
    with pytest.raises(InvalidArgumentError, match="identical"):
        sections.string_edit("a\nb\n", "a\r\nb", "a\nb")


def test_collapsing_keeps_crlf_lines_of_a_mixed_ending_note() -> None:
    body = "a\r\n\n\n\n\nb\n"
    assert sections.collapse_blank_lines(body) == "a\r\n\n\nb\n"
