"""Translations of one note (one `permalink`) as one answer, in the question's language."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tickets import Reach
from vault_core import scope
from vault_core.index.store import Index
from vault_core.search import hybrid
from vault_core.search.fts import Filters
from vault_core.search.vectors import VectorStore
from vault_core.testing import embedded
from vault_core.words import languages

BACKLINKS = {
    "en/Backlinks.md": "---\npermalink: plugins/backlinks\n---\n# Backlinks\n\nWith the backlinks"
    " plugin you can see every note that links to the active note. Open the backlinks pane"
    " from the right sidebar to list the notes that point at the one you are reading.\n",
    "de/Rückverweise.md": "---\npermalink: plugins/backlinks\n---\n# Rückverweise\n\nMit dem"
    " Plugin Rückverweise siehst du alle Notizen, die auf die aktive Notiz verlinken. Öffne den"
    " Bereich in der rechten Seitenleiste, um die Notizen aufzulisten, die auf die Notiz"
    " zeigen, die du gerade liest.\n",
    "fr/Rétroliens.md": "---\npermalink: plugins/backlinks\n---\n# Rétroliens\n\nAvec le module"
    " Rétroliens, vous pouvez voir toutes les notes qui pointent vers la note active. Ouvrez le"
    " panneau dans la barre latérale droite pour lister les notes qui renvoient à celle que"
    " vous lisez.\n",
}
OTHERS = {
    "en/Canvas.md": "---\npermalink: plugins/canvas\n---\n# Canvas\n\nCanvas is a plugin for"
    " visual note-taking: lay out notes, media and web pages on an infinite board.\n",
    "de/Canvas.md": "---\npermalink: plugins/canvas\n---\n# Canvas\n\nCanvas ist ein Plugin für"
    " visuelle Notizen: ordne Notizen, Medien und Webseiten auf einer unendlichen Fläche an.\n",
    "en/Sync.md": "# Sync\n\nSync keeps your notes the same on every device you use, your phone"
    " and your laptop alike, and it keeps the history of every note.\n",
    "en/Links.md": "# Internal links\n\nLink to another note with double brackets. A link to a"
    " note that does not exist yet creates it when you follow it.\n",
}


@pytest.fixture
def vault(tmp_path: Path) -> Iterator[tuple[Index, VectorStore]]:
    with embedded(tmp_path, {**BACKLINKS, **OTHERS}) as made:
        yield made


def paths(found: hybrid.Found) -> list[str]:
    return [hit.path for hit in found.results.hits]


def test_a_question_in_german_gets_the_german_page_and_the_original_beside_it(
    vault: tuple[Index, VectorStore],
) -> None:
    index, vectors = vault
    found = hybrid.find(index, vectors, "Welche Notizen verlinken auf die aktive Notiz?")
    assert found.mode == "hybrid"
    ranked = paths(found)
    assert ranked[:2] == ["de/Rückverweise.md", "en/Backlinks.md"]
    assert "fr/Rétroliens.md" not in ranked  # one more translation is no more answer
    original = found.results.hits[1]
    assert original.matched == ["translation"] or "words" not in original.matched


def test_an_english_question_gets_the_english_page_alone(
    vault: tuple[Index, VectorStore],
) -> None:
    index, vectors = vault
    ranked = paths(hybrid.find(index, vectors, "which notes link to the note I am reading"))
    assert ranked[0] == "en/Backlinks.md"
    assert not {"de/Rückverweise.md", "fr/Rétroliens.md"} & set(ranked)
    assert "de/Canvas.md" not in ranked


def test_a_question_whose_language_is_unclear_gets_each_page_once(
    vault: tuple[Index, VectorStore],
) -> None:
    index, vectors = vault
    ranked = paths(hybrid.find(index, vectors, "Canvas"))
    assert [path for path in ranked if path.endswith("Canvas.md")] in (
        ["en/Canvas.md"],
        ["de/Canvas.md"],
    )


def test_keyword_mode_groups_translations_as_hybrid_does(
    vault: tuple[Index, VectorStore],
) -> None:
    index, vectors = vault
    found = hybrid.find(
        index, vectors, "Welche Notizen verlinken auf die aktive Notiz?", mode="keyword"
    )
    assert found.mode == "keyword"
    ranked = paths(found)
    assert ranked[:2] == ["de/Rückverweise.md", "en/Backlinks.md"]
    assert "fr/Rétroliens.md" not in ranked
    assert found.results.hits[0].matched == ["words"]
    assert found.results.hits[1].matched == ["translation"]
    ranked = paths(hybrid.find(index, vectors, "Canvas", mode="keyword"))
    assert [path for path in ranked if path.endswith("Canvas.md")] in (
        ["en/Canvas.md"],
        ["de/Canvas.md"],
    )
    # with the embedding off, keyword search is all there is: it groups them too
    ranked = paths(hybrid.find(index, None, "Welche Notizen verlinken auf die aktive Notiz?"))
    assert ranked[:2] == ["de/Rückverweise.md", "en/Backlinks.md"]
    with scope.applied(Reach.of(["de"])):
        ranked = paths(hybrid.find(index, vectors, "Notizen verlinken", mode="keyword"))
    assert ranked[0] == "de/Rückverweise.md"
    assert all(path.startswith("de/") for path in ranked)


def test_a_translation_outside_the_callers_rules_or_the_filters_is_never_pulled_in(
    vault: tuple[Index, VectorStore],
) -> None:
    index, vectors = vault
    question = "Welche Notizen verlinken auf die aktive Notiz?"
    with scope.applied(Reach.of(["de"])):
        ranked = paths(hybrid.find(index, vectors, question))
    assert ranked[0] == "de/Rückverweise.md"
    assert all(path.startswith("de/") for path in ranked)
    ranked = paths(hybrid.find(index, vectors, question, Filters(prefix="de/")))
    assert ranked[0] == "de/Rückverweise.md"
    assert all(path.startswith("de/") for path in ranked)


def test_the_index_keeps_each_notes_language_and_key_and_drops_them_with_it(
    vault: tuple[Index, VectorStore],
) -> None:
    index, _ = vault
    with index.reading() as conn:
        rows = {path: (lang, key) for path, lang, key in conn.execute("SELECT * FROM translations")}
    assert rows["de/Rückverweise.md"] == ("de", "plugins/backlinks")
    assert rows["fr/Rétroliens.md"] == ("fr", "plugins/backlinks")
    assert rows["en/Sync.md"] == ("en", "")
    (index.root / "fr" / "Rétroliens.md").unlink()
    index.update_path("fr/Rétroliens.md")
    with index.reading() as conn:
        gone = conn.execute(
            "SELECT count(*) FROM translations WHERE path = 'fr/Rétroliens.md'"
        ).fetchone()
    assert gone == (0,)


def test_a_note_without_translations_gets_its_language_from_its_function_words() -> None:
    assert languages.rough("Sync keeps your notes the same on every device you use.") == "en"
    assert languages.rough("Wie füge ich einer Notiz Eigenschaften hinzu? Mit dem Menü.") == "de"
    assert languages.rough("同步让你的笔记在每台设备上保持一致。") == ""
    assert languages.of_note("同步", "同步让你的笔记在每台设备上保持一致。") == "zh"


def test_a_question_names_its_language_only_when_the_guess_is_clear() -> None:
    present = {
        "en",
        "ar",
        "bn",
        "ca",
        "cs",
        "da",
        "de",
        "el",
        "es",
        "fa",
        "fi",
        "fr",
        "he",
        "hu",
        "id",
        "it",
        "ja",
        "km",
        "ko",
        "nl",
        "no",
        "pl",
        "pt",
        "ro",
        "ru",
        "sk",
        "sv",
        "th",
        "tr",
        "uk",
        "vi",
        "zh",
    }  # the Obsidian Help vault's
    assert languages.of_question("如何恢复笔记被修改之前的旧版本？", present) == "zh"
    assert languages.of_question("Wie füge ich einer Notiz Eigenschaften hinzu?", present) == "de"
    assert languages.of_question("how do I record a lecture into a note", present) == "en"
    assert languages.of_question("canvas file format json", present) is None  # 0.18 English
    assert languages.of_question("canvas file format json", {"en", "de"}) == "en"
    assert languages.of_question("   ", present) is None


CHINESE = {
    "zh-TW/反向連結.md": "---\npermalink: plugins/backlinks\n---\n# 反向連結\n\n"
    "使用反向連結外掛程式,你可以看到所有連結到目前筆記的筆記。"
    "從右側邊欄打開反向連結窗格,列出指向你正在閱讀的筆記的所有筆記。\n",
    "zh/反向链接.md": "---\npermalink: plugins/backlinks\n---\n# 反向链接\n\n"
    "使用反向链接插件,你可以看到所有链接到当前笔记的笔记。"
    "从右侧边栏打开反向链接面板,列出指向你正在阅读的笔记的所有笔记。\n",
}


@pytest.mark.parametrize(
    ("question", "first"),
    [("哪些笔记链接到当前笔记", "zh/反向链接.md"), ("哪些筆記連結到目前筆記", "zh-TW/反向連結.md")],
)
def test_of_two_variants_of_one_language_the_one_the_question_is_written_in_leads(
    tmp_path: Path, question: str, first: str
) -> None:
    """Simplified and Traditional Chinese are one language to the guesser: the variant the
    question's own words found comes first, then the original, then the other variant."""
    with embedded(tmp_path, {**BACKLINKS, **OTHERS, **CHINESE}) as (index, vectors):
        ranked = paths(hybrid.find(index, vectors, question))
    (other,) = set(CHINESE) - {first}
    assert ranked[:3] == [first, "en/Backlinks.md", other]
