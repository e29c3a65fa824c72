"""Path rules judge where a path leads and how it is spelled: symbolic links planted in the
vault (`public/link.md -> ../private/plan.md`, `public/linkdir -> ../private`,
`public/drafts/w -> ../../private`), folders stored decomposed (NFD) and folders spelled in
another case never open what the rules hide, to any tool."""

from __future__ import annotations

import base64
import unicodedata
from pathlib import Path
from typing import Any

import pytest

from vault_node.testing import Harness, NodeFactory, steady

pytestmark = pytest.mark.asyncio

PUBLIC: dict[str, str | bytes] = {
    "public/readme.md": "---\ntags: [open]\n---\n# Readme\n\nopen words\n- [ ] open task\n",
    "public/drafts/draft.md": "# Draft\n\ndraft words\n",
    "public/logo.png": b"\x89PNG\r\n\x1a\n",
    "templates/meeting.md": "# {{title}}\n",
}
PRIVATE: dict[str, str | bytes] = {
    "private/plan.md": "---\ntags: [hidden]\n---\n# Plan\n\nhidden plan words [[readme]]\n"
    "- [ ] hidden task\n\n## Steps\n\none\n",
    "private/salary.md": "# Salary\n\nhidden salary words\n",
    "private/map.png": b"\x89PNG\r\n\x1a\nhidden",
}
LINKS = {
    "public/link.md": "../private/plan.md",
    "public/link.png": "../private/map.png",
    "public/linkdir": "../private",
    "public/drafts/w": "../../private",
    "public/drafts/plan.md": "../../private/plan.md",  # a file link inside the write rules
}
TEAM = {"team": {"read": ["public"], "write": ["public/drafts"]}}
HIDDEN_WORDS = ("hidden", "Plan", "Salary", "private")


async def team_node(start_node: NodeFactory, tmp_path: Path, *, links: bool = True) -> Harness:
    """Vault `team` as the probe found it (links made before the node starts, as a `git
    pull` or a file manager would), or without private/ and links when `links` is False."""
    root = tmp_path / "data" / "team"
    files = {**PUBLIC, **PRIVATE} if links else PUBLIC
    for rel, content in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(content if isinstance(content, bytes) else content.encode())
    for rel, target in LINKS.items() if links else ():
        (root / rel).symlink_to(target, target_is_directory=not target.endswith((".md", ".png")))
    return await start_node({}, data_dir=tmp_path / "data")


def team(node: Harness, scope: str = "read write delete") -> str:
    return node.token(scope, paths=TEAM)


LINKED_PATHS = [
    "public/link",
    "public/linkdir/plan",
    "public/drafts/w/salary",
    "public/drafts/plan",
]
READ_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("note_list", {"vault": "team", "sort": "path", "limit": 100}),
    ("note_list", {"vault": "team", "prefix": "public/linkdir"}),
    ("note_search", {"vault": "team", "query": "words"}),
    ("note_search", {"vault": "team", "query": "", "tags": ["hidden"]}),
    ("vault_grep", {"vault": "team", "pattern": "words|task"}),
    ("vault_grep", {"vault": "team", "pattern": "words", "prefix": "public/drafts/w"}),
    ("tag_list", {"vault": "team"}),
    ("task_list", {"vault": "team", "include_done": True}),
    ("attachment_list", {"vault": "team", "prefix": "public"}),
    ("note_backlinks", {"vault": "team", "path": "public/readme"}),
    ("vault_stats", {"vault": "team"}),
    ("vault_review", {"vault": "team"}),
    ("note_from_template", {"vault": "team"}),
]


async def test_a_link_out_of_the_read_rules_reads_as_a_missing_note_to_every_tool(
    start_node: NodeFactory, tmp_path: Path
) -> None:
    node = await team_node(start_node, tmp_path)
    token = team(node)
    for path in LINKED_PATHS:
        for tool in ("note_read", "note_outline", "note_backlinks", "note_related",
                     "note_history", "note_diff"):  # fmt: skip
            hidden = await node.call(tool, {"vault": "team", "path": path}, token=token)
            missing = await node.call(tool, {"vault": "team", "path": "public/none"}, token=token)
            assert hidden["isError"] == missing["isError"], (tool, path)
            assert str(hidden).replace(path, "X") == str(missing).replace("public/none", "X")
        reply = await node.rpc(
            "resources/read", {"uri": f"secondbrain://team/{path}.md"}, token=token
        )
        assert reply["error"]["data"]["code"] == "not_found", path
    for path in ("public/link.png", "public/linkdir/map.png", "public/drafts/w/map.png"):
        code, message = await node.fails(
            "attachment_read", {"vault": "team", "path": path}, token=token
        )
        assert code == "not_found", path
        assert "hidden" not in message
    listed = (await node.rpc("resources/list", {}, token=token))["result"]["resources"]
    assert sorted(r["name"] for r in listed) == [
        "public/drafts/draft.md",
        "public/logo.png",
        "public/readme.md",
    ]
    completion = await node.rpc(
        "completion/complete",
        {
            "ref": {"type": "ref/resource", "uri": "secondbrain://{vault}/{+path}"},
            "argument": {"name": "path", "value": "public/"},
            "context": {"arguments": {"vault": "team"}},
        },
        token=token,
    )
    values = completion["result"]["completion"]["values"]
    assert values
    assert not any("link" in v or "/w/" in v or v == "public/drafts/plan.md" for v in values)


async def test_every_read_tool_answers_as_if_private_and_its_links_were_not_there(
    start_node: NodeFactory, tmp_path: Path
) -> None:
    linked = await team_node(start_node, tmp_path / "linked")
    plain = await team_node(start_node, tmp_path / "plain", links=False)
    for tool, arguments in READ_CALLS:
        restricted = await linked.ok(tool, arguments, token=team(linked))
        alone = await plain.ok(tool, arguments, token=team(plain))
        assert steady(restricted) == steady(alone), tool
        assert not any(word in str(restricted) for word in HIDDEN_WORDS), tool


def private_bytes(node: Harness) -> dict[str, bytes]:
    root = node.data / "team"
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file()
        and not {".git", ".secondbrain", ".trash"} & set(p.relative_to(root).parts)
        and not p.relative_to(root).as_posix().startswith("public/drafts/")
    }


async def test_no_write_through_a_link_lands_outside_the_write_rules(
    start_node: NodeFactory, tmp_path: Path
) -> None:
    node = await team_node(start_node, tmp_path)
    token = team(node)
    root = node.data / "team"
    before = private_bytes(node)
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n").decode()
    refused: dict[str, str] = {}
    calls: list[tuple[str, dict[str, Any]]] = []
    for path in ("public/drafts/w/salary", "public/drafts/plan"):
        calls += [
            ("note_edit", {"path": path, "old_string": "hidden", "new_string": "x"}),
            ("note_write", {"path": path, "content": "x", "content_hash": "0" * 32}),
            ("note_section_edit", {"path": path, "mode": "append_to_note", "content": "x"}),
            ("note_section_edit", {"path": path, "heading": "Steps", "content": "x"}),
            ("note_frontmatter", {"path": path, "set": {"x": 1}}),
            ("note_create", {"path": path, "overwrite": True}),
            ("note_delete", {"path": path}),
            ("task_toggle", {"path": path, "line": 8}),
            ("note_move", {"path": path, "to": "public/drafts/moved"}),
            ("note_merge", {"path": "public/drafts/draft", "from": path}),
            ("note_restore", {"path": path, "revision": "HEAD"}),
        ]
    calls += [
        ("note_create", {"path": "public/drafts/w/new"}),
        ("note_section_edit", {"path": "public/drafts/w/new2", "content": "x", "create": True}),
        ("note_move", {"path": "public/drafts/draft", "to": "public/drafts/w/moved"}),
        ("attachment_put", {"path": "public/drafts/w/new.png", "data": png}),
        ("note_from_template", {"template": "meeting", "path": "public/drafts/w/meeting"}),
        ("note_split", {"path": "public/drafts/draft", "level": 1, "dir": "public/drafts/w"}),
    ]
    for tool, arguments in calls:
        result = await node.call(tool, {"vault": "team", **arguments}, token=token)
        assert result["isError"] or tool == "note_split", (tool, arguments)
        refused[f"{tool} {arguments['path']}"] = result["content"][0]["text"]
    assert private_bytes(node) == before
    assert sorted(p.name for p in (root / "private").iterdir()) == [
        "map.png",
        "plan.md",
        "salary.md",
    ]
    assert (root / "public/drafts/plan.md").is_symlink()  # never replaced by a copy
    assert (root / "public/drafts/draft.md").is_file()
    assert not any("hidden" in text for text in refused.values())
    through_link = await node.fails(
        "note_create", {"vault": "team", "path": "public/drafts/w/new"}, token=token
    )
    spelled_out = await node.fails(
        "note_create", {"vault": "team", "path": "private/new"}, token=token
    )
    assert through_link[0] == spelled_out[0] == "forbidden"
    assert through_link[1].replace("public/drafts/w/new", "X") == spelled_out[1].replace(
        "private/new", "X"
    )


async def test_a_write_through_a_link_the_caller_may_follow_changes_the_note_it_leads_to(
    start_node: NodeFactory, tmp_path: Path
) -> None:
    node = await team_node(start_node, tmp_path)
    root = node.data / "team"
    result = await node.ok(
        "note_section_edit",
        {"vault": "team", "path": "public/drafts/plan", "mode": "append_to_note", "content": "x"},
    )
    assert result["path"] == "private/plan.md"
    assert (root / "public/drafts/plan.md").is_symlink()
    assert (root / "private/plan.md").read_text().rstrip().endswith("x")


NFD_CAFE = unicodedata.normalize("NFD", "café")


async def spelled_node(start_node: NodeFactory, tmp_path: Path) -> Harness:
    """Folders stored decomposed and in other cases than the rules spell them."""
    return await start_node(
        {
            f"public/{NFD_CAFE}/menu.md": "# Menu\n\ncroissant words\n",
            f"public/{NFD_CAFE}/logo.png": b"\x89PNG\r\n\x1a\n",
            "public/Secret/a.md": "# A\n\ncroissant words\n",
            "public/open.md": "# Open\n\ncroissant words\n",
            f"{NFD_CAFE}/inside.md": "# Inside\n\ncroissant words\n",
        },
        data_dir=tmp_path / "data",
    )


async def test_an_excluded_folder_stays_hidden_whatever_its_normal_form_or_case(
    start_node: NodeFactory, tmp_path: Path
) -> None:
    node = await spelled_node(start_node, tmp_path)
    token = node.token(
        "read write delete",
        paths={"default": {"read": ["public"], "exclude": ["public/café", "public/secret"]}},
    )
    listed = await node.ok("note_list", {"limit": 100}, token=token)
    assert [e["path"] for e in listed["entries"]] == ["public/open.md"]
    found = await node.ok("note_search", {"query": "croissant"}, token=token)
    assert [hit["path"] for hit in found["hits"]] == ["public/open.md"]
    grep = await node.ok("vault_grep", {"pattern": "croissant"}, token=token)
    assert [m["path"] for m in grep["matches"]] == ["public/open.md"]
    files = await node.ok("attachment_list", {"prefix": "public"}, token=token)
    assert files["attachments"] == []
    resources = (await node.rpc("resources/list", {}, token=token))["result"]["resources"]
    assert [r["name"] for r in resources] == ["public/open.md"]
    spellings = [f"public/{NFD_CAFE}/menu", "public/café/menu", "public/CAFÉ/menu",
                 "public/Secret/a", "public/SECRET/a", "public/secret/a"]  # fmt: skip
    for path in spellings:
        code, _ = await node.fails("note_read", {"path": path}, token=token)
        assert code == "not_found", path
        code, _ = await node.fails("note_create", {"path": path + "2"}, token=token)
        assert code == "forbidden", path
    code, _ = await node.fails(
        "attachment_read", {"path": f"public/{NFD_CAFE}/logo.png"}, token=token
    )
    assert code == "not_found"


async def test_read_and_write_folders_match_every_normal_form_but_only_their_own_case(
    start_node: NodeFactory, tmp_path: Path
) -> None:
    node = await spelled_node(start_node, tmp_path)
    token = node.token(
        "read write delete", paths={"default": {"read": ["café"], "write": ["café"]}}
    )
    found = await node.ok("note_search", {"query": "croissant"}, token=token)
    assert [hit["path"] for hit in found["hits"]] == [f"{NFD_CAFE}/inside.md"]
    read = await node.ok("note_read", {"path": f"{NFD_CAFE}/inside"}, token=token)
    assert read["title"] == "Inside"
    written = await node.ok("note_create", {"path": f"{NFD_CAFE}/new"}, token=token)
    assert written["created"] is True
    code, _ = await node.fails("note_create", {"path": "CAFÉ/new"}, token=token)
    assert code == "forbidden"
    cased = node.token("read", paths={"default": {"read": ["public/secret"]}})
    code, _ = await node.fails("note_read", {"path": "public/Secret/a"}, token=cased)
    assert code == "not_found"


async def test_a_name_is_one_note_in_either_normal_form(
    start_node: NodeFactory, tmp_path: Path
) -> None:
    """A model types `café` composed where macOS stored it decomposed: the composed spelling
    reads, writes and lists the stored note, and a create in it is told the note exists
    instead of making a second `café` that looks the same. A new name is stored composed."""
    node = await spelled_node(start_node, tmp_path)
    root = tmp_path / "data" / "default"
    token = node.token("read write delete")
    read = await node.ok("note_read", {"path": "café/inside"}, token=token)
    assert (read["path"], read["title"]) == (f"{NFD_CAFE}/inside.md", "Inside")
    code, _ = await node.fails("note_create", {"path": "café/inside", "content": "x"}, token=token)
    assert code == "exists"
    made = await node.ok("note_create", {"path": "café/new", "content": "x"}, token=token)
    assert made["path"] == f"{NFD_CAFE}/new.md"
    appended = {"path": "café/new", "mode": "append_to_note", "content": "more"}
    assert (await node.ok("note_section_edit", appended, token=token))["path"] == made["path"]
    fresh = await node.ok("note_create", {"path": unicodedata.normalize("NFD", "crème/brûlée")})
    assert fresh["path"] == "crème/brûlée.md"
    assert (root / "crème" / "brûlée.md").is_file()
    assert sorted(p.name for p in root.iterdir() if p.name.startswith("ca")) == [NFD_CAFE]
    listed = await node.ok("note_list", {"prefix": "café"}, token=token)
    assert sorted(e["path"] for e in listed["entries"]) == [
        f"{NFD_CAFE}/inside.md",
        f"{NFD_CAFE}/new.md",
    ]


async def test_a_link_typed_composed_reaches_a_note_stored_decomposed(
    start_node: NodeFactory, tmp_path: Path
) -> None:
    """Backlinks, broken links and a move's link updates see `[[café/inside]]` typed composed
    as the link to the note macOS stored decomposed."""
    node = await spelled_node(start_node, tmp_path)
    text = "See [[café/inside]] and [[public/café/menu|the menu]].\n"
    await node.ok("note_create", {"path": "links", "content": text})
    incoming = await node.ok("note_backlinks", {"path": "café/inside"})
    assert [link["path"] for link in incoming["incoming"]] == ["links.md"]
    outgoing = await node.ok("note_backlinks", {"path": "links"})
    assert "broken" not in outgoing
    moved = await node.ok("note_move", {"path": "café/inside", "to": "kept/inside"})
    assert moved["link_updates"]
    linking = (tmp_path / "data" / "default" / "links.md").read_text()
    assert "See [[kept/inside]] and [[public/café/menu|the menu]]." in linking


async def test_a_hidden_name_is_answered_in_the_spelling_asked(
    start_node: NodeFactory, tmp_path: Path
) -> None:
    """The stored spelling of a name the rules hide is never told, not even by the bytes of
    an error message."""
    node = await spelled_node(start_node, tmp_path)
    token = node.token("read write", paths={"default": {"read": ["public"], "write": ["public"],
                                                        "exclude": ["public/café"]}})  # fmt: skip
    for tool, arguments in (
        ("note_read", {"path": "public/café/menu"}),
        ("note_create", {"path": "public/café/menu", "content": "x"}),
    ):
        _, message = await node.fails(tool, arguments, token=token)
        assert NFD_CAFE not in message, (tool, message)
        assert "public/café/menu" in message, (tool, message)


async def test_a_hidden_templates_folder_answers_as_one_that_is_not_there(
    start_node: NodeFactory, tmp_path: Path
) -> None:
    there = await team_node(start_node, tmp_path / "there", links=False)
    gone = await team_node(start_node, tmp_path / "gone", links=False)
    (gone.data / "team" / "templates" / "meeting.md").unlink()
    (gone.data / "team" / "templates").rmdir()
    for arguments in ({}, {"template": "meeting", "path": "public/drafts/m"}):
        hidden = await there.call(
            "note_from_template", {"vault": "team", **arguments}, token=team(there)
        )
        missing = await gone.call(
            "note_from_template", {"vault": "team", **arguments}, token=team(gone)
        )
        assert hidden == missing, arguments
    listed = await there.ok("note_from_template", {"vault": "team"})
    assert listed["templates"] == ["meeting"]  # a caller that may see it is told
