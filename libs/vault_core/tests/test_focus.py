"""A note holding the question's words in one passage ranks above one that scatters them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tickets import Reach
from vault_core import scope
from vault_core.index.store import Index
from vault_core.search import focus, hybrid
from vault_core.search import fts as search
from vault_core.search.vectors import VectorStore
from vault_core.testing import embedded, make_vault
from vault_core.words import terms as query

# The changelog says each word more often, each in a bullet of its own about something else.
CHANGELOG = (
    "# v1.4.0\n\nReleased on 2024/05/02.\n\n"
    "- A template picker, template folders remembered per template.\n"
    "- Dragging a page to the sidebar puts it where the page was, page after page.\n"
    "- Reusable settings, reusable themes.\n"
    "- Text rendering is faster in long text.\n"
    "- A fresh install starts faster.\n"
    "- Drop files on the window.\n"
)
TEMPLATES = (
    "# Snippets\n\nA snippet is reusable template text you drop into a fresh page.\n\n"
    "## Settings\n\n"
    + "Choose the folder that holds your snippets, and the format of dates and times. " * 3
    + "\n"
)
NOTES: dict[str, str | bytes] = {
    "Release notes/v1.4.0.md": CHANGELOG,
    "Plugins/Templates.md": TEMPLATES,
    "Plugins/Canvas.md": "# Canvas\n\nAn endless board for cards.\n",
    "Hidden/More.md": "# More\n\nA reusable template, reusable.\n",
    **{f"Other/{i}.md": f"# Other {i}\n\nSomething else entirely, number {i}.\n" for i in range(8)},
}
QUESTION = "reusable template text to drop into a fresh page"


@pytest.fixture
def vault(tmp_path: Path) -> Iterator[tuple[Index, VectorStore]]:
    with embedded(tmp_path, NOTES) as made:
        yield made


def test_the_note_holding_the_words_in_one_passage_ranks_above_a_scattering_changelog(
    vault: tuple[Index, VectorStore],
) -> None:
    index, vectors = vault
    terms = query.terms(QUESTION)
    words, _ = search.ranking(index, QUESTION, search.Filters(), 100, terms)
    by_words = [path for path, _ in words]
    # BM25 alone puts the changelog first: it says every word more often
    assert by_words.index("Release notes/v1.4.0.md") < by_words.index("Plugins/Templates.md")
    scores = dict(words)
    focused = dict(focus.focused(index, words, terms))
    assert focused["Plugins/Templates.md"] == pytest.approx(scores["Plugins/Templates.md"])
    assert focused["Release notes/v1.4.0.md"] < 0.8 * scores["Release notes/v1.4.0.md"]
    ranked = list(focused)
    assert ranked.index("Plugins/Templates.md") < ranked.index("Release notes/v1.4.0.md")
    assert hybrid.find(index, vectors, QUESTION).mode == "hybrid"


def test_a_question_of_one_word_or_none_is_left_as_it_is(
    vault: tuple[Index, VectorStore],
) -> None:
    index, _ = vault
    terms = query.terms("template")
    words, _ = search.ranking(index, "template", search.Filters(), 100, terms)
    assert focus.focused(index, words, terms) == words
    assert focus.focused(index, [], query.terms(QUESTION)) == []


def test_the_weights_count_only_the_notes_the_caller_sees(
    vault: tuple[Index, VectorStore], tmp_path: Path
) -> None:
    index, _ = vault
    terms = query.terms(QUESTION)
    with scope.applied(Reach.of(["Plugins", "Release notes", "Other"])):
        words, _ = search.ranking(index, QUESTION, search.Filters(), 100, terms)
        seen = focus.focused(index, words, terms)
    assert "Hidden/More.md" not in dict(seen)
    visible = {path: text for path, text in NOTES.items() if not path.startswith("Hidden/")}
    make_vault(tmp_path / "alone", visible)
    alone = Index.open(tmp_path / "alone" / "test", "test")
    try:
        alone.reconcile()
        words, _ = search.ranking(alone, QUESTION, search.Filters(), 100, terms)
        apart = focus.focused(alone, words, terms)
        assert [path for path, _ in apart] == [path for path, _ in seen]
        assert [score for _, score in apart] == pytest.approx([score for _, score in seen])
    finally:
        alone.close()


def test_passages_end_at_blank_lines_list_items_and_headings_and_cjk_is_held() -> None:
    forms = ["template", "fresh"]
    assert focus._best("a template\n- and fresh", forms, [1.0, 2.0]) == 2.0
    assert focus._best("a template\n\nfresh", forms, [1.0, 2.0]) == 2.0
    assert focus._best("a template\n## fresh", forms, [1.0, 2.0]) == 2.0
    assert focus._best("a template, fresh", forms, [1.0, 2.0]) == 3.0
    assert focus._best("templates are fresh", forms, [1.0, 2.0]) == 3.0
    assert focus._best("untemplate refresh", forms, [1.0, 2.0]) == 0.0  # not a word's start
    (pair,) = query.terms("同步")
    assert focus._best(query.spaced("用同步保存"), [focus._form(pair)], [1.0]) == 1.0
    assert focus._best("Templates are Fresh", forms, [1.0, 2.0], lower=True) == 3.0
    assert focus.fold("Verknüpfung ÉTÉ") == "verknupfung ete"
    (word,) = query.terms("Verknüpfung")
    assert focus._best("Eine VERKNÜPFUNG", [focus._form(word)], [1.0]) == 1.0
