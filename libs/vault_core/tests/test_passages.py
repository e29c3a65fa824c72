"""The best passages for a question under a token budget: whole sections while they fit,
the last one cut at a sentence end, or said to be cut mid-sentence."""

from __future__ import annotations

from vault_core.search import fts as search
from vault_core.search import passages

SYNC = (
    "Sync keeps your notes the same on every device.\n\n"
    "## Conflicts\n\n"
    "When two devices change one note before they sync, Sync keeps both changes and merges"
    " them line by line. A conflict it cannot merge leaves a conflict copy beside the note."
    " Open both and keep what you want.\n\n"
    "## Plans\n\nThe plans differ in storage and in the size of one file.\n"
)
BACKUP = (
    "# Back up\n\nSync is not a backup. Copy the vault folder to another disk every week,"
    " and keep the copies for a month or more before you delete the oldest of them.\n"
)


def hit(path: str, title: str, matched: list[str], section: str = "") -> search.Hit:
    return search.Hit(path, title, 1.0, "", [], "", 0, matched, "note", section)


LONG = (
    "Copy the vault folder to another disk every week and keep the copies for a month or"
    " more before you delete the oldest of them or move them somewhere else for good.\n"
)


def bodies(path: str) -> str | None:
    return {"sync.md": SYNC, "backup.md": BACKUP, "long.md": LONG}.get(path)


def test_each_hit_gives_its_best_section_and_says_why() -> None:
    found = passages.best(
        [hit("sync.md", "Sync", ["words"]), hit("backup.md", "Back up", ["meaning"], "Back up")],
        "what happens on a sync conflict",
        1000,
        bodies,
    )
    assert [p.path for p in found] == ["sync.md", "backup.md"]
    first, second = found
    assert first.section == "Conflicts"
    assert first.text.startswith("## Conflicts\n\nWhen two devices")
    assert "## Plans" not in first.text
    assert first.why == 'section "Conflicts" holds sync, conflict'
    assert first.cut == ""
    assert second.section == "Back up"
    assert second.why == 'closest in meaning: section "Back up"'
    assert sum(p.tokens for p in found) <= 1000


def test_the_passage_that_does_not_fit_ends_at_a_sentence_and_nothing_follows_it() -> None:
    whole = passages.best([hit("sync.md", "Sync", ["words"])], "sync conflict", 1000, bodies)[0]
    budget = whole.tokens - 5
    found = passages.best(
        [hit("sync.md", "Sync", ["words"]), hit("backup.md", "Back up", ["words"])],
        "sync conflict",
        budget,
        bodies,
    )
    assert [p.path for p in found] == ["sync.md"]
    assert found[0].cut == "sentence"
    assert found[0].text.endswith("beside the note.")
    assert found[0].tokens <= budget


def test_a_budget_too_small_for_a_whole_sentence_cuts_at_a_word_and_says_so() -> None:
    found = passages.best([hit("long.md", "Long", ["words"])], "copies", 30, bodies)
    assert len(found) == 1
    assert found[0].cut == "mid-sentence"
    assert found[0].text.endswith("…")
    assert not found[0].text.endswith(" …")
    assert found[0].tokens <= 30
    assert passages.best([hit("backup.md", "Back up", ["words"])], "backup", 10, bodies) == []


def test_a_note_gone_since_it_was_found_is_passed_over() -> None:
    found = passages.best(
        [hit("gone.md", "Gone", ["words"]), hit("backup.md", "Back up", ["words"])],
        "backup",
        1000,
        bodies,
    )
    assert [p.path for p in found] == ["backup.md"]


def test_tokens_are_utf8_bytes_over_four() -> None:
    assert passages.tokens("abcd") == 1
    assert passages.tokens("abcde") == 2
    assert passages.tokens("同步冲突") == 3
