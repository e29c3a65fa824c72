"""Write-only is blind: a caller that may write but not read reaches only the tools that add
without looking, and nothing it is told depends on what the vault already holds."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest

from vault_node.registry import BLIND, TOOLS
from vault_node.testing import Harness, NodeFactory

pytestmark = pytest.mark.asyncio

ADDING = {"note_create", "inbox_capture", "daily_note", "attachment_put"}

# Two vaults with the same file names and different contents: everything a note can hold that
# an answer might betray — frontmatter (readable, malformed, an alias), headings that match the
# calls below or not, tasks, tags, sizes, line endings, a byte-order mark.
SHAPE = (
    "wiki/secret.md",
    "wiki/plans.md",
    "journal/2026/2026-01-01.md",
    "inbox/2026-03-04-1205-idea.md",
    "attachments/pic.png",
)
ONE: dict[str, str | bytes] = {
    SHAPE[0]: "---\ntitle: Secret\ntags: [alpha, beta]\n---\n# Secret\n\nThe code is 1234.\n"
    "- [ ] pay rent\n\n## Log\n\nentry\n",
    SHAPE[1]: "# Plans\n\n" + "word " * 5000 + "\n",
    SHAPE[2]: "---\ntitle: 2026-01-01\ntags: [journal]\n---\n# Thursday\n\n## Log\n\nold\n",
    SHAPE[3]: "---\ntitle: idea\n---\nfirst idea\n",
    SHAPE[4]: b"\x89PNG one",
}
OTHER: dict[str, str | bytes] = {
    SHAPE[0]: "---\ntitle: [unclosed\nkey: &a value\nother: *a\n---\nnothing\r\nhere\r\n",
    SHAPE[1]: "\ufeff# Completely different\n\n## Log (old)\n\n- [x] done\n",
    SHAPE[2]: "no frontmatter at all, no headings\n",
    SHAPE[3]: "x",
    SHAPE[4]: b"GIF89a other, longer bytes" * 40,
}
FIXED = dt.datetime(2026, 3, 4, 12, 5, 7, tzinfo=dt.UTC)

# Every call a blind caller might make, successful or not (a taken path, a displacing
# overwrite, a new day, a dry run, an empty heading).
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("note_create", {"path": "wiki/secret", "content": "mine"}),
    ("note_create", {"path": "wiki/secret.md", "content": "mine", "dry_run": True}),
    ("note_create", {"path": "wiki/secret", "content": "mine", "overwrite": True}),
    ("note_create", {"path": "wiki/new", "content": "# New\n\nfresh", "tags": ["x"]}),
    ("note_create", {"path": "wiki/newer", "content": "draft", "dry_run": True}),
    ("inbox_capture", {"text": "idea", "title": "idea"}),
    ("inbox_capture", {"text": "another thought", "source": "chat"}),
    ("daily_note", {"date": "2026-01-01", "append": "did it", "heading": "Log"}),
    ("daily_note", {"date": "2026-01-01", "append": "and more"}),
    ("daily_note", {"date": "2026-01-01", "append": "maybe", "heading": "Lo", "dry_run": True}),
    ("daily_note", {"date": "2026-01-01", "append": "x", "heading": "###"}),
    ("daily_note", {"date": "2026-01-02", "append": "a new day"}),
    ("daily_note", {"date": "2026-01-01"}),
    ("attachment_put", {"path": "attachments/pic.png", "data": "AAAA"}),
    ("attachment_put", {"path": "attachments/pic.png", "data": "AAAA", "overwrite": True}),
    ("attachment_put", {"path": "attachments/new.png", "data": "iVBORw0K"}),
]


def _same_clock(node: Harness, *vaults: str) -> None:
    for name in vaults:
        vault = node.app.state.node.library.get(name).vault
        vault._clock = lambda: FIXED


async def _answer(node: Harness, token: str, vault: str, tool: str, args: dict[str, Any]) -> str:
    """The whole HTTP answer to one call (status and body), with the vault's name taken out."""
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": {**args, "vault": vault}},
    }
    response = await node.post(message, token=token)
    return f"{response.status_code} {response.text}".replace(vault, "VAULT")


async def test_tools_list_of_a_write_only_token_holds_only_the_adding_tools(
    node: Harness,
) -> None:
    token = node.token("write", role="editor")
    listed = (await node.rpc("tools/list", token=token))["result"]["tools"]
    assert {tool["name"] for tool in listed} == ADDING
    assert set(BLIND) == ADDING


async def test_every_other_tool_is_refused_naming_the_scope_it_needs(node: Harness) -> None:
    token = node.token("write", role="editor")
    for tool in TOOLS:
        if tool.name in ADDING:
            continue
        response = await node.post(
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
             "params": {"name": tool.name, "arguments": {}}},
            token=token,
        )  # fmt: skip
        assert response.status_code == 403, tool.name
        challenge = response.headers["WWW-Authenticate"]
        assert 'error="insufficient_scope"' in challenge
        assert "read" in challenge.split('scope="', 1)[1].split('"', 1)[0].split(), tool.name
        body = response.json()
        assert (body["id"], body["error"]["data"]["code"]) == (1, "forbidden")
        text = body["error"]["message"]
        assert text.startswith(f"{tool.name} needs the ")
        assert "it has write" in text
        assert "write-only token is blind" in text
        assert "inbox_capture" in text


async def test_a_refusal_inside_a_batch_is_a_json_rpc_error_with_the_same_words(
    node: Harness,
) -> None:
    token = node.token("write", role="editor")
    batch = [
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
         "params": {"name": "note_edit", "arguments": {"path": "wiki/backoff"}}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "note_create", "arguments": {"path": "wiki/blind", "content": "b"}}},
    ]  # fmt: skip
    replies = {reply["id"]: reply for reply in (await node.post(batch, token=token)).json()}
    refused = replies[1]["error"]
    assert refused["data"]["code"] == "forbidden"
    assert "note_edit needs the read permission" in refused["message"]
    assert "ask for a grant with scope read_write" in refused["message"]
    assert replies[2]["result"]["isError"] is False


async def test_daily_note_without_append_is_a_read(node: Harness) -> None:
    token = node.token("write", role="editor")
    response = await node.post(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
         "params": {"name": "daily_note", "arguments": {"date": "2026-01-01"}}},
        token=token,
    )  # fmt: skip
    assert response.status_code == 403
    assert response.json()["error"]["message"].startswith("daily_note needs the read permission")
    appended = await node.ok("daily_note", {"date": "2026-01-01", "append": "x"}, token=token)
    assert set(appended) <= {"vault", "path", "date", "created", "existed", "dry_run"}


async def test_two_vaults_differing_only_in_content_give_a_blind_caller_identical_answers(
    start_node: NodeFactory,
) -> None:
    node = await start_node(ONE, vaults={"shadow": OTHER})
    _same_clock(node, "default", "shadow")
    token = node.token("write", role="editor")
    for tool, args in CALLS:
        first = await _answer(node, token, "default", tool, args)
        second = await _answer(node, token, "shadow", tool, args)
        assert first == second, (tool, args)
        assert "1234" not in first
        assert "unclosed" not in first


async def test_the_same_calls_do_differ_for_a_caller_who_may_read(
    start_node: NodeFactory,
) -> None:
    """The comparison above can see a difference: with read, the answers do depend on content."""
    node = await start_node(ONE, vaults={"shadow": OTHER})
    _same_clock(node, "default", "shadow")
    token = node.token("read write", role="editor")
    differing = []
    for tool, args in CALLS:
        if await _answer(node, token, "default", tool, args) != await _answer(
            node, token, "shadow", tool, args
        ):
            differing.append(tool)
    assert {"daily_note"} <= set(differing)


async def test_a_blind_append_lands_in_the_note_all_the_same(start_node: NodeFactory) -> None:
    node = await start_node(ONE)
    token = node.token("write", role="editor")
    answer = await node.ok(
        "daily_note", {"date": "2026-01-01", "append": "blind entry", "heading": "Log"}, token=token
    )
    assert answer["existed"] is True
    text = (node.data / "default" / SHAPE[2]).read_text()
    assert text.index("old") < text.index("blind entry")
    created = await node.ok("note_create", {"path": "wiki/fresh", "content": "hi"}, token=token)
    assert created["content_hash"]
    assert json.loads((await node.call("note_read", {"path": "wiki/fresh"}))["content"][0]["text"])
