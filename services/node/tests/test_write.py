"""The tools that create and change single notes (docs/design.md#tools, task_toggle,
attachment_put, vault_create): the common write response, conflicts, dry runs, errors."""

from __future__ import annotations

import asyncio
import base64
import subprocess
from pathlib import Path

import pytest

from vault_node.testing import Harness, NodeFactory

pytestmark = pytest.mark.asyncio


def text_of(node: Harness, rel: str) -> str:
    return (node.data / "default" / rel).read_text()


def last_commit(node: Harness, vault: str = "default") -> str:
    return subprocess.run(
        ["git", "-C", str(node.data / vault), "log", "-1", "--format=%s"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


async def test_note_create_writes_frontmatter_and_reminds_to_link(node: Harness) -> None:
    made = await node.ok(
        "note_create", {"path": "wiki/Token Buckets", "content": "Refill.\n", "tags": "api, #Ops"}
    )
    assert made["path"] == "wiki/Token Buckets.md"
    assert made["created"] is True
    assert made["diff"].startswith("--- /dev/null\n+++ b/wiki/Token Buckets.md\n")
    assert "[[wiki/Token Buckets]]" in made["hint"]
    written = text_of(node, "wiki/Token Buckets.md")
    assert written.startswith("---\ntitle: Token Buckets\ntags:\n  - api\n  - ops\ncreated: ")
    assert written.endswith("---\nRefill.\n")
    assert last_commit(node) == "note_create: wiki/Token Buckets.md"


async def test_note_create_defaults_the_body_to_the_title(node: Harness) -> None:
    await node.ok("note_create", {"path": "ideas/x", "title": "Big idea"})
    assert text_of(node, "ideas/x.md").endswith("---\n# Big idea\n")


async def test_note_create_refuses_a_duplicate_and_dry_run_writes_nothing(node: Harness) -> None:
    code, message = await node.fails("note_create", {"path": "wiki/backoff"})
    assert code == "exists"
    assert "search first" in message
    dry = await node.ok("note_create", {"path": "wiki/draft", "dry_run": True})
    assert dry["dry_run"] is True
    assert dry["message"] == "dry run: nothing was written"
    assert "+# draft" in dry["diff"]
    assert "hint" not in dry
    assert not (node.data / "default/wiki/draft.md").exists()


async def test_note_create_with_overwrite_trashes_the_old_note(node: Harness) -> None:
    replaced = await node.ok("note_create", {"path": "wiki/backoff", "overwrite": True})
    assert "-Exponential backoff" in replaced["diff"]
    trash = list((node.data / "default/.secondbrain/trash").iterdir())
    assert any(p.name.endswith("wiki__backoff.md") for p in trash)


async def test_note_write_replaces_the_body_and_keeps_frontmatter(node: Harness) -> None:
    read = await node.ok("note_read", {"path": "wiki/backoff"})
    written = await node.ok(
        "note_write",
        {
            "path": "wiki/backoff",
            "content": "# Backoff\n\nNew.\n",
            "content_hash": read["content_hash"],
        },
    )
    assert written["content_hash"] != read["content_hash"]
    assert "+New." in written["diff"]
    assert "-Exponential backoff" in written["diff"]
    text = text_of(node, "wiki/backoff.md")
    assert text.startswith("---\ntitle: Backoff\ntags: [ops]\n")
    assert text.endswith("---\n# Backoff\n\nNew.\n")


async def test_note_write_without_keeping_frontmatter(node: Harness) -> None:
    read = await node.ok("note_read", {"path": "raw/article"})
    await node.ok(
        "note_write",
        {
            "path": "raw/article",
            "content": "plain\n",
            "content_hash": read["content_hash"],
            "keep_frontmatter": False,
        },
    )
    assert text_of(node, "raw/article.md") == "plain\n"


async def test_a_stale_hash_is_a_conflict_that_names_the_current_hash(node: Harness) -> None:
    read = await node.ok("note_read", {"path": "wiki/backoff"})
    await node.ok("note_edit", {"path": "wiki/backoff", "old_string": "jitter", "new_string": "J"})
    before = text_of(node, "wiki/backoff.md")
    code, message = await node.fails(
        "note_write", {"path": "wiki/backoff", "content": "x", "content_hash": read["content_hash"]}
    )
    assert code == "hash_mismatch"
    assert "the note changed since it was read" in message
    assert "note_read" in message
    assert text_of(node, "wiki/backoff.md") == before
    missing = await node.fails("note_write", {"path": "gone", "content": "x", "content_hash": "ab"})
    assert missing[0] == "not_found"


async def test_note_edit_replaces_exactly_once_or_everywhere(node: Harness) -> None:
    edited = await node.ok(
        "note_edit",
        {"path": "wiki/rate-limiting", "old_string": "Bucket size", "new_string": "Size"},
    )
    assert edited["replacements"] == 1
    assert "Size is 600" in text_of(node, "wiki/rate-limiting.md")
    code, message = await node.fails(
        "note_edit", {"path": "wiki/rate-limiting", "old_string": "- [", "new_string": "* ["}
    )
    assert code == "invalid_argument"
    assert "appears 2 times" in message
    everywhere = await node.ok(
        "note_edit",
        {
            "path": "wiki/rate-limiting",
            "old_string": "- [",
            "new_string": "* [",
            "replace_all": True,
        },
    )
    assert everywhere["replacements"] == 2


@pytest.mark.parametrize(
    ("old", "new", "code"),
    [
        ("", "x", "invalid_argument"),
        ("same", "same", "invalid_argument"),
        ("absent", "x", "not_found"),
    ],
)
async def test_note_edit_refuses_what_it_cannot_do_unambiguously(
    node: Harness, old: str, new: str, code: str
) -> None:
    found = await node.fails(
        "note_edit", {"path": "wiki/backoff", "old_string": old, "new_string": new}
    )
    assert found[0] == code


async def test_note_edit_keeps_whitespace_in_its_strings(node: Harness) -> None:
    await node.ok(
        "note_edit", {"path": "raw/article", "old_string": "raw text ", "new_string": "  "}
    )
    assert "Some   about" in text_of(node, "raw/article.md")


async def test_note_section_edit_appends_to_a_section(node: Harness) -> None:
    await node.ok(
        "note_section_edit",
        {
            "path": "wiki/rate-limiting",
            "mode": "append_to_section",
            "heading": "Details",
            "content": "Burst is 50.",
        },
    )
    text = text_of(node, "wiki/rate-limiting.md")
    assert "Bucket size is 600 per minute.\nBurst is 50.\n\n## Open questions" in text


async def test_note_section_edit_can_create_the_note_and_heading(node: Harness) -> None:
    made = await node.ok(
        "note_section_edit",
        {
            "path": "wiki/faq",
            "mode": "append_to_section",
            "heading": "Questions",
            "content": "- why?",
            "create": True,
        },
    )
    assert made["created"] is True
    assert text_of(node, "wiki/faq.md").endswith("---\n# faq\n\n## Questions\n- why?\n")


async def test_note_section_edit_errors(node: Harness) -> None:
    assert (await node.fails("note_section_edit", {"path": "x", "mode": "delete_section"}))[0] == (
        "invalid_argument"
    )
    code, message = await node.fails(
        "note_section_edit",
        {"path": "wiki/backoff", "mode": "replace_section", "heading": "Nope", "content": "x"},
    )
    assert code == "not_found"
    assert "note_outline" in message
    missing = await node.fails(
        "note_section_edit", {"path": "nope", "mode": "append_to_note", "content": "x"}
    )
    assert missing[0] == "not_found"


async def test_note_frontmatter_sets_unsets_and_keeps_sets_sorted(node: Harness) -> None:
    changed = await node.ok(
        "note_frontmatter",
        {
            "path": "wiki/backoff",
            "set": {"status": "done", "due": "2026-02-01"},
            "add_tags": ["zeta", "#Alpha"],
            "remove_tags": "ops",
            "add_aliases": ["retries"],
        },
    )
    fm = changed["frontmatter"]
    assert fm["tags"] == ["alpha", "zeta"]
    assert fm["aliases"] == ["retries"]
    assert (fm["status"], fm["due"]) == ("done", "2026-02-01")
    body = (
        "# Backoff\n\nExponential backoff with jitter. Related: [rate limits](rate-limiting.md).\n"
    )
    assert text_of(node, "wiki/backoff.md").endswith(body)
    unset = await node.ok("note_frontmatter", {"path": "wiki/backoff", "unset": ["status"]})
    assert "status" not in unset["frontmatter"]


async def test_note_frontmatter_needs_a_change_and_a_note(node: Harness) -> None:
    code, message = await node.fails("note_frontmatter", {"path": "wiki/backoff"})
    assert code == "invalid_argument"
    assert "add_tags" in message
    assert (await node.fails("note_frontmatter", {"path": "nope", "unset": ["x"]}))[
        0
    ] == "not_found"


async def test_note_delete_trashes_and_names_the_notes_still_linking(node: Harness) -> None:
    deleted = await node.ok("note_delete", {"path": "wiki/backoff"})
    assert deleted["deleted"] is True
    assert deleted["message"] == "moved to .secondbrain/trash"
    assert deleted["still_linked_from"] == ["wiki/rate-limiting.md"]
    assert "note_restore" in deleted["hint"]
    assert not (node.data / "default/wiki/backoff.md").exists()
    assert last_commit(node) == "note_delete: wiki/backoff.md"
    assert (await node.fails("note_delete", {"path": "wiki/backoff"}))[0] == "not_found"


async def test_note_delete_checks_the_hash_and_dry_run_keeps_the_note(node: Harness) -> None:
    assert (await node.fails("note_delete", {"path": "raw/article", "content_hash": "00"}))[0] == (
        "hash_mismatch"
    )
    dry = await node.ok("note_delete", {"path": "raw/article", "dry_run": True})
    assert dry["dry_run"] is True
    assert (node.data / "default/raw/article.md").exists()


async def test_task_toggle_by_line_and_by_text(node: Harness) -> None:
    toggled = await node.ok("task_toggle", {"path": "wiki/rate-limiting", "line": 15})
    assert (toggled["task"], toggled["done"]) == ("measure the burst size", True)
    assert "- [x] measure the burst size" in text_of(node, "wiki/rate-limiting.md")
    undone = await node.ok(
        "task_toggle", {"path": "wiki/rate-limiting", "text": "pick an algorithm", "done": False}
    )
    assert "+- [ ] pick an algorithm" in undone["diff"]


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        ({}, "exactly one of line"),
        ({"line": 3, "text": "x"}, "exactly one of line"),
        ({"line": 99}, "outside"),
        ({"line": 1}, "not a checkbox"),
        ({"text": "nothing like it"}, "no task has"),
    ],
)
async def test_task_toggle_errors_point_to_task_list(
    node: Harness, arguments: dict[str, object], fragment: str
) -> None:
    code, message = await node.fails("task_toggle", {"path": "wiki/rate-limiting", **arguments})
    assert code == "invalid_argument"
    assert fragment in message


async def test_attachment_put_stores_bytes_and_returns_markdown(node: Harness) -> None:
    data = bytes(range(256))
    stored = await node.ok(
        "attachment_put",
        {"path": "attachments/my chart.png", "data": base64.b64encode(data).decode()},
    )
    assert stored == {
        "vault": "default",
        "path": "attachments/my chart.png",
        "bytes": 256,
        "markdown": "![my chart.png](attachments/my%20chart.png)",
    }
    assert (node.data / "default/attachments/my chart.png").read_bytes() == data
    assert last_commit(node) == "attachment_put: attachments/my chart.png"


@pytest.mark.parametrize(
    ("path", "data", "code"),
    [
        ("attachments/x.exe", "AAAA", "invalid_argument"),
        ("attachments/x.png", "not base64!", "invalid_argument"),
        ("attachments/diagram.png", "AAAA", "exists"),
    ],
)
async def test_attachment_put_errors(node: Harness, path: str, data: str, code: str) -> None:
    assert (await node.fails("attachment_put", {"path": path, "data": data}))[0] == code


async def test_vault_create_makes_a_vault_the_other_tools_can_use(node: Harness) -> None:
    made = await node.ok("vault_create", {"name": "team", "layout": "zettelkasten"})
    assert made["vault"] == "team"
    assert "zettel" in made["directories"]
    assert "Conventions of the vault team" in made["instructions"]
    assert (await node.ok("vault_stats", {"vault": "team"}))["vault"] == "team"
    assert last_commit(node, "team") == "vault_create: team"
    assert (await node.fails("vault_create", {"name": "team"}))[0] == "exists"
    assert (await node.fails("vault_create", {"name": "Bad Name"}))[0] == "invalid_argument"
    assert (await node.fails("vault_create", {"name": "x", "layout": "nope"}))[0] == (
        "invalid_argument"
    )


async def test_vault_create_refuses_a_name_the_token_does_not_cover(node: Harness) -> None:
    token = node.token(vaults=["default"])
    code, message = await node.fails("vault_create", {"name": "other"}, token=token)
    assert code == "forbidden"
    assert "other" in message
    assert not (node.data / "other").exists()


async def test_every_write_goes_through_one_path_that_leaves_no_temp_files(
    node: Harness,
) -> None:
    await node.ok("inbox_capture", {"text": "one"})
    await node.ok("note_edit", {"path": "wiki/backoff", "old_string": "jitter", "new_string": "J"})
    leftovers = list(Path(node.data).rglob(".sbtmp-*"))
    assert leftovers == []


async def test_concurrent_writes_with_one_hash_let_exactly_one_win(node: Harness) -> None:
    read = await node.ok("note_read", {"path": "wiki/backoff"})

    async def write(n: int) -> dict[str, object]:
        return await node.call(
            "note_write",
            {"path": "wiki/backoff", "content": f"# v{n}\n", "content_hash": read["content_hash"]},
        )

    results = await asyncio.gather(*(write(n) for n in range(8)))
    winners = [r for r in results if not r["isError"]]
    assert len(winners) == 1
    losers = [r["_meta"]["secondbrain/error"]["code"] for r in results if r["isError"]]  # type: ignore[index]
    assert losers == ["hash_mismatch"] * 7
    assert text_of(node, "wiki/backoff.md").count("# v") == 1


BOMB = (
    "---\na0: &a0 [lol]\n"
    + "".join(f"a{n}: &a{n} [" + ", ".join([f"*a{n - 1}"] * 10) + "]\n" for n in range(1, 10))
    + "---\n"
)


async def test_an_alias_bomb_is_refused_by_every_write_naming_the_budget(node: Harness) -> None:
    read = await node.ok("note_read", {"path": "raw/article"})
    calls = [
        ("note_create", {"path": "wiki/bomb", "content": BOMB + "# Bomb\n"}),
        ("note_write", {"path": "raw/article", "content": BOMB + "# Bomb\n",
                        "content_hash": read["content_hash"], "keep_frontmatter": False}),
        ("inbox_capture", {"text": BOMB + "# Bomb\n"}),
    ]  # fmt: skip
    for tool, arguments in calls:
        code, message = await node.fails(tool, arguments)
        assert code == "invalid_argument", tool
        assert "more than 5000 nodes, past the alias budget" in message, tool
    assert not (node.data / "default/wiki/bomb.md").exists()
    assert not list((node.data / "default/inbox").glob("*.md"))
    assert text_of(node, "raw/article.md").startswith("# An article")


async def test_benign_anchors_survive_a_frontmatter_change(node: Harness) -> None:
    content = "---\nowner: &who ops\nreviewers: [*who, *who]\n---\n# Shared\n"
    await node.ok("note_create", {"path": "wiki/shared", "content": content})
    changed = await node.ok("note_frontmatter", {"path": "wiki/shared", "set": {"status": "ok"}})
    assert changed["frontmatter"]["reviewers"] == ["ops", "ops"]
    assert changed["frontmatter"]["status"] == "ok"
    text = text_of(node, "wiki/shared.md")
    assert "owner: &who ops\n" in text
    assert "reviewers: [*who, *who]\n" in text


async def test_a_planted_bomb_is_refused_by_frontmatter_edits_and_templates(
    start_node: NodeFactory,
) -> None:
    node = await start_node(
        {"wiki/bomb.md": BOMB + "# Bomb\n", "templates/bomb.md": BOMB + "# T\n"}
    )
    before = text_of(node, "wiki/bomb.md")
    code, message = await node.fails("note_frontmatter", {"path": "wiki/bomb", "add_tags": ["x"]})
    assert code == "invalid_argument"
    assert "alias budget" in message
    assert text_of(node, "wiki/bomb.md") == before
    code, message = await node.fails("note_from_template", {"template": "bomb", "title": "New"})
    assert code == "invalid_argument"
    assert "alias budget" in message
    assert not list((node.data / "default").glob("inbox/*.md"))
    # The body can still be edited: the block stays as it was, unreadable but harmless.
    await node.ok("note_edit", {"path": "wiki/bomb", "old_string": "# Bomb", "new_string": "# B"})
    assert text_of(node, "wiki/bomb.md") == BOMB + "# B\n"


async def test_a_write_history_could_not_record_says_so_in_warnings(node: Harness) -> None:
    """The note is on disk either way; the caller is told what did not follow it."""
    branch = node.data / "default" / ".git" / "refs" / "heads" / "main"
    lock = branch.with_suffix(".lock")
    lock.touch()  # another git process holds the branch: this write's commit cannot move it
    try:
        made = await node.ok("note_create", {"path": "wiki/locked", "content": "Kept.\n"})
        edited = await node.ok(
            "note_edit", {"path": "wiki/locked", "old_string": "Kept.", "new_string": "Still."}
        )
    finally:
        lock.unlink()
    assert text_of(node, "wiki/locked.md").endswith("Still.\n")
    for result in (made, edited):
        (warning,) = result["warnings"]
        assert warning.startswith("written, but not recorded in history")
        assert "vault_recover" in warning
    moved = await node.ok("note_move", {"path": "wiki/locked", "to": "wiki/unlocked"})
    assert "warnings" not in moved
    assert last_commit(node) == "note_move: wiki/locked.md -> wiki/unlocked.md"
