"""Over a broad matrix of calls, no note content and no token in any log line
(docs/design.md#tool-call-log, docs/design.md#testing)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from fpdf import FPDF
from structlog.testing import capture_logs

from vault_node.testing import NodeFactory

pytestmark = pytest.mark.asyncio

SECRET = "SECRET-NOTE-TEXT-4711"
TYPED = "TYPED-BY-THE-MODEL-0815"
FILES: dict[str, str | bytes] = {
    "wiki/a.md": f"---\ntitle: A\ntags: [x]\nsecret: {SECRET}\n---\n# A\n\n{SECRET}\n\n## Part\n\n"
    f"- [ ] task {SECRET}\n[[b]] and #x\n",
    "wiki/b.md": f"# B\n\n{SECRET} [[a]]\n\n## One\n\n{SECRET}\n\n## Two\n\n{SECRET}\n",
    "templates/t.md": f"# {{{{title}}}}\n\n{SECRET}\n",
    "raw/broken.md": f"---\ntitle: [unclosed {SECRET}\n---\nbody {SECRET}\n",
}

MATRIX: list[tuple[str, dict[str, Any]]] = [
    ("vault_list", {}),
    ("vault_stats", {}),
    ("note_list", {}),
    ("note_search", {"query": SECRET}),
    ("note_search", {"query": f'"{TYPED}'}),
    ("vault_grep", {"pattern": SECRET}),
    ("vault_grep", {"pattern": f"({TYPED}"}),
    ("note_read", {"path": "wiki/a"}),
    ("note_read", {"path": "wiki/a", "heading": TYPED}),
    ("note_read", {"path": "raw/broken"}),
    ("note_outline", {"path": "wiki/a"}),
    ("note_backlinks", {"path": "wiki/a"}),
    ("note_related", {"path": "wiki/a"}),
    ("tag_list", {}),
    ("task_list", {}),
    ("daily_range", {"empty": True}),
    ("attachment_list", {"prefix": ""}),
    ("note_create", {"path": "wiki/c", "content": TYPED}),
    ("note_create", {"path": "wiki/a", "content": TYPED}),
    (
        "note_edit",
        {"path": "wiki/a", "old_string": SECRET, "new_string": TYPED, "replace_all": True},
    ),
    ("note_edit", {"path": "wiki/b", "old_string": TYPED, "new_string": "x"}),
    (
        "note_section_edit",
        {"path": "wiki/b", "mode": "append_to_section", "heading": "One", "content": TYPED},
    ),
    ("note_frontmatter", {"path": "wiki/b", "set": {"k": TYPED}}),
    ("note_frontmatter", {"path": "raw/broken", "set": {"k": TYPED}}),
    ("note_from_template", {"template": "t", "title": TYPED}),
    ("daily_note", {"append": TYPED}),
    ("inbox_capture", {"text": TYPED, "source": TYPED}),
    ("task_toggle", {"path": "wiki/a", "text": TYPED}),
    (
        "attachment_put",
        {"path": "attachments/p.png", "data": base64.b64encode(TYPED.encode()).decode()},
    ),
    ("tag_rename", {"from": "x", "to": "y", "dry_run": False}),
    ("vault_replace", {"pattern": SECRET, "replace": TYPED}),
    ("vault_replace", {"pattern": SECRET, "replace": TYPED, "dry_run": False}),
    ("note_split", {"path": "wiki/b"}),
    ("note_move", {"path": "wiki/b", "to": "wiki/bee"}),
    ("note_merge", {"path": "wiki/a", "from": "wiki/c"}),
    ("note_history", {"path": "wiki/a"}),
    ("note_diff", {"path": "wiki/a"}),
    ("vault_review", {}),
    ("note_write", {"path": "wiki/a", "content": TYPED, "content_hash": "0" * 32}),
    ("note_delete", {"path": "wiki/a"}),
]


async def test_no_note_content_and_no_token_in_any_log_line(start_node: NodeFactory) -> None:
    node = await start_node(FILES)
    with capture_logs() as logs:
        for tool, arguments in MATRIX:
            await node.call(tool, arguments)
        await node.call("note_restore", {"path": "wiki/a", "revision": await first_revision(node)})
        await node.post(
            {"jsonrpc": "2.0", "id": 1, "method": "ping"}, token=node.default_token + "x"
        )
        await node.post(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "note_delete", "arguments": {"path": "wiki/b"}},
            },
            token=node.token("read", role="reader"),
        )
    lines = json.dumps(logs, default=str)
    calls = [line for line in logs if line["event"] == "tool_call"]
    assert len(calls) == len(MATRIX) + 2
    assert SECRET not in lines
    assert TYPED not in lines
    assert node.default_token.split(".")[2] not in lines
    assert any(line["event"] == "auth_failed" for line in logs)


async def first_revision(node: Any) -> str:
    history = await node.ok("note_history", {"path": "wiki/a"})
    revision: str = history["revisions"][-1]["commit"]
    return revision


def _secret_pdf() -> bytes:
    document = FPDF()
    document.set_font("helvetica", size=12)
    for text in ("cover", "body", f"page three holds {SECRET}"):
        document.add_page()
        document.multi_cell(0, 10, text)
    return bytes(document.output())


async def test_resources_prompts_and_attachments_log_no_content(start_node: NodeFactory) -> None:
    node = await start_node({**FILES, "attachments/s.pdf": _secret_pdf()})
    with capture_logs() as logs:
        await node.ok("attachment_read", {"path": "attachments/s.pdf"})
        await node.rpc("resources/list")
        await node.rpc("resources/read", {"uri": "secondbrain://default/wiki/a.md"})
        await node.rpc("resources/read", {"uri": "secondbrain://default/attachments/s.pdf"})
        await node.rpc("resources/read", {"uri": f"secondbrain://default/{TYPED}.md"})
        for name, arguments in (
            ("what_do_i_know", {"topic": SECRET}),
            ("meeting_capture", {"title": TYPED, "notes": TYPED}),
            ("daily_review", {}),
        ):
            await node.rpc("prompts/get", {"name": name, "arguments": arguments})
    lines = json.dumps(logs, default=str)
    assert any(line["event"] == "resource_read" for line in logs)
    assert SECRET not in lines
    assert TYPED not in lines.replace(f"{TYPED}.md", "")  # a path may be logged, never text
