"""BM25 under path rules: the scores of the visible notes are those a vault of just them
gives, so no score moves with a note the caller cannot see."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from tickets import Reach
from vault_core import scope
from vault_core.index.store import Index
from vault_core.search import bm25
from vault_core.search import fts as search
from vault_core.search.bm25 import Phrase
from vault_core.words import terms as query

WORDS = [
    *("launch", "plan", "product", "intervals", "interval", "connection", "connections"),
    *("note", "notes", "linking", "café", "cafe", "别名", "中文", "测试"),
]
RULES = Reach.of(["pub"], None, ["pub/hr"])
QUESTIONS = [
    "launch",
    "intervals plan",
    '"launch plan"',
    "connect*",
    "中文测试",
    "notes linking product",
    "Café",
    "how do I plan a launch?",
]


def vault_files(seed: int = 1, count: int = 70) -> dict[str, str]:
    rng = random.Random(seed)
    files = {}
    for i in range(count):
        folder = rng.choice(["pub", "pub/sub", "pub/hr", "hr", "other"])
        body = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 40)))
        title = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 3)))
        files[f"{folder}/n{i}.md"] = f"---\ntitle: {title}\n---\n# {title}\n\n{body}\n"
    return files


def build(root: Path, files: dict[str, str]) -> Index:
    for rel, text in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        os.utime(target, (1_700_000_000, 1_700_000_000))
    index = Index.open(root, "v")
    index.reconcile()
    return index


def scored(
    index: Index, question: str, syntax: search.Syntax = "natural"
) -> list[tuple[str, float]]:
    found = search.search(index, question, limit=1000, syntax=syntax)
    assert found.total == len(found.hits)
    return sorted(((hit.path, round(hit.score, 9)) for hit in found.hits), key=lambda h: h[0])


@pytest.fixture
def whole_and_part(tmp_path: Path) -> tuple[Index, Index]:
    files = vault_files()
    visible = {rel: text for rel, text in files.items() if RULES.reads(rel)}
    return build(tmp_path / "whole", files), build(tmp_path / "part", visible)


@pytest.mark.parametrize("question", QUESTIONS)
def test_under_rules_every_score_is_the_one_a_vault_of_the_visible_notes_gives(
    whole_and_part: tuple[Index, Index], question: str
) -> None:
    whole, part = whole_and_part
    with scope.applied(RULES):
        under_rules = scored(whole, question)
    assert under_rules
    assert under_rules == scored(part, question)
    assert under_rules != scored(whole, question)  # FTS5's own scores count the hidden notes


@pytest.mark.parametrize("expression", ['launch AND "plan"', "connect* OR 中文", "launch NOT plan"])
def test_in_fts_syntax_too(whole_and_part: tuple[Index, Index], expression: str) -> None:
    whole, part = whole_and_part
    with scope.applied(RULES):
        under_rules = scored(whole, expression, "fts")
    assert under_rules
    assert under_rules == scored(part, expression, "fts")


def test_hidden_notes_that_say_the_words_move_no_score(tmp_path: Path) -> None:
    files = vault_files(seed=2)
    index = build(tmp_path / "v", files)
    expressions = ["title:launch OR plan", "NEAR(launch plan, 2)"]  # ranked per phrase
    with scope.applied(RULES):
        before = {q: scored(index, q) for q in QUESTIONS}
        fts_before = {e: scored(index, e, "fts") for e in expressions}
        ranked_before = search.ranking(index, "launch plan", search.Filters())
    for i in range(40):
        (tmp_path / "v" / "hr" / f"loud{i}.md").write_text("# Launch\n\nlaunch plan 中文 " * 5)
    (tmp_path / "v" / "pub" / "hr" / "loud.md").write_text("launch launch launch notes\n")
    index.reconcile()
    with scope.applied(RULES):
        assert {q: scored(index, q) for q in QUESTIONS} == before
        assert {e: scored(index, e, "fts") for e in expressions} == fts_before
        assert search.ranking(index, "launch plan", search.Filters()) == ranked_before
    assert scored(index, "launch") != before["launch"]  # without rules the new notes count


def test_a_visible_change_is_counted_at_once(tmp_path: Path) -> None:
    """The visible rows' sizes are kept per connection until the index changes."""
    files = vault_files(seed=3)
    index = build(tmp_path / "v", files)
    with scope.applied(RULES):
        scored(index, "launch")
        (tmp_path / "v" / "pub" / "new.md").write_text("# New\n\n" + "launch word " * 200)
        index.reconcile()
        after = scored(index, "launch")
    visible = {rel: text for rel, text in files.items() if RULES.reads(rel)}
    visible["pub/new.md"] = (tmp_path / "v" / "pub" / "new.md").read_text()
    assert after == scored(build(tmp_path / "part", visible), "launch")


def test_filters_narrow_what_is_ranked_not_the_statistics(tmp_path: Path) -> None:
    files = vault_files(seed=4)
    index = build(tmp_path / "v", files)
    narrowed = search.Filters(prefix="pub/sub")
    with scope.applied(RULES):
        everything = dict(scored(index, "launch"))
        found = search.search(index, "launch", narrowed, limit=1000)
    assert found.hits
    assert all(hit.path.startswith("pub/sub/") for hit in found.hits)
    assert {hit.path: round(hit.score, 9) for hit in found.hits}.items() <= everything.items()


def test_phrases_are_read_from_an_expression_as_fts5_reads_them() -> None:
    assert bm25.phrases(query.any_of(query.terms("intervals CAFÉ"))) == [
        Phrase(("intervals",)),
        Phrase(("interval",)),
        Phrase(("interval",), prefix=True),
        Phrase(("cafe",)),
        Phrase(("cafe",), prefix=True),
    ]
    assert bm25.phrases('title:launch AND NOT "the ""plan""" OR NEAR(a b, 10) ^x*') == [
        Phrase(("launch",)),
        Phrase(("the", "plan")),
        Phrase(("a",)),
        Phrase(("b",)),
        Phrase(("x",), prefix=True),
    ]
    assert bm25.phrases('"中文"') == [Phrase(("中", "文"))]
    assert bm25.phrases("AND OR ( ) *") == []


def test_a_docsize_record_is_summed_over_its_varints() -> None:
    assert bm25._tokens(bytes([0x00, 0x05, 0x81, 0x00])) == 5 + 128
    assert bm25._tokens(b"") == 0


def test_a_prefix_ending_in_the_last_character_before_the_surrogates_is_searched(
    tmp_path: Path,
) -> None:
    index = build(tmp_path / "v", {"pub/a.md": "# A\n\n\ud7fbx and plan\n"})
    with scope.applied(RULES):
        for question in ("\ud7ff*", "\U0010ffff*", "plan*"):
            search.search(index, question, syntax="fts")
        assert [h.path for h in search.search(index, "plan*", syntax="fts").hits] == ["pub/a.md"]
    assert bm25._term_clause("a\ud7ff", True)[1] == ["a\ud7ff", "a\ue000"]
