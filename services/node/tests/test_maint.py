"""The tools that reshape a vault: note_move with link rewriting, note_merge, note_split,
tag_rename, vault_replace (which plans fully before writing) and vault_review."""

from __future__ import annotations

import subprocess

import pytest

from vault_node.testing import Harness, NodeFactory

pytestmark = pytest.mark.asyncio

LINKED = {
    "notes/target.md": "---\ntitle: The Target\n---\n# The Target\n\nBody of target.\n",
    "notes/a.md": "# A\n\nSee [[notes/target]], [[notes/target.md#Part|alias]] and [[target]].\n"
    "Also [[The Target]] and [md](target.md) and `[[notes/target]]` in code.\n\n"
    "```\n[[notes/target]]\n```\n",
    "other/b.md": "# B\n\nUp: [t](../notes/target.md) and [[notes/target|t]] and [[targets]].\n",
    "notes/targets.md": "# Targets\n",
    "notes/mover.md": "# Mover\n\n[a](a.md), [b](../other/b.md), [[./a]], [[notes/a]], [web](https://x.y)\n",
}


def text_of(node: Harness, rel: str) -> str:
    return (node.data / "default" / rel).read_text()


def commits(node: Harness) -> list[str]:
    out = subprocess.run(
        ["git", "-C", str(node.data / "default"), "log", "--format=%s"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return out.splitlines()


async def test_note_move_dry_run_shows_every_link_update_and_writes_nothing(
    start_node: NodeFactory,
) -> None:
    node = await start_node(LINKED)
    plan = await node.ok(
        "note_move", {"path": "notes/target", "to": "archive/goal", "dry_run": True}
    )
    assert plan["dry_run"] is True
    assert "nothing was written" in plan["message"]
    updates = {(u["path"], u["from"], u["to"], u["count"]) for u in plan["link_updates"]}
    assert updates == {
        ("notes/a.md", "[[notes/target", "[[archive/goal", 1),
        ("notes/a.md", "[[notes/target.md", "[[archive/goal.md", 1),
        ("notes/a.md", "[[target", "[[goal", 1),
        ("notes/a.md", "(target.md", "(../archive/goal.md", 1),
        ("other/b.md", "(../notes/target.md", "(../archive/goal.md", 1),
        ("other/b.md", "[[notes/target", "[[archive/goal", 1),
    }
    assert (node.data / "default/notes/target.md").exists()


async def test_note_move_rewrites_links_outside_code_and_commits_once(
    start_node: NodeFactory,
) -> None:
    node = await start_node(LINKED)
    before = len(commits(node))
    moved = await node.ok("note_move", {"path": "notes/target", "to": "archive/goal"})
    assert (moved["from"], moved["to"], moved["notes_updated"]) == (
        "notes/target.md",
        "archive/goal.md",
        2,
    )
    a = text_of(node, "notes/a.md")
    assert "See [[archive/goal]], [[archive/goal.md#Part|alias]] and [[goal]]." in a
    assert "[[The Target]] and [md](../archive/goal.md)" in a
    assert "`[[notes/target]]` in code" in a
    assert "```\n[[notes/target]]\n```" in a
    b = text_of(node, "other/b.md")
    assert "[t](../archive/goal.md) and [[archive/goal|t]] and [[targets]]" in b
    assert len(commits(node)) == before + 1
    assert commits(node)[0] == "note_move: notes/target.md -> archive/goal.md"
    links = await node.ok("note_backlinks", {"path": "archive/goal"})
    assert {link["path"] for link in links["incoming"]} == {"notes/a.md", "other/b.md"}


async def test_note_move_keeps_bare_names_when_only_the_folder_changes(
    start_node: NodeFactory,
) -> None:
    node = await start_node(LINKED)
    await node.ok("note_move", {"path": "notes/target", "to": "archive/target"})
    assert "and [[target]]." in text_of(node, "notes/a.md")


async def test_note_move_without_link_updates(start_node: NodeFactory) -> None:
    node = await start_node(LINKED)
    moved = await node.ok("note_move", {"path": "notes/target", "to": "x", "update_links": False})
    assert moved["link_updates"] == []
    assert moved["notes_updated"] == 0
    assert "[[notes/target]]" in text_of(node, "notes/a.md")


async def test_note_move_errors(start_node: NodeFactory) -> None:
    node = await start_node(LINKED)
    assert (await node.fails("note_move", {"path": "notes/a", "to": "notes/a.md"}))[0] == (
        "invalid_path"
    )
    assert (await node.fails("note_move", {"path": "nope", "to": "x"}))[0] == "not_found"
    code, message = await node.fails("note_move", {"path": "notes/a", "to": "other/b"})
    assert code == "exists"
    assert "overwrite" in message


async def test_note_move_with_overwrite_trashes_the_displaced_note(
    start_node: NodeFactory,
) -> None:
    node = await start_node(LINKED)
    await node.ok("note_move", {"path": "notes/a", "to": "other/b", "overwrite": True})
    trash = [p.name for p in (node.data / "default/.secondbrain/trash").iterdir()]
    assert any(name.endswith("other__b.md") for name in trash)


async def test_note_merge_appends_aliases_deletes_and_relinks(start_node: NodeFactory) -> None:
    node = await start_node(LINKED)
    merged = await node.ok("note_merge", {"path": "notes/targets", "from": "notes/target"})
    assert merged["merged_from"] == "notes/target.md"
    assert merged["backlinks_to_source"] == 2
    assert merged["links_updated"] == 2
    text = text_of(node, "notes/targets.md")
    assert "aliases:\n  - The Target\n  - target\n" in text
    assert "## The Target\n\n<!-- merged from notes/target.md on " in text
    assert text.endswith("-->\n\nBody of target.\n")
    assert "\n# The Target" not in text
    assert not (node.data / "default/notes/target.md").exists()
    assert "[[notes/targets]]" in text_of(node, "notes/a.md")
    assert commits(node)[0] == "note_merge: notes/target.md -> notes/targets.md"


async def test_note_merge_dry_run_and_errors(start_node: NodeFactory) -> None:
    node = await start_node(LINKED)
    dry = await node.ok(
        "note_merge",
        {"path": "notes/targets", "from": "notes/target", "dry_run": True, "heading": "Merged"},
    )
    assert dry["dry_run"] is True
    assert "would be appended" in dry["message"]
    assert "+## Merged" in dry["diff"]
    assert (node.data / "default/notes/target.md").exists()
    assert (await node.fails("note_merge", {"path": "notes/a", "from": "notes/a"}))[0] == (
        "invalid_argument"
    )
    assert (await node.fails("note_merge", {"path": "notes/a", "from": "nope"}))[0] == "not_found"


SPLIT = {
    "guide.md": "---\ntags: [howto]\n---\n# Guide\n\nIntro.\n\n## Install\n\nRun it.\n\n"
    "### Linux\n\napt.\n\n## Use\n\nCall it.\n\n## Guide\n\nSame name as the note.\n",
    "use.md": "# Existing\n",
}


async def test_note_split_dry_run_lists_the_notes(start_node: NodeFactory) -> None:
    node = await start_node(SPLIT)
    dry = await node.ok("note_split", {"path": "guide", "dry_run": True})
    assert dry["would_create"] == ["install.md", "use.md", "guide-1.md"]


async def test_note_split_creates_pieces_links_back_and_skips_taken_paths(
    start_node: NodeFactory,
) -> None:
    node = await start_node(SPLIT)
    split = await node.ok("note_split", {"path": "guide", "dir": "parts"})
    assert split["created"] == ["parts/install.md", "parts/use.md", "parts/guide.md"]
    assert split["notes_created"] == 3
    piece = text_of(node, "parts/install.md")
    assert "title: Install\n" in piece
    assert "  - howto\n" in piece
    assert "source_note: guide.md\n" in piece
    assert piece.endswith("---\nRun it.\n\n### Linux\n\napt.\n\nSplit from [[guide]].\n")
    original = text_of(node, "guide.md")
    assert "See [[parts/install|Install]]." in original
    assert "Run it." not in original
    assert "# Guide\n\nIntro." in original
    beside = await node.ok("note_split", {"path": "parts/install", "level": 3})
    assert beside["created"] == ["parts/linux.md"]


async def test_note_split_skips_a_piece_whose_path_exists(start_node: NodeFactory) -> None:
    node = await start_node(SPLIT)
    split = await node.ok("note_split", {"path": "guide"})
    assert split["created"] == ["install.md", "guide-1.md"]
    assert text_of(node, "use.md") == "# Existing\n"
    assert "## Use\n\nCall it." in text_of(node, "guide.md")


async def test_note_split_without_a_heading_of_the_level(start_node: NodeFactory) -> None:
    node = await start_node(SPLIT)
    code, message = await node.fails("note_split", {"path": "use", "level": 2})
    assert code == "not_found"
    assert "note_outline" in message


TAGGED = {
    "a.md": "---\ntags: [project, other]\n---\n# A #project and #project/sub, not #projectx\n"
    "`#project` in code and email@x#project stays.\n",
    "b.md": "---\ntags: project\n---\n# B\n",
    "c.md": "# C without the tag #other\n",
}


async def test_tag_rename_is_a_dry_run_by_default(start_node: NodeFactory) -> None:
    node = await start_node(TAGGED)
    dry = await node.ok("tag_rename", {"from": "#project", "to": "work"})
    assert dry["dry_run"] is True
    assert dry["count"] == 2
    assert all("diff" in note for note in dry["notes"])
    assert "#project and" in text_of(node, "a.md")


async def test_tag_rename_changes_frontmatter_and_inline_tags_only(start_node: NodeFactory) -> None:
    node = await start_node(TAGGED)
    before = len(commits(node))
    done = await node.ok("tag_rename", {"from": "project", "to": "work", "dry_run": False})
    assert [n["path"] for n in done["notes"]] == ["a.md", "b.md"]
    assert all("diff" not in n for n in done["notes"])
    a = text_of(node, "a.md")
    assert "- work\n" in a
    assert "- other\n" in a
    assert "# A #work and #work/sub, not #projectx\n" in a
    assert "`#project` in code and email@x#project stays." in a
    assert "updated:" not in a
    assert len(commits(node)) == before + 1
    assert commits(node)[0] == "tag_rename: #project -> #work"
    assert (await node.ok("tag_list", {"prefix": "project"}))["tags"] == [
        {"tag": "projectx", "notes": 1}
    ]


@pytest.mark.parametrize(
    ("old", "new"), [("", "x"), ("#", "x"), ("x", "x"), ("#X", "x"), ("a", "two words")]
)
async def test_tag_rename_refuses_empty_equal_or_invalid_names(
    node: Harness, old: str, new: str
) -> None:
    assert (await node.fails("tag_rename", {"from": old, "to": new}))[0] == "invalid_argument"


REPLACE = {f"n{i}.md": f"# Note {i}\n\ncolour and colour\n" for i in range(5)}


async def test_vault_replace_dry_run_shows_diffs_and_counts(start_node: NodeFactory) -> None:
    node = await start_node(REPLACE)
    dry = await node.ok("vault_replace", {"pattern": "colour", "replace": "color"})
    assert (dry["dry_run"], dry["notes_affected"], dry["occurrences"]) == (True, 5, 10)
    assert "+color and color" in dry["notes"][0]["diff"]
    assert "colour" in text_of(node, "n0.md")


async def test_vault_replace_over_the_limit_refuses_having_written_nothing(
    start_node: NodeFactory,
) -> None:
    node = await start_node(REPLACE)
    before = {rel: text_of(node, rel) for rel in REPLACE}
    code, message = await node.fails(
        "vault_replace", {"pattern": "colour", "replace": "color", "limit": 3, "dry_run": False}
    )
    assert code == "too_large"
    assert "5 notes would change" in message
    assert "nothing was written" in message
    assert {rel: text_of(node, rel) for rel in REPLACE} == before


async def test_vault_replace_writes_with_groups_and_one_commit(start_node: NodeFactory) -> None:
    node = await start_node(REPLACE)
    before = len(commits(node))
    done = await node.ok(
        "vault_replace",
        {"pattern": r"col(ou)r", "replace": "<$1>${1}$$", "regex": True, "dry_run": False},
    )
    assert done["notes_affected"] == 5
    assert all("content_hash" in n for n in done["notes"])
    assert text_of(node, "n3.md") == "# Note 3\n\n<ou>ou$ and <ou>ou$\n"
    assert len(commits(node)) == before + 1
    assert commits(node)[0] == "vault_replace: 5 notes"


async def test_vault_replace_reaches_frontmatter_and_respects_prefix(
    start_node: NodeFactory,
) -> None:
    node = await start_node({"a/x.md": "---\nstatus: old\n---\nold\n", "b/y.md": "old\n"})
    done = await node.ok(
        "vault_replace", {"pattern": "old", "replace": "new", "prefix": "a", "dry_run": False}
    )
    assert done["occurrences"] == 2
    assert text_of(node, "a/x.md") == "---\nstatus: new\n---\nnew\n"
    assert text_of(node, "b/y.md") == "old\n"


async def test_vault_replace_errors(node: Harness) -> None:
    assert (await node.fails("vault_replace", {"pattern": "(", "replace": "", "regex": True}))[
        0
    ] == "invalid_argument"
    assert (await node.fails("vault_replace", {"pattern": "  ", "replace": "x"}))[0] == (
        "invalid_argument"
    )


REVIEW = {
    "stub.md": "# S\n",
    "hub.md": "# Hub\n\n" + "words " * 80 + "\n[[stub]] [[missing]]\n- [ ] finish it\n",
}


async def test_vault_review_lists_every_category(start_node: NodeFactory) -> None:
    node = await start_node(REVIEW)
    review = await node.ok("vault_review", {"stale_after": "1h"})
    items = review["items"]
    assert [i["path"] for i in items["stub"]] == ["stub.md", "hub.md"][: len(items["stub"])]
    assert items["broken_link"][0]["detail"] == "missing"
    assert items["open_task"][0]["detail"] == "finish it"
    assert items["orphan"] == []
    assert review["count"] == sum(len(v) for v in items.values())
    assert review["stats"]["notes"] == 2


async def test_vault_review_only_one_category_and_span_errors(start_node: NodeFactory) -> None:
    node = await start_node(REVIEW)
    only = await node.ok("vault_review", {"only": "open_task"})
    assert list(only["items"]) == ["open_task"]
    fresh = await node.ok("vault_review", {"only": "stale"})
    assert fresh["items"]["stale"] == []
    code, message = await node.fails("vault_review", {"stale_after": "2026-01-01"})
    assert code == "invalid_argument"
    assert "span" in message


async def test_a_moved_note_keeps_its_own_relative_links_working(start_node: NodeFactory) -> None:
    node = await start_node(LINKED)
    moved = await node.ok("note_move", {"path": "notes/mover", "to": "deep/er/mover"})
    assert moved["notes_updated"] == 1
    text = text_of(node, "deep/er/mover.md")
    assert "[a](../../notes/a.md), [b](../../other/b.md), [[../../notes/a]], [[notes/a]]" in text
    links = await node.ok("note_backlinks", {"path": "deep/er/mover"})
    assert {link["path"] for link in links["outgoing"]} == {"notes/a.md", "other/b.md"}
