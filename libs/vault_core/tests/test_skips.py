"""The list of skipped files: each logged once when it appears, listed by path, replaced whole."""

from __future__ import annotations

from structlog.testing import capture_logs

from vault_core.skips import LOGGED, Skipped, Skips


def skipped_lines(logs: list[dict[str, object]]) -> list[tuple[object, object]]:
    return [(e["path"], e["reason"]) for e in logs if e["event"] == "file_skipped"]


def test_a_skip_is_logged_once_and_again_only_when_its_reason_changes() -> None:
    skips = Skips("notes")
    with capture_logs() as logs:
        skips.add(Skipped("a.md", "not_utf8", 1, 2))
        skips.add(Skipped("a.md", "not_utf8", 3, 4))
        skips.add(Skipped("a.md", "too_large", 5, 6))
    assert skipped_lines(logs) == [("a.md", "not_utf8"), ("a.md", "too_large")]
    assert all(e["log_level"] == "warning" and e["vault"] == "notes" for e in logs)
    assert skips.get("a.md") == Skipped("a.md", "too_large", 5, 6)


def test_replace_keeps_the_whole_new_list_and_logs_only_what_is_new() -> None:
    skips = Skips("notes")
    skips.replace([Skipped("b.md", "bad_name"), Skipped("gone.md", "unreadable")])
    with capture_logs() as logs:
        skips.replace([Skipped("c.md", "symlink_loop"), Skipped("b.md", "bad_name")])
    assert skipped_lines(logs) == [("c.md", "symlink_loop")]
    assert [item.row() for item in skips.listing()] == [
        {"path": "b.md", "reason": "bad_name"},
        {"path": "c.md", "reason": "symlink_loop"},
    ]
    assert len(skips) == 2
    assert [item.path for item in skips.listing(limit=1)] == ["b.md"]
    skips.discard("b.md")
    assert skips.get("b.md") is None


def test_a_flood_of_skips_is_logged_up_to_a_bound_then_counted() -> None:
    skips = Skips("notes")
    with capture_logs() as logs:
        skips.replace(Skipped(f"{n:04}.md", "bad_name") for n in range(LOGGED + 7))
    assert len(skipped_lines(logs)) == LOGGED
    assert [e["more"] for e in logs if e["event"] == "files_skipped"] == [7]
    assert len(skips) == LOGGED + 7
