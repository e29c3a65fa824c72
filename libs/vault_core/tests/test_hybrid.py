"""Search by words and meaning at once: modes, fusion, filters, and what each hit says."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tickets import Reach
from vault_core import deadline, scope
from vault_core.errors import InvalidArgumentError
from vault_core.index.store import Index
from vault_core.search import embedding, hybrid
from vault_core.search import fts as search
from vault_core.search.fts import Filters
from vault_core.search.vectors import VectorStore
from vault_core.testing import embedded, make_vault

NOTES: dict[str, str | bytes] = {
    "links/backlinks.md": "---\ntags: [links]\n---\n# Backlinks\n\nThe backlinks pane lists every"
    " note that links to the note you are reading.\n",
    "canvas/export.md": "# Export a canvas\n\nSave a canvas as a PNG image or as SVG.\n",
    "sync/conflicts.md": "# Sync conflicts\n\nWhen two devices edit one file, sync keeps both.\n",
    "misc/zettel.md": "# Method\n\nThe zettelkasten method in short.\n",
}


@pytest.fixture
def vault(tmp_path: Path) -> Iterator[tuple[Index, VectorStore]]:
    with embedded(tmp_path, NOTES) as made:
        yield made


def paths(found: hybrid.Found) -> list[str]:
    return [hit.path for hit in found.results.hits]


def test_hybrid_is_the_default_once_vectors_are_made_and_finds_a_paraphrase(
    vault: tuple[Index, VectorStore],
) -> None:
    index, vectors = vault
    found = hybrid.find(index, vectors, "which pages point at the one I have open?")
    assert found.mode == "hybrid"
    assert paths(found)[0] == "links/backlinks.md"
    top = found.results.hits[0]
    assert "meaning" in top.matched
    assert top.section == "Backlinks"
    assert found.embedding is None


def test_an_exact_rare_word_stays_on_top(vault: tuple[Index, VectorStore]) -> None:
    index, vectors = vault
    found = hybrid.find(index, vectors, "zettelkasten")
    assert paths(found)[0] == "misc/zettel.md"
    assert found.results.hits[0].matched == ["words", "meaning"]
    assert "<<zettelkasten>>" in found.results.hits[0].snippet


def test_filters_hold_for_the_meaning_side_too(vault: tuple[Index, VectorStore]) -> None:
    index, vectors = vault
    found = hybrid.find(index, vectors, "notes that link here", Filters(prefix="canvas"))
    assert set(paths(found)) <= {"canvas/export.md"}
    tagged = hybrid.find(index, vectors, "export a picture", Filters(tags=["links"]))
    assert set(paths(tagged)) <= {"links/backlinks.md"}


def test_keyword_and_semantic_modes_and_fts_syntax(vault: tuple[Index, VectorStore]) -> None:
    index, vectors = vault
    words = hybrid.find(index, vectors, "canvas", mode="keyword")
    assert words.mode == "keyword"
    assert all(hit.matched == ["words"] for hit in words.results.hits)
    meaning = hybrid.find(index, vectors, "turn a board into a picture", mode="semantic")
    assert meaning.mode == "semantic"
    assert paths(meaning)[0] == "canvas/export.md"
    assert all(hit.matched == ["meaning"] for hit in meaning.results.hits)
    fts = hybrid.find(index, vectors, "canvas OR sync", syntax="fts")
    assert fts.mode == "keyword"
    assert set(paths(fts)) == {"canvas/export.md", "sync/conflicts.md"}


def test_until_every_note_has_vectors_search_is_by_words_and_says_how_far_it_is(
    tmp_path: Path,
) -> None:
    make_vault(tmp_path, NOTES)
    index = Index.open(tmp_path / "test", "test")
    index.reconcile()
    model = embedding.shared(embedding.BUNDLED)
    assert model is not None
    vectors = VectorStore(index, model)  # not started: nothing embedded yet
    try:
        found = hybrid.find(index, vectors, "canvas")
        assert found.mode == "keyword"
        assert found.embedding == {"model": model.name, "embedded": 0, "total": 4, "done": False}
    finally:
        index.close()


def test_semantic_mode_without_vectors_is_a_clear_error(tmp_path: Path) -> None:
    make_vault(tmp_path, NOTES)
    index = Index.open(tmp_path / "test", "test")
    index.reconcile()
    try:
        with pytest.raises(InvalidArgumentError, match="embedding: off"):
            hybrid.find(index, None, "canvas", mode="semantic")
        assert hybrid.find(index, None, "canvas").mode == "keyword"
    finally:
        index.close()


def test_score_fusion_keeps_a_one_sided_hit_and_lifts_a_two_sided_one() -> None:
    fused = dict(hybrid.fuse([("a", 10.0), ("b", 5.0)], [("b", 0.9), ("c", 0.8)]))
    assert fused["b"] == pytest.approx(0.5 + 0.3 * 1.0) or fused["b"] == pytest.approx(
        1.0 + 0.3 * 0.5
    )
    assert fused["a"] == pytest.approx(1.0)
    assert set(fused) == {"a", "b", "c"}


def test_a_word_one_note_holds_does_not_bring_unrelated_notes_by_meaning(
    vault: tuple[Index, VectorStore],
) -> None:
    index, vectors = vault
    found = hybrid.find(index, vectors, "zettelkasten")
    assert paths(found) == ["misc/zettel.md"]


def test_a_question_in_german_finds_the_german_note_of_a_pair(tmp_path: Path) -> None:
    make_vault(tmp_path, {
        "en/backlinks.md": "# Backlinks\n\nThe backlinks pane shows which notes link to the"
        " note you are reading.\n",
        "de/rueckverweise.md": "# Rückverweise\n\nDer Bereich Rückverweise zeigt, welche Notizen"
        " auf die Notiz verlinken, die du gerade liest.\n",
        "en/canvas.md": "# Canvas\n\nArrange notes on an infinite board.\n",
    })  # fmt: skip
    index = Index.open(tmp_path / "test", "test")
    index.reconcile()
    model = embedding.shared(embedding.BUNDLED)
    assert model is not None
    vectors = VectorStore(index, model).start()
    try:
        end = time.monotonic() + 60
        while not vectors.ready() and time.monotonic() < end:
            time.sleep(0.02)
        found = hybrid.find(
            index, vectors, "Wie sehe ich, welche Notizen auf meine Notiz verweisen?"
        )
        assert found.mode == "hybrid"
        assert paths(found)[0] == "de/rueckverweise.md"
    finally:
        vectors.stop()
        index.close()


def test_a_note_found_by_meaning_alone_shows_its_sections_opening_words(
    vault: tuple[Index, VectorStore],
) -> None:
    index, vectors = vault
    found = hybrid.find(index, vectors, "turn a board into a picture", mode="semantic")
    top = found.results.hits[0]
    assert (top.path, top.section) == ("canvas/export.md", "Export a canvas")
    assert top.snippet == "… Save a canvas as a PNG image or as SVG."
    by_words = hybrid.find(index, vectors, "zettelkasten").results.hits[0]
    assert by_words.matched == ["words", "meaning"]
    assert "<<zettelkasten>>" in by_words.snippet  # found by its words: FTS5's highlight


def test_a_note_deleted_before_its_vectors_are_dropped_is_left_out_and_the_page_stays_full(
    tmp_path: Path, vault: tuple[Index, VectorStore]
) -> None:
    """The vector side is not checked against the index when no filter narrows it: a note
    deleted since it was embedded is found missing on the page, which is then made again."""
    index, vectors = vault
    vectors.stop()  # the worker would drop the note's vectors: here it cannot
    (tmp_path / "test" / "canvas/export.md").unlink()
    index.update_paths(["canvas/export.md"])
    assert "canvas/export.md" in {m.path for m in vectors.nearest("picture", 4)}
    for mode in ("hybrid", "semantic"):
        found = hybrid.find(index, vectors, "export a canvas picture", limit=2, mode=mode)
        assert "canvas/export.md" not in paths(found)
        assert len(found.results.hits) == 2, mode


def test_the_keyword_side_ranks_alike_with_and_without_a_filter_to_join(tmp_path: Path) -> None:
    """Without filters the ranking reads FTS5's matches alone and the best ones' paths; with
    a filter that lets everything through it joins every match to its note: the same."""
    make_vault(tmp_path, {
        f"n/{i}.md": f"# Note {i}\n\n" + "canvas " * (i % 5 + 1) + "export " * (i % 3) + "\n"
        for i in range(40)
    })  # fmt: skip
    index = Index.open(tmp_path / "test", "test")
    index.reconcile()
    try:
        plain = search.ranking(index, "canvas export", Filters(), 25)
        joined = search.ranking(index, "canvas export", Filters(glob="*"), 25)
        assert plain == joined
        assert plain[1] == 40
        assert len(plain[0]) == 25
    finally:
        index.close()


def test_the_words_side_ranks_the_notes_holding_every_word_alone_when_there_are_ten(
    tmp_path: Path,
) -> None:
    """Ten notes hold both words: hybrid's words side ranks those alone, so a note holding
    one of them (in its title) is found by words only in keyword mode; with nine, it is."""
    both = {
        f"both/{i}.md": f"# Note {i}\n\nThe gazpacho recipe, with a tomato.\n" for i in range(10)
    }
    one = {"one/gazpacho.md": "# Gazpacho\n\nGazpacho is served cold.\n"}
    make_vault(tmp_path, {**both, **one})
    index = Index.open(tmp_path / "test", "test")
    index.reconcile()
    try:
        words, total = search.ranking(index, "gazpacho tomato", Filters(), 100, every_first=10)
        assert total == 10
        assert {path for path, _ in words} == set(both)
        keyword = search.ranking(index, "gazpacho tomato", Filters(), 100)
        assert keyword[1] == 11
        (tmp_path / "test" / "both/0.md").unlink()
        index.update_paths(["both/0.md"])
        fewer, total = search.ranking(index, "gazpacho tomato", Filters(), 100, every_first=10)
        assert total == 10  # nine hold both, so any word counts again
        assert "one/gazpacho.md" in {path for path, _ in fewer}
    finally:
        index.close()


def test_the_vector_side_runs_beside_the_words_under_the_callers_path_rules(
    vault: tuple[Index, VectorStore],
) -> None:
    """The helper thread that searches the vectors sees the caller's rules: a paraphrase of
    a note outside them finds nothing there, by meaning or by words."""
    index, vectors = vault
    question = "which pages point at the one I have open?"
    with scope.applied(Reach.of(["canvas", "sync"])):
        found = hybrid.find(index, vectors, question)
    assert found.mode == "hybrid"
    assert found.results.hits
    assert {hit.path for hit in found.results.hits} <= {"canvas/export.md", "sync/conflicts.md"}
    assert paths(hybrid.find(index, vectors, question))[0] == "links/backlinks.md"


def test_with_every_helper_busy_a_search_searches_its_vectors_itself(
    vault: tuple[Index, VectorStore],
) -> None:
    index, vectors = vault
    question = "which pages point at the one I have open?"
    alone = hybrid.find(index, vectors, question)
    taken = 0
    try:
        while hybrid._helpers.acquire(blocking=False):  # hold every helper
            taken += 1
        assert taken == hybrid.HELPERS
        busy = hybrid.find(index, vectors, question)
    finally:
        for _ in range(taken):
            hybrid._helpers.release()
    assert busy.results.hits == alone.results.hits


def test_the_helper_thread_works_under_the_callers_rules_and_deadline() -> None:
    rules = Reach.of(["canvas"])
    limit = deadline.Limit(30)
    with scope.applied(rules), limit.active():
        seen = hybrid._beside(lambda: (scope.current(), deadline.current()))
    assert seen() == (rules, limit)
    failing = hybrid._beside(lambda: 1 // 0)
    with pytest.raises(ZeroDivisionError):
        failing()
