"""Search snippets from a bounded window: FTS5's highlighting, work bounded per hit."""

from __future__ import annotations

import sqlite3

import pytest

from vault_core.index.schema import SCHEMA
from vault_core.words import snippet
from vault_core.words.snippet import WINDOW, Term


def fts5_snippet(query: str, body: str) -> str:
    """What FTS5's snippet() makes of the whole body, for comparison."""
    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(body, tokenize = '{snippet.TOKENIZER}')")
    conn.execute("INSERT INTO t (body) VALUES (?)", (body,))
    (found,) = conn.execute(
        "SELECT snippet(t, 0, '<<', '>>', ' … ', 24) FROM t WHERE t MATCH ?", (query,)
    ).fetchone()
    conn.close()
    return str(found)


def test_the_tokenizer_is_the_index_s() -> None:
    assert f'tokenize = "{snippet.TOKENIZER}"' in SCHEMA


def test_a_planted_note_gives_a_window_of_at_most_window_characters() -> None:
    body = "# Big\n\n" + "word " * 800_000
    found = snippet.window(body, snippet.terms('"word"'))
    assert len(found.text) <= WINDOW
    assert found.start == 0
    assert found.text == body[found.start : found.end]
    [text] = snippet.snippets('"word"', [body])
    assert text.startswith("# Big\n\n<<word>> <<word>>")
    assert text.endswith(" … ")
    assert text.count("<<word>>") <= snippet.TOKENS


def test_a_late_match_is_found_and_the_cut_is_marked() -> None:
    body = "filler text here. " * 5000 + "The needle is here. " + "tail words " * 500
    found = snippet.window(body, snippet.terms('"needle"'))
    assert found.start > 0
    assert found.end < len(body)
    assert len(found.text) <= WINDOW
    assert "needle" in found.text
    [text] = snippet.snippets('"needle"', [body])
    assert "The <<needle>> is here." in text
    assert text.startswith(" … ")
    assert text.endswith(" … ")


@pytest.mark.parametrize(
    ("query", "body"),
    [
        ('"needle"', "Before the Needle after.\n"),
        ('"rate limit"', "A rate limit and rate limiting, " * 20 + "more text"),
        ("lim*", "limits and limiters and the limit of it all " * 10),
        ('"cafe"', "On boit un café crème au Café de Flore, " * 12),
        ('NEAR("rate" "bucket", 3)', "rate of the bucket; " * 30),
        ('"title" OR "body"', "the body of a note with more words than a snippet holds " * 4),
    ],
)
def test_a_short_body_gets_exactly_fts5_s_snippet(query: str, body: str) -> None:
    assert len(body) <= WINDOW
    assert snippet.snippets(query, [body]) == [fts5_snippet(query, body)]


def test_accented_text_is_found_by_a_plain_query_beyond_the_window() -> None:
    body = "nothing here " * 400 + "un café au lait"
    [text] = snippet.snippets('"cafe"', [body])
    assert "un <<café>> au lait" in text


def test_words_of_an_and_far_apart_are_each_highlighted_where_they_are() -> None:
    body = "alpha first. " + "filler " * 2000 + "omega last."
    [text] = snippet.snippets('"alpha" AND "omega"', [body])
    assert "<<alpha>> first." in text


def test_the_window_prefers_a_match_with_every_term_nearby() -> None:
    body = "rate alone. " + "filler " * 400 + "the rate limit holds. " + "filler " * 400
    [text] = snippet.snippets('"rate" AND "limit"', [body])
    assert "the <<rate>> <<limit>> holds." in text


def test_a_body_without_any_term_shows_its_start() -> None:
    body = "# Title only matched\n\n" + "words " * 1000
    [text] = snippet.snippets('"absent"', [body])
    assert text == fts5_snippet('"words"', body).replace("<<", "").replace(">>", "")


def test_query_terms_leave_operators_and_columns_out() -> None:
    assert snippet.terms('"Rate" AND "limits"') == [Term("rate"), Term("limits")]
    assert snippet.terms("title:Café OR lim* NOT x") == [Term("cafe"), Term("lim", True), Term("x")]
    assert snippet.terms('"e-mail" "C++"') == [Term("e"), Term("mail"), Term("c")]
    assert snippet.terms('"rate limit" *') == [Term("rate"), Term("limit", True)]


def test_a_query_naming_a_column_the_window_lacks_still_gives_a_snippet() -> None:
    # The window table has the index's columns, and the words are highlighted where found.
    assert snippet.snippets('title: "rate"', ["rate here\n"]) == ["<<rate>> here\n"]
    assert snippet.snippets('{title path}: "x"', ["no x here\n"]) == ["no <<x>> here\n"]


def test_words_fold_as_the_tokenizer_folds_them() -> None:
    assert snippet.fold("Crème Brûlée") == "creme brulee"
    assert snippet.fold("Straße") == "straße"  # unicode61 keeps ß
    body = "filler " * 300 + "Die Straße ist lang."
    [text] = snippet.snippets('"straße"', [body])
    assert "Die <<Straße>> ist lang." in text


LEAD_BODY = (
    "# Sync\n\nIntro words here.\n\n## Conflicts\n\nWhen two devices edit one file, sync keeps"
    " both copies so that nothing is lost and you can merge them later by hand, comparing"
    " line by line what each device wrote.\n\n## Empty\n## Last\n\nThe end.\n"
)


@pytest.mark.parametrize(
    ("heading", "expected"),
    [
        (
            "Conflicts",
            "… When two devices edit one file, sync keeps both copies so that nothing is lost"
            " and you can merge them later by hand, comparing … ",
        ),
        ("", "# Sync Intro words here."),  # the text before the first heading, to the next
        ("Last", "… The end."),  # the whole section: no ellipsis at its end
        ("Empty", "Empty"),  # nothing under the heading: the heading itself
        ("Not there", "# Sync Intro words here."),  # a heading renamed since: the body's start
    ],
)
def test_a_note_found_by_meaning_shows_the_opening_words_of_its_section(
    heading: str, expected: str
) -> None:
    assert snippet.lead(LEAD_BODY, heading) == expected


def test_the_opening_words_of_a_section_are_bounded_however_long_its_words() -> None:
    long_words = "# Big\n\n" + " ".join("x" * 100 for _ in range(50))
    shown = snippet.lead(long_words, "Big")
    assert shown.startswith("… x")
    assert shown.endswith(" … ")
    assert len(shown) <= snippet.LEAD + 2 * len(snippet.ELLIPSIS)
    headings = "# A.B (c)?\n\nRegex characters in a heading are text.\n"
    assert snippet.lead(headings, "A.B (c)?") == "… Regex characters in a heading are text."
