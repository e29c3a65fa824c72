"""Every path argument of every tool refuses a table of hostile paths — among them paths that
are not valid Unicode and paths through links into `.git`, `.secondbrain` and `.obsidian` —
and nothing outside the vault or inside its hidden folders is read or written while refusing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from vault_core.testing import snapshot
from vault_node.testing import NodeFactory

pytestmark = pytest.mark.asyncio

HOSTILE = [
    "../outside",
    "../../etc/passwd",
    "/etc/passwd",
    "wiki/../../outside",
    ".secondbrain/index.db",
    ".git/config",
    "wiki/.hidden",
    "C:/Windows/win.ini",
    "..\\outside",
    "wiki/\x00x",
    "wiki//x",
    "link-out/secret",
    "wiki/\udc80x",
    "\ud83d",
    "wiki/\u202egpj",  # shows as "jpg" reversed: a name passing for another
    "wiki/x\x85y",
    "wiki/" + "x" * 256,  # a name no file system holds
    "é" * 128 + "/x",
    # through links into the vault's own dot folders (made in the test)
    "link-git/config",
    "link-git/new",
    "link-git/hooks/x",
    "cfg",
    "link-state/instructions",
    "instructions",
    "link-obsidian/app",
    "obsidian-app",
    "wiki/deep-git/HEAD",
]
THROUGH_LINKS = ("link-", "cfg", "instructions", "obsidian-app", "wiki/deep-git")
LINKS = {
    "link-git": ".git",
    "cfg": ".git/config",  # a note path gets .md, an attachment path .png: a link for each
    "cfg.md": ".git/config",
    "cfg.png": ".git/config",
    "link-state": ".secondbrain",
    "instructions": ".secondbrain/instructions.md",
    "instructions.md": ".secondbrain/instructions.md",
    "instructions.png": ".secondbrain/instructions.md",
    "link-obsidian": ".obsidian",
    "obsidian-app": ".obsidian/app.json",
    "obsidian-app.md": ".obsidian/app.json",
    "obsidian-app.png": ".obsidian/app.json",
    "wiki/deep-git": "../.git",
}

# (tool, the path argument, the other arguments the call needs)
PATH_ARGUMENTS: list[tuple[str, str, dict[str, Any]]] = [
    ("note_list", "prefix", {}),
    ("note_search", "prefix", {}),
    ("vault_grep", "prefix", {"pattern": "x"}),
    ("note_read", "path", {}),
    ("note_outline", "path", {}),
    ("note_backlinks", "path", {}),
    ("note_related", "path", {}),
    ("task_list", "prefix", {}),
    ("attachment_list", "prefix", {}),
    ("note_history", "path", {}),
    ("note_diff", "path", {}),
    ("note_create", "path", {}),
    ("note_write", "path", {"content": "x", "content_hash": "00"}),
    ("note_edit", "path", {"old_string": "a", "new_string": "b"}),
    ("note_section_edit", "path", {"mode": "append_to_note", "content": "x", "create": True}),
    ("note_frontmatter", "path", {"unset": ["x"]}),
    ("note_delete", "path", {}),
    ("note_from_template", "template", {}),
    ("note_from_template", "path", {"template": "meeting"}),
    ("note_move", "path", {"to": "wiki/moved"}),
    ("note_move", "to", {"path": "wiki/backoff"}),
    ("note_merge", "path", {"from": "wiki/backoff"}),
    ("note_merge", "from", {"path": "wiki/backoff"}),
    ("note_split", "path", {}),
    ("note_split", "dir", {"path": "wiki/rate-limiting"}),
    ("task_toggle", "path", {"line": 1}),
    ("attachment_put", "path", {"data": "AAAA"}),
    ("note_restore", "path", {"revision": "abcd"}),
    ("vault_replace", "prefix", {"pattern": "x", "replace": "y", "dry_run": False}),
]


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    secret = tmp_path / "data" / "outside.md"
    secret.parent.mkdir(parents=True, exist_ok=True)
    secret.write_text("# outside the vault\n")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "secret.md").write_text("# secret\n")
    return tmp_path


@pytest.mark.parametrize(
    ("tool", "argument", "others"), PATH_ARGUMENTS, ids=[f"{t}.{a}" for t, a, _ in PATH_ARGUMENTS]
)
async def test_a_hostile_path_is_refused_and_touches_nothing(
    start_node: NodeFactory, outside: Path, tool: str, argument: str, others: dict[str, Any]
) -> None:
    node = await start_node()
    vault = node.data / "default"
    (vault / "link-out").symlink_to(outside / "elsewhere", target_is_directory=True)
    (vault / ".obsidian").mkdir()
    (vault / ".obsidian" / "app.json").write_text("{}\n")
    (vault / ".secondbrain" / "instructions.md").write_text("# Instructions\n")
    for link, target in LINKS.items():
        (vault / link).symlink_to(target)
    before = snapshot(outside)
    for hostile in HOSTILE:
        if argument == "template" and hostile.startswith(THROUGH_LINKS):
            continue  # resolves to templates/…, which the symlinks do not reach
        arguments = {**others, argument: hostile}
        suffix = ".png" if tool == "attachment_put" else ""
        if suffix:
            arguments[argument] = hostile + suffix
        code, message = await node.fails(tool, arguments)
        assert code == "invalid_path", (tool, argument, hostile, message)
        assert str(outside) not in message
    after = snapshot(outside)
    changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
    assert all(k.startswith("data/default/.secondbrain/index.db") for k in changed), changed


async def test_a_name_that_md_makes_too_long_is_an_invalid_path(start_node: NodeFactory) -> None:
    node = await start_node()
    for tool, others in (("note_read", {}), ("note_create", {}), ("note_move", {"to": "x"})):
        code, message = await node.fails(tool, {**others, "path": "wiki/" + "x" * 253})
        assert code == "invalid_path", tool
        assert "longer than 255 bytes" in message
