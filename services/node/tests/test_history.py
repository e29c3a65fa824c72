"""History tools (docs/design.md#tools): revisions, diffs between them, restore, versioning off."""

from __future__ import annotations

import pytest

from vault_node.testing import Harness, NodeFactory

pytestmark = pytest.mark.asyncio


async def edit_twice(node: Harness) -> list[dict[str, str]]:
    await node.ok("note_edit", {"path": "wiki/backoff", "old_string": "jitter", "new_string": "J1"})
    await node.ok("note_edit", {"path": "wiki/backoff", "old_string": "J1", "new_string": "J2"})
    revisions: list[dict[str, str]] = (await node.ok("note_history", {"path": "wiki/backoff"}))[
        "revisions"
    ]
    return revisions


async def test_note_history_lists_revisions_newest_first_with_authors(node: Harness) -> None:
    revisions = await edit_twice(node)
    assert [r["message"] for r in revisions] == [
        "note_edit: wiki/backoff.md",
        "note_edit: wiki/backoff.md",
        "vault_import: 6 files already in the folder",
    ]
    assert [r["author"] for r in revisions] == ["alice", "alice", "secondbrain"]
    assert all(len(r["commit"]) == 12 for r in revisions)
    limited = await node.ok("note_history", {"path": "wiki/backoff", "limit": 1})
    assert len(limited["revisions"]) == 1
    assert (await node.ok("note_history", {"path": "never"}))["revisions"] == []


async def test_note_diff_defaults_to_the_last_change_against_the_working_copy(
    node: Harness,
) -> None:
    revisions = await edit_twice(node)
    latest = await node.ok("note_diff", {"path": "wiki/backoff"})
    assert latest["from"] == revisions[1]["commit"]
    assert latest["to"] == "working copy"
    assert "-Exponential backoff with J1." in latest["diff"]
    assert "+Exponential backoff with J2." in latest["diff"]
    between = await node.ok(
        "note_diff",
        {"path": "wiki/backoff", "from": revisions[2]["commit"], "to": revisions[1]["commit"]},
    )
    assert "+Exponential backoff with J1." in between["diff"]
    same = await node.ok("note_diff", {"path": "wiki/backoff", "from": revisions[0]["commit"]})
    assert same["diff"] == "(no difference)"


async def test_note_diff_errors(node: Harness) -> None:
    code, message = await node.fails("note_diff", {"path": "wiki/backoff", "from": "abcdef"})
    assert code == "not_found"
    assert "note_history" in message
    assert (await node.fails("note_diff", {"path": "wiki/backoff", "from": "zz"}))[0] == (
        "not_found"
    )
    assert (await node.fails("note_diff", {"path": "never"}))[0] == "not_found"


async def test_note_restore_brings_back_a_revision_through_the_write_path(node: Harness) -> None:
    revisions = await edit_twice(node)
    dry = await node.ok(
        "note_restore",
        {"path": "wiki/backoff", "revision": revisions[2]["commit"], "dry_run": True},
    )
    assert dry["dry_run"] is True
    assert "+Exponential backoff with jitter." in dry["diff"]
    restored = await node.ok(
        "note_restore", {"path": "wiki/backoff", "revision": revisions[2]["commit"]}
    )
    assert restored["restored_from"] == revisions[2]["commit"]
    text = (node.data / "default/wiki/backoff.md").read_text()
    assert "with jitter." in text
    assert "updated:" not in text
    newest = (await node.ok("note_history", {"path": "wiki/backoff"}))["revisions"][0]
    assert newest["message"] == f"note_restore: wiki/backoff.md from {revisions[2]['commit']}"


async def test_note_restore_recovers_a_deleted_note(node: Harness) -> None:
    await node.ok("note_delete", {"path": "raw/article"})
    first = (await node.ok("note_history", {"path": "raw/article"}))["revisions"][-1]
    await node.ok("note_restore", {"path": "raw/article", "revision": first["commit"]})
    assert (await node.ok("note_read", {"path": "raw/article"}))["title"] == "An article"


async def test_note_history_follows_a_move_back_to_the_old_path(node: Harness) -> None:
    await edit_twice(node)
    await node.ok("note_move", {"path": "wiki/backoff", "to": "wiki/retry"})
    await node.ok("note_edit", {"path": "wiki/retry", "old_string": "J2", "new_string": "J3"})
    revisions = (await node.ok("note_history", {"path": "wiki/retry"}))["revisions"]
    assert [(r["message"].split(":")[0], r["path"]) for r in revisions] == [
        ("note_edit", "wiki/retry.md"),
        ("note_move", "wiki/retry.md"),
        ("note_edit", "wiki/backoff.md"),
        ("note_edit", "wiki/backoff.md"),
        ("vault_import", "wiki/backoff.md"),
    ]
    before = revisions[2]["commit"]
    across = await node.ok("note_diff", {"path": "wiki/retry", "from": before})
    assert "-Exponential backoff with J2." in across["diff"]
    assert "+Exponential backoff with J3." in across["diff"]
    await node.ok("note_restore", {"path": "wiki/retry", "revision": revisions[4]["commit"]})
    assert "with jitter." in (node.data / "default/wiki/retry.md").read_text()
    assert not (node.data / "default/wiki/backoff.md").exists()


async def test_note_diff_after_delete_and_restore_compares_with_the_last_revision_with_it(
    node: Harness,
) -> None:
    revisions = await edit_twice(node)
    await node.ok("note_delete", {"path": "wiki/backoff"})
    await node.ok("note_restore", {"path": "wiki/backoff", "revision": revisions[1]["commit"]})
    latest = await node.ok("note_diff", {"path": "wiki/backoff"})
    assert latest["from"] == revisions[0]["commit"]
    assert "-Exponential backoff with J2." in latest["diff"]
    assert "+Exponential backoff with J1." in latest["diff"]


async def test_note_restore_errors(node: Harness) -> None:
    first = (await node.ok("note_history", {"path": "wiki/backoff"}))["revisions"][-1]["commit"]
    assert (await node.fails("note_restore", {"path": "wiki/new", "revision": first}))[0] == (
        "not_found"
    )
    assert (await node.fails("note_restore", {"path": "wiki/backoff", "revision": "0000"}))[0] == (
        "not_found"
    )


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("note_history", {"path": "wiki/backoff"}),
        ("note_diff", {"path": "wiki/backoff"}),
        ("note_restore", {"path": "wiki/backoff", "revision": "abcd"}),
    ],
)
async def test_history_tools_say_when_versioning_is_off(
    start_node: NodeFactory, tool: str, arguments: dict[str, str]
) -> None:
    node = await start_node(git=False)
    code, message = await node.fails(tool, arguments)
    assert code == "versioning_off"
    assert message.startswith("versioning is off for this vault: default")
    listed = await node.ok("vault_list")
    assert listed["vaults"][0]["versioned"] is False
