"""Folder-scoped access through the node: a token whose path rules reach `projects/acme/`
(writing only to its inbox, never to its hr folder) meets a vault that holds nothing else."""

from __future__ import annotations

import base64
import os
import random
import unicodedata
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from tickets import Reach
from vault_node.testing import Harness, NodeFactory, steady, write_files

pytestmark = pytest.mark.asyncio

FILES: dict[str, str | bytes] = {
    "projects/acme/plan.md": "---\ntags: [acme]\n---\n# Plan\n\nThe launch plan. See [[secret]].\n"
    "- [ ] ship it\n",
    "projects/acme/inbox/idea.md": "# Idea\n\nA launch idea for [[plan]].\n",
    "projects/acme/hr/salaries.md": "---\ntags: [acme, hr]\n---\n# Salaries\n\nlaunch bonus\n"
    "- [ ] pay\n",
    "projects/other/secret.md": "---\ntags: [secret]\n---\n# Secret\n\nlaunch codes [[plan]]\n",
    "projects/acme/logo.png": b"\x89PNG\r\n\x1a\n",
    "projects/other/map.png": b"\x89PNG\r\n\x1a\n",
}
RULES = {
    "default": {
        "read": ["projects/acme"],
        "write": ["projects/acme/inbox"],
        "exclude": ["projects/acme/hr"],
    }
}
VISIBLE = ["projects/acme/inbox/idea.md", "projects/acme/plan.md"]


@pytest_asyncio.fixture
async def node(start_node: NodeFactory) -> Harness:
    return await start_node(FILES)


def acme(node: Harness, scope: str = "read write delete") -> str:
    return node.token(scope, paths=RULES)


async def test_every_listing_and_count_holds_only_the_visible_notes(node: Harness) -> None:
    token = acme(node)
    listed = await node.ok("note_list", {"limit": 100}, token=token)
    assert sorted(f["path"] for f in listed["entries"]) == [
        "projects/acme/inbox/idea.md",
        "projects/acme/logo.png",
        "projects/acme/plan.md",
    ]
    found = await node.ok("note_search", {"query": "launch"}, token=token)
    assert sorted(hit["path"] for hit in found["hits"]) == VISIBLE
    assert found["total"] == 2
    grep = await node.ok("vault_grep", {"pattern": "launch"}, token=token)
    assert sorted({m["path"] for m in grep["matches"]}) == VISIBLE
    tags = await node.ok("tag_list", {}, token=token)
    assert {t["tag"]: t["notes"] for t in tags["tags"]} == {"acme": 1}
    tasks = await node.ok("task_list", {}, token=token)
    assert [t["text"] for t in tasks["tasks"]] == ["ship it"]
    files = await node.ok("attachment_list", {"prefix": "projects"}, token=token)
    assert [a["path"] for a in files["attachments"]] == ["projects/acme/logo.png"]
    stats = (await node.ok("vault_stats", {}, token=token))["stats"]
    assert (stats["notes"], stats["attachments"], stats["tags"]) == (2, 1, 1)
    vaults = await node.ok("vault_list", {}, token=token)
    assert [(v["name"], v["notes"]) for v in vaults["vaults"]] == [("default", 2)]


async def test_a_link_to_an_invisible_note_shows_only_its_text(node: Harness) -> None:
    graph = await node.ok("note_backlinks", {"path": "projects/acme/plan"}, token=acme(node))
    assert [row["path"] for row in graph["incoming"]] == ["projects/acme/inbox/idea.md"]
    text = str(graph)
    assert "projects/other" not in text
    assert "salaries" not in text


async def test_an_invisible_note_is_not_found_exactly_like_a_missing_one(node: Harness) -> None:
    token = acme(node)
    for tool in ("note_read", "note_outline", "note_backlinks", "note_history"):
        hidden = await node.fails(tool, {"path": "projects/other/secret"}, token=token)
        missing = await node.fails(tool, {"path": "projects/other/nothing"}, token=token)
        assert hidden[0] == missing[0] == "not_found", tool
        assert hidden[1].replace("secret", "nothing") == missing[1], tool
    hidden_png = await node.fails(
        "attachment_read", {"path": "projects/other/map.png"}, token=token
    )
    missing_png = await node.fails("attachment_read", {"path": "projects/other/x.png"}, token=token)
    assert hidden_png[1].replace("map", "x") == missing_png[1]


async def test_a_write_outside_the_write_rules_is_refused_naming_the_rules(node: Harness) -> None:
    token = acme(node)
    for path in ("projects/acme/plan", "projects/other/secret", "projects/none"):
        code, message = await node.fails(
            "note_write", {"path": path, "content": "x", "content_hash": "0" * 32}, token=token
        )
        assert code == "forbidden", path
        assert "read projects/acme; write projects/acme/inbox; except projects/acme/hr" in message
    made = await node.ok("note_create", {"path": "projects/acme/inbox/new"}, token=token)
    assert made["created"] is True
    picture = base64.b64encode(b"\x89PNG\r\n\x1a\n").decode()
    code, _ = await node.fails(
        "attachment_put", {"path": "projects/acme/x.png", "data": picture}, token=token
    )
    assert code == "forbidden"
    assert (node.data / "default/projects/other/secret.md").read_text().startswith("---")


async def test_a_write_only_token_with_rules_is_still_blind(node: Harness) -> None:
    token = node.token("write", paths=RULES)
    inside = await node.call("note_create", {"path": "projects/acme/inbox/plan"}, token=token)
    assert not inside["isError"]
    answers = []
    for path in ("projects/other/secret", "projects/other/nothing"):
        result = await node.call("note_create", {"path": path}, token=token)
        answers.append(result["content"][0]["text"].replace(path, "PATH"))
    assert answers[0] == answers[1]


async def test_vault_create_needs_a_token_without_rules(node: Harness) -> None:
    code, message = await node.fails(
        "vault_create", {"name": "mine"}, token=node.token(paths=RULES)
    )
    assert code == "forbidden"
    assert "without path rules" in message


async def test_resources_and_completions_see_only_the_visible_notes(node: Harness) -> None:
    token = acme(node)
    listed = (await node.rpc("resources/list", {}, token=token))["result"]["resources"]
    assert sorted(r["name"] for r in listed) == [
        "projects/acme/inbox/idea.md",
        "projects/acme/logo.png",
        "projects/acme/plan.md",
    ]
    reply = await node.rpc(
        "resources/read", {"uri": "secondbrain://default/projects/other/secret.md"}, token=token
    )
    assert reply["error"]["data"]["code"] == "not_found"
    completion: dict[str, Any] = await node.rpc(
        "completion/complete",
        {
            "ref": {"type": "ref/resource", "uri": "secondbrain://{vault}/{+path}"},
            "argument": {"name": "path", "value": "projects/"},
            "context": {"arguments": {"vault": "default"}},
        },
        token=token,
    )
    values = completion["result"]["completion"]["values"]
    assert values
    assert all(value.startswith("projects/acme/") for value in values)
    assert not any("/hr/" in value for value in values)


async def test_history_shows_a_restricted_caller_only_its_own_paths(node: Harness) -> None:
    owner = node.default_token
    await node.ok("note_move", {"path": "projects/other/secret", "to": "projects/acme/found"})
    history = await node.ok("note_history", {"path": "projects/acme/found"}, token=acme(node))
    assert history["revisions"]
    assert all(r["path"] == "projects/acme/found.md" for r in history["revisions"])
    assert "projects/other" not in str(history)
    full = await node.ok("note_history", {"path": "projects/acme/found"}, token=owner)
    assert any("projects/other" in r["message"] for r in full["revisions"])


async def test_a_revision_from_before_a_move_out_of_an_invisible_folder_is_not_found(
    node: Harness,
) -> None:
    found = "projects/acme/found"
    await node.ok("note_move", {"path": "projects/other/secret", "to": found})
    await node.ok("note_edit", {"path": found, "old_string": "codes", "new_string": "gone"})
    full = await node.ok("note_history", {"path": found})
    hidden = [r["commit"] for r in full["revisions"] if r["path"].startswith("projects/other/")]
    token = node.token("read write", paths={"default": {"read": ["projects/acme"]}})
    seen = await node.ok("note_history", {"path": found}, token=token)
    moved = seen["revisions"][-1]["commit"]  # the move: the oldest revision it may see
    assert hidden
    assert not {r["commit"] for r in seen["revisions"]} & set(hidden)
    for revision in hidden:
        for tool, arguments in [
            ("note_diff", {"path": found, "from": revision}),
            ("note_diff", {"path": found, "from": moved, "to": revision}),
            ("note_restore", {"path": found, "revision": revision, "dry_run": True}),
        ]:
            code, message = await node.fails(tool, arguments, token=token)
            assert code == "not_found", tool
            assert message.startswith(f"{found}.md does not exist in revision {revision}")
            assert message.endswith("; call note_history")
            assert "projects/other" not in message
    shown = await node.ok("note_diff", {"path": found, "from": moved}, token=token)
    assert "-launch codes" in shown["diff"]  # its text since the move is its own to see
    assert "+launch gone" in shown["diff"]
    owner = await node.ok("note_diff", {"path": found, "from": hidden[0]})
    assert "launch codes" in owner["diff"]


async def test_daily_range_lists_only_the_visible_days(start_node: NodeFactory) -> None:
    node = await start_node({**FILES, "journal/2026/2026-01-01.md": "# Day one\n\nlaunch\n"})
    week = {"from": "2025-12-30", "to": "2026-01-05"}
    every = await node.ok("daily_range", week)
    hidden = await node.ok("daily_range", week, token=acme(node))
    journal = {"default": {"read": ["projects/acme", "journal"]}}
    shown = await node.ok("daily_range", week, token=node.token("read", paths=journal))
    assert every["days_with_notes"] == shown["days_with_notes"] == 1
    assert (hidden["days_with_notes"], hidden["days"]) == (0, [])
    assert "Day one" not in str(hidden)


async def test_a_template_the_caller_may_read_is_still_written_only_within_the_rules(
    start_node: NodeFactory,
) -> None:
    node = await start_node({**FILES, "templates/meeting.md": "# {{title}}\n"})
    rules = {"default": {"read": ["projects/acme", "templates"], "write": ["projects/acme/inbox"]}}
    token = node.token("read write", paths=rules)
    code, message = await node.fails(
        "note_from_template",
        {"template": "meeting", "title": "Kickoff", "path": "projects/acme/kickoff"},
        token=token,
    )
    assert code == "forbidden"
    assert "write projects/acme/inbox" in message
    assert not (node.data / "default/projects/acme/kickoff.md").exists()
    made = await node.ok(
        "note_from_template",
        {"template": "meeting", "title": "Kickoff", "path": "projects/acme/inbox/kickoff"},
        token=token,
    )
    assert made["created"] is True


async def test_a_move_that_would_rewrite_invisible_notes_is_refused(node: Harness) -> None:
    token = node.token("read write delete", paths={"default": {"read": ["projects/acme"]}})
    code, message = await node.fails(
        "note_move", {"path": "projects/acme/plan", "to": "projects/acme/plan2"}, token=token
    )
    assert code == "forbidden"
    assert "nothing was changed" in message
    assert (node.data / "default/projects/acme/plan.md").exists()


async def test_a_rename_or_replace_changes_only_notes_within_the_write_rules(
    node: Harness,
) -> None:
    token = node.token(
        "read write delete",
        paths={"default": {"read": ["projects/acme"], "write": ["projects/acme/inbox"]}},
    )
    replaced = await node.ok(
        "vault_replace", {"pattern": "launch", "replace": "start", "dry_run": False}, token=token
    )
    rows = {row["path"]: row for row in replaced["notes"]}
    assert sorted(rows) == [
        "projects/acme/hr/salaries.md",
        "projects/acme/inbox/idea.md",
        "projects/acme/plan.md",
    ]
    assert "content_hash" in rows["projects/acme/inbox/idea.md"]
    assert "outside where you may write" in rows["projects/acme/plan.md"]["error"]
    assert "start idea" in (node.data / "default/projects/acme/inbox/idea.md").read_text()
    assert "launch plan" in (node.data / "default/projects/acme/plan.md").read_text()
    assert "launch codes" in (node.data / "default/projects/other/secret.md").read_text()
    renamed = await node.ok(
        "tag_rename", {"from": "acme", "to": "ac", "dry_run": False}, token=token
    )
    assert renamed["count"] == 0
    assert {row["code"] for row in renamed["skipped"]} == {"forbidden"}
    assert "secret" not in str(renamed)


READ_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("note_list", {"sort": "path", "limit": 100}),
    ("note_search", {"query": "launch"}),
    ("note_search", {"query": "", "tags": ["acme"]}),
    ("vault_grep", {"pattern": "launch|idea"}),
    ("tag_list", {}),
    ("task_list", {"include_done": True}),
    ("attachment_list", {"prefix": "projects"}),
    ("note_backlinks", {"path": "projects/acme/plan"}),
    ("note_outline", {"path": "projects/acme/plan"}),
    ("note_read", {"path": "projects/acme/inbox/idea"}),
    ("note_related", {"path": "projects/acme/plan"}),
    ("vault_stats", {}),
    ("vault_review", {}),
]


async def test_every_read_tool_answers_as_over_a_vault_of_only_the_visible_notes(
    start_node: NodeFactory, tmp_path: Path
) -> None:
    whole = await start_node(FILES)
    reach = RULES["default"]
    visible = {
        rel: text
        for rel, text in FILES.items()
        if any(rel.startswith(r + "/") for r in reach["read"])
        and not any(rel.startswith(e + "/") for e in reach["exclude"])
    }
    part = await start_node(visible, data_dir=tmp_path / "part")
    for tool, arguments in READ_CALLS:
        restricted = await whole.ok(tool, arguments, token=acme(whole))
        alone = await part.ok(tool, arguments)
        assert steady(restricted) == steady(alone), tool
        if tool == "note_search":  # BM25 under rules weighs terms over the visible notes
            assert [h["score"] for h in restricted["hits"]] == [h["score"] for h in alone["hits"]]


def outside_write_rules(node: Harness) -> dict[str, bytes]:
    root = node.data / "default"
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file()
        and ".git" not in p.parts
        and ".secondbrain" not in p.parts
        and not p.relative_to(root).as_posix().startswith("projects/acme/inbox/")
    }


async def test_no_write_tool_changes_a_byte_outside_the_write_rules(node: Harness) -> None:
    token = acme(node)
    before = outside_write_rules(node)
    zero = "0" * 32
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n").decode()
    calls: list[tuple[str, dict[str, Any]]] = []
    for path in ("projects/acme/plan", "projects/other/secret", "projects/acme/hr/salaries"):
        calls += [
            ("note_create", {"path": path, "overwrite": True}),
            ("note_write", {"path": path, "content": "x", "content_hash": zero}),
            ("note_edit", {"path": path, "old_string": "launch", "new_string": "x"}),
            ("note_section_edit", {"path": path, "mode": "append_to_note", "content": "x"}),
            ("note_frontmatter", {"path": path, "set": {"x": 1}}),
            ("note_delete", {"path": path}),
            ("task_toggle", {"path": path, "line": 6}),
            ("note_move", {"path": path, "to": "projects/acme/inbox/moved"}),
            ("note_move", {"path": "projects/acme/inbox/idea", "to": path}),
            ("note_merge", {"path": "projects/acme/inbox/idea", "from": path}),
            ("note_merge", {"path": path, "from": "projects/acme/inbox/idea"}),
            ("note_split", {"path": path, "level": 1}),
            ("note_restore", {"path": path, "revision": "HEAD"}),
        ]
    calls += [
        ("attachment_put", {"path": "projects/other/new.png", "data": png, "overwrite": True}),
        ("attachment_put", {"path": "projects/acme/logo.png", "data": png, "overwrite": True}),
        ("note_from_template", {"template": "none", "title": "x", "path": "projects/x"}),
        ("daily_note", {"append": "x"}),
        ("inbox_capture", {"text": "x"}),
        ("note_split", {"path": "projects/acme/inbox/idea", "level": 1, "dir": "projects"}),
        ("tag_rename", {"from": "acme", "to": "other", "dry_run": False}),
        ("tag_rename", {"from": "secret", "to": "other", "dry_run": False}),
        ("vault_replace", {"pattern": "launch", "replace": "x", "dry_run": False}),
    ]
    for tool, arguments in calls:
        await node.call(tool, arguments, token=token)
    assert outside_write_rules(node) == before


FOLDERS = ["a", "a/b", "a/b/c", "ab", "b", "b/a", "b/A", "café", "café/é", "journal/2026"]
"""Rules name these folders in NFC; the vaults store them decomposed (NFD), as macOS does,
and `b/A` is excluded with `b/a`."""
WORDS = ["apple", "berry", "cherry", "date", "elder"]


def random_vault(rng: random.Random) -> tuple[dict[str, str | bytes], dict[str, Any]]:
    """A vault of a dozen notes across nested folders (names unique: a name link resolves
    the same in both vaults), linking each other by name and by path, with tags, tasks and
    an attachment; and rules reading one or two folders, minus one below, writing in one."""
    rels = [f"{rng.choice(FOLDERS)}/n{i}.md" for i in range(rng.randint(4, 12))]
    files: dict[str, str | bytes] = {}
    for i, rel in enumerate(rels):
        tags = rng.sample(["x", "y", "x/z"], rng.randint(0, 2))
        links = [f"[[n{rng.randrange(len(rels))}]]", f"[[{rng.choice(rels)[:-3]}]]"]
        body = " ".join(rng.choices(WORDS, k=rng.randint(1, 6)))
        task = f"- [{rng.choice(' x')}] task {i}"
        files[rel] = (
            f"---\ntags: [{', '.join(tags)}]\n---\n# N{i}\n\n{body}\n{' '.join(links)}\n{task}\n"
        )
    files[f"{rng.choice(FOLDERS)}/pic.png"] = b"\x89PNG\r\n\x1a\n"
    read = rng.sample(FOLDERS[:-1], rng.randint(1, 2))
    below = [f for f in FOLDERS if f not in read and any(f.startswith(r + "/") for r in read)]
    exclude = rng.sample(below, 1) if below and rng.random() < 0.5 else []
    files[f"{read[0]}/seen.md"] = "# Seen\n\napple [[n0]]\n"  # one visible note at least
    stored = {unicodedata.normalize("NFD", rel): text for rel, text in files.items()}
    return stored, {"read": read, "write": [read[0]], "exclude": exclude}


def plant_links(root: Path, rng: random.Random, files: dict[str, str | bytes]) -> list[Path]:
    """Symbolic links to notes and folders, from anywhere: none is a note of its own."""
    planted = []
    for i in range(rng.randint(1, 4)):
        link = root / unicodedata.normalize("NFD", f"{rng.choice(FOLDERS)}/link{i}")
        target = root / rng.choice([*files, *(unicodedata.normalize("NFD", f) for f in FOLDERS)])
        if target.name.endswith(".md"):
            link = link.with_name(link.name + ".md")
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(target, link.parent))
        planted.append(link)
    return planted


def reads(rules: dict[str, Any], rel: str) -> bool:
    return Reach.of(rules["read"], rules["write"], rules["exclude"]).reads(rel)


@pytest.mark.parametrize("seed", range(8))
async def test_random_vaults_and_rules_read_as_vaults_of_only_the_visible_notes(
    start_node: NodeFactory, tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    files, rules = random_vault(rng)
    visible = {rel: text for rel, text in files.items() if reads(rules, rel)}
    write_files(tmp_path / "data" / "default", files)
    plant_links(tmp_path / "data" / "default", rng, files)
    whole = await start_node(files)
    part = await start_node(visible, data_dir=tmp_path / "part")
    token = whole.token("read write delete", paths={"default": rules})
    notes = sorted(rel for rel in visible if rel.endswith(".md"))
    calls = [c for c in READ_CALLS if "path" not in c[1]] + [
        ("note_search", {"query": "apple berry"}),
        ("note_search", {"query": "", "tags": ["x"]}),
        ("daily_range", {"from": "2026-01-01", "to": "2026-01-07"}),
    ]
    for rel in notes[:3]:
        calls += [(tool, {"path": rel}) for tool in ("note_read", "note_backlinks", "note_outline")]
    for tool, arguments in calls:
        restricted = await whole.ok(tool, arguments, token=token)
        assert steady(restricted) == steady(await part.ok(tool, arguments)), (seed, tool)
    for rel in sorted(set(files) - set(visible))[:3]:  # an invisible note reads as a missing one
        code, message = await whole.fails("note_read", {"path": rel}, token=token)
        assert code == "not_found"
        assert message == (await part.fails("note_read", {"path": rel}))[1]


@pytest.mark.parametrize("seed", range(8))
async def test_random_writes_under_random_rules_change_nothing_outside_them(
    start_node: NodeFactory, tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    files, rules = random_vault(rng)
    write_files(tmp_path / "data" / "default", files)
    links = plant_links(tmp_path / "data" / "default", rng, files)
    node = await start_node(files)
    token = node.token("read write delete", paths={"default": rules})
    root = node.data / "default"

    def outside() -> dict[str, bytes]:
        return {
            p.relative_to(root).as_posix(): p.read_bytes()
            for p in root.rglob("*")
            if p.is_file()
            and not p.is_symlink()  # a link is judged where it leads, the file there itself
            and not {".git", ".secondbrain", ".trash"} & set(p.parts)
            and not unicodedata.normalize("NFC", p.relative_to(root).as_posix()).startswith(
                rules["write"][0] + "/"
            )
        }

    before = outside()
    targets = [rel[:-3] for rel in files if rel.endswith(".md")] + [f"{f}/new" for f in FOLDERS]
    for _ in range(30):
        path, other = rng.choice(targets), rng.choice(targets)
        tool, arguments = rng.choice(
            [
                ("note_create", {"path": path, "overwrite": True}),
                ("note_edit", {"path": path, "old_string": "task", "new_string": "job"}),
                ("note_section_edit", {"path": path, "mode": "append_to_note", "content": "x"}),
                ("note_frontmatter", {"path": path, "set": {"x": 1}}),
                ("note_delete", {"path": path}),
                ("task_toggle", {"path": path, "line": 8}),
                ("note_move", {"path": path, "to": other}),
                ("note_merge", {"path": path, "from": other}),
                ("tag_rename", {"from": "x", "to": "w", "dry_run": False}),
                ("vault_replace", {"pattern": "apple", "replace": "pear", "dry_run": False}),
            ]
        )
        await node.call(tool, arguments, token=token)
    assert outside() == before
    assert all(link.is_symlink() for link in links)  # none replaced by a copy
