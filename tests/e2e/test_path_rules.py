"""Folder-scoped access end to end: a real center and a real node (each its own process),
the official MCP SDK as the client. A member limited to `projects/acme/` gets an agent token
that sees only those notes through the tools, and the grant it delegates, narrowed to
`projects/acme/inbox/`, writes only there."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tickets import SigningKey
from vault_node.testing import free_port

from .cluster import Cluster, mcp_session

pytestmark = pytest.mark.slow

NOTES = {
    "projects/acme/plan.md": "# Plan\n\nThe launch plan, see [[secret]].\n",
    "projects/acme/inbox/idea.md": "# Idea\n\nA launch idea.\n",
    "projects/acme/hr/salaries.md": "---\ntags: [payroll]\n---\n# Salaries\n\nlaunch bonus\n"
    "- [ ] pay the bonus\n",
    "projects/acme/hr/chart.png": "\x89PNG not really",
    "projects/other/secret.md": "# Secret\n\nlaunch codes [[projects/acme/plan]]\n",
}
ACME = {"team": {"read": ["projects/acme"], "exclude": ["projects/acme/hr"]}}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = Cluster(
        tmp_path_factory.mktemp("paths"), free_port(), SigningKey.generate().export_secret()
    )
    running.start_center()
    try:
        node = running.add_node("node-a", read_when_stale=False)
        for rel, text in NOTES.items():
            target = node.root / "data" / "team" / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        running.start_node(node)
        yield running
    finally:
        running.close()


def acme_member(cluster: Cluster, member: str = "acme-lead", scope: str = "read_write") -> str:
    body = {"id": member, "vaults": ["team"], "role": "owner", "scope": scope}
    created = cluster.admin("POST", "/v1/members", {**body, "paths": ACME})
    credential: str = created["credential"]
    return credential


async def tool(url: str, token: str, name: str, arguments: dict[str, Any]) -> Any:
    async with mcp_session(url, token) as session:
        return await session.call_tool(name, arguments)


@pytest.mark.asyncio
async def test_an_agent_limited_to_a_folder_sees_and_writes_only_there(cluster: Cluster) -> None:
    (node,) = cluster.nodes
    credential = acme_member(cluster)
    token = cluster.agent_token(credential)["token"]
    found = await tool(node.url, token, "note_search", {"query": "launch"})
    assert sorted(h["path"] for h in found.structured_content["hits"]) == [
        "projects/acme/inbox/idea.md",
        "projects/acme/plan.md",
    ]
    listed = await tool(node.url, token, "note_list", {"limit": 100})
    assert sorted(e["path"] for e in listed.structured_content["entries"]) == [
        "projects/acme/inbox/idea.md",
        "projects/acme/plan.md",
    ]
    hidden = await tool(node.url, token, "note_read", {"path": "projects/other/secret"})
    missing = await tool(node.url, token, "note_read", {"path": "projects/other/nothing"})
    assert hidden.is_error
    assert hidden.content[0].text.replace("secret", "nothing") == missing.content[0].text
    made = await tool(node.url, token, "note_create", {"path": "projects/acme/notes"})
    assert not made.is_error

    narrowed = {"team": {"read": ["projects/acme/inbox"]}}
    body = {"vault": "team", "scope": "read_write", "minutes": 30, "resource": [node.url]}
    grant = cluster.admin("POST", "/v1/grants", {**body, "paths": narrowed}, token=credential)
    into = {"path": "projects/acme/inbox/from-grant"}
    inbox = await tool(node.url, grant["token"], "note_create", into)
    assert not inbox.is_error
    outside = await tool(node.url, grant["token"], "note_create", {"path": "projects/acme/x"})
    assert outside.is_error
    assert "outside where you may write" in outside.content[0].text
    seen = await tool(node.url, grant["token"], "note_search", {"query": "launch"})
    assert [h["path"] for h in seen.structured_content["hits"]] == ["projects/acme/inbox/idea.md"]

    wider = {"team": {"read": ["projects"]}}
    refused = httpx.post(
        f"{cluster.center_url}/v1/grants",
        json={**body, "paths": wider},
        headers={"Authorization": f"Bearer {credential}"},
        timeout=30,
    )
    assert refused.status_code == 403
    assert "projects" in refused.json()["error"]["message"]
    assert not (node.root / "data/team/projects/acme/x.md").exists()


HIDDEN = ("launch codes", "launch bonus", "payroll", "pay the bonus", "not really")
HIDDEN_PATHS = ("projects/other", "acme/hr")  # unless the call itself names them
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n").decode()
EVERY_TOOL: dict[str, dict[str, Any]] = {
    "vault_list": {},
    "vault_stats": {},
    "note_list": {"limit": 100},
    "note_search": {"query": "launch codes bonus salaries secret"},
    "vault_grep": {"pattern": "launch|codes|bonus"},
    "tag_list": {},
    "task_list": {"include_done": True},
    "attachment_list": {},
    "vault_review": {},
    "note_read": {"path": "projects/acme/plan"},
    "note_outline": {"path": "projects/acme/plan"},
    "note_backlinks": {"path": "projects/acme/plan"},
    "note_related": {"path": "projects/acme/plan"},
    "daily_range": {},
    "attachment_read": {"path": "projects/acme/hr/chart.png"},
    "note_history": {"path": "projects/acme/plan"},
    "note_diff": {"path": "projects/acme/plan"},
    "note_create": {"path": "projects/other/new"},
    "note_write": {"path": "projects/other/secret", "content": "x", "content_hash": "0" * 32},
    "note_edit": {"path": "projects/acme/hr/salaries", "old_string": "launch", "new_string": "x"},
    "note_section_edit": {
        "path": "projects/other/secret",
        "mode": "append_to_note",
        "content": "x",
    },
    "note_frontmatter": {"path": "projects/other/secret", "set": {"x": 1}},
    "note_delete": {"path": "projects/acme/hr/salaries"},
    "task_toggle": {"path": "projects/other/secret", "line": 3},
    "attachment_put": {"path": "projects/other/x.png", "data": PNG},
    "note_from_template": {"template": "meeting", "title": "x", "path": "projects/other/x"},
    "daily_note": {"append": "x"},
    "inbox_capture": {"text": "x"},
    "note_move": {"path": "projects/other/secret", "to": "projects/acme/stolen"},
    "note_merge": {"path": "projects/acme/plan", "from": "projects/acme/hr/salaries"},
    "note_split": {"path": "projects/other/secret", "level": 1},
    "tag_rename": {"from": "acme", "to": "other", "dry_run": False},
    "vault_replace": {"pattern": "launch", "replace": "start", "dry_run": True},
    "vault_create": {"name": "mine"},
    "note_restore": {"path": "projects/other/secret", "revision": "HEAD", "dry_run": True},
}
READS = list(EVERY_TOOL)[: list(EVERY_TOOL).index("note_create")]
REFUSED = {
    "attachment_read",  # a hidden attachment is not found
    *(name for name in EVERY_TOOL if name not in READS),  # every write aimed outside
} - {"tag_rename", "vault_replace"}  # these change visible notes only, and say so


@pytest.mark.asyncio
async def test_no_tool_tells_an_agent_limited_to_a_folder_of_what_lies_outside(
    cluster: Cluster,
) -> None:
    """Every tool the node lists, called through the SDK by an agent whose member reads
    only projects/acme minus its hr folder, aimed at what it may not see: no answer holds a
    word of the hidden notes, and no hidden file changes."""
    (node,) = cluster.nodes
    team = node.root / "data/team/projects"
    outside = {p: p.read_bytes() for p in [*team.glob("other/*"), *team.glob("acme/hr/*")]}
    token = cluster.agent_token(acme_member(cluster, "acme-agent", "allow_all"))["token"]
    refused: dict[str, bool] = {}
    async with mcp_session(node.url, token) as session:
        listed = {t.name for t in (await session.list_tools()).tools}
        assert listed == set(EVERY_TOOL)
        for name, arguments in EVERY_TOOL.items():
            result = await session.call_tool(name, arguments)
            refused[name] = result.is_error
            said = json.dumps(
                [result.structured_content, [getattr(c, "text", "") for c in result.content]]
            ).lower()
            said = said.replace("except projects/acme/hr", "")  # its own rules, named back
            named = json.dumps(arguments)
            words = [*HIDDEN, *(path for path in HIDDEN_PATHS if path not in named)]
            assert not [word for word in words if word in said], (name, said[:300])
    assert {p: p.read_bytes() for p in outside} == outside
    assert {name for name, error in refused.items() if error} == REFUSED
