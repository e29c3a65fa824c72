"""Bearer tokens on /mcp: one generic 401 for every refusal, 403 only for a missing permission,
the protected-resource metadata, CORS preflight, and the tool list each token sees."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from tickets import sign_snapshot
from tickets import testing as tt
from vault_node.testing import ISSUER, RESOURCE, Harness, NodeFactory, StubCenter, mint

pytestmark = pytest.mark.asyncio

PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
CHALLENGE = 'Bearer resource_metadata="https://node-a.test/.well-known/oauth-protected-resource"'
WRITE_TOOLS = {
    "note_create",
    "note_write",
    "note_edit",
    "note_section_edit",
    "note_frontmatter",
    "note_move",
    "note_from_template",
    "daily_note",
    "inbox_capture",
    "note_split",
    "task_toggle",
    "tag_rename",
    "vault_replace",
    "attachment_put",
    "note_restore",
}
DELETE_TOOLS = {"note_delete", "note_merge"}
ADDING_TOOLS = {"note_create", "inbox_capture", "daily_note", "attachment_put"}
"""All that a write-only (blind) token may call."""


def assert_generic_401(response: Any) -> None:
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == CHALLENGE
    assert response.json() == {
        "error": "invalid_token",
        "status": 401,
        "message": "a valid bearer token for this node is required",
    }


def assert_pong(response: Any) -> None:
    """A ping that passed authentication: 200 and the empty JSON-RPC result."""
    assert response.status_code == 200
    assert response.json() == {"jsonrpc": "2.0", "id": 1, "result": {}}


async def test_no_token_gets_the_generic_401(node: Harness) -> None:
    response = await node.client.post("/mcp", json=PING)
    assert_generic_401(response)


@pytest.mark.parametrize("header", ["Basic dXNlcjpwYXNz", "Bearer", "Bearer   ", "token abc"])
async def test_a_malformed_authorization_header_gets_the_generic_401(
    node: Harness, header: str
) -> None:
    response = await node.client.post("/mcp", json=PING, headers={"Authorization": header})
    assert_generic_401(response)


def bad_tokens(node: Harness) -> dict[str, str]:
    now = int(time.time())
    other = tt.throwaway_key()
    return {
        "garbage": "not.a.token",
        "unknown key": mint(other),
        "forged signature": tt.mint(other, now=now, aud=RESOURCE, header={"kid": node.key.kid}),
        "alg none": tt.mint(
            node.key, now=now, aud=RESOURCE, header={"alg": "none"}, signer=tt.none_signer
        ),
        "hs256 confusion": tt.mint(
            node.key,
            now=now,
            aud=RESOURCE,
            header={"alg": "HS256"},
            signer=tt.hs256_signer(node.key.public.raw),
        ),
        "expired": tt.mint(node.key, now=now - 7200, aud=RESOURCE),
        "not yet valid": tt.mint(node.key, now=now + 3600, aud=RESOURCE),
        "wrong audience": mint(node.key, audience="https://node-b.test/mcp"),
        "wrong issuer": mint(node.key, iss="https://evil.test"),
        "too long lived": tt.mint(node.key, now=now, aud=RESOURCE, exp=now + 86400),
        "missing sub": mint(node.key, sub=tt.DROP),
        "wrong typ": mint(node.key, header={"typ": "JWT"}),
    }


TOLD = {
    "expired": "this token has expired; ask the center for a new one",
    "wrong audience": (
        f"this token is for another node; ask the center for one whose resource is {RESOURCE}"
    ),
}
"""A genuine token's holder can read these from the token itself, so the 401 says them."""


async def test_every_bad_token_gets_the_same_401(node: Harness) -> None:
    for name, token in bad_tokens(node).items():
        response = await node.post(PING, token=token)
        assert response.status_code == 401, name
        if name in TOLD:
            assert response.headers["www-authenticate"] == CHALLENGE
            assert response.json() == {
                "error": "invalid_token",
                "status": 401,
                "message": TOLD[name],
            }
        else:
            assert_generic_401(response)


async def test_a_token_for_the_node_with_its_resource_url_passes(node: Harness) -> None:
    assert_pong(await node.post(PING, token=mint(node.key)))


async def test_a_revoked_token_is_refused_after_the_next_snapshot(node: Harness) -> None:
    token = mint(node.key, jti="jti-revoked")
    assert_pong(await node.post(PING, token=token))
    revoked = tt.snapshot(seq=2, iat=int(time.time()), tokens={"jti-revoked": 2**40})
    node.config.revocation_file.write_text(sign_snapshot(revoked, node.key))  # type: ignore[union-attr]
    assert node.app.state.node.feed.poll_once()
    assert_generic_401(await node.post(PING, token=token))
    assert_pong(await node.post(PING, token=mint(node.key, jti="other")))


async def test_a_revoked_grant_kills_its_tokens(node: Harness) -> None:
    token = mint(
        node.key, gid="g-child", chain=["g-root", "g-child"], dep=2, exp=int(time.time()) + 600
    )
    assert_pong(await node.post(PING, token=token))
    revoked = tt.snapshot(seq=2, iat=int(time.time()), grants={"g-root": 2**40})
    node.config.revocation_file.write_text(sign_snapshot(revoked, node.key))  # type: ignore[union-attr]
    assert node.app.state.node.feed.poll_once()
    assert_generic_401(await node.post(PING, token=token))


async def test_without_any_revocation_snapshot_every_token_is_refused(
    start_node: NodeFactory,
) -> None:
    node = await start_node()
    node.config.revocation_file.write_text("garbage")  # type: ignore[union-attr]
    feed = node.app.state.node.feed
    feed.state.snapshot = None
    assert not feed.poll_once()
    assert_generic_401(await node.post(PING))


async def test_a_stale_snapshot_refuses_reads_unless_configured(node: Harness) -> None:
    stale = tt.snapshot(seq=5, iat=int(time.time()) - 1000)
    state = node.app.state.node.verifier.revocation
    state.update(stale, signed_by=node.key.kid)
    assert_generic_401(await node.post(PING))


async def test_a_stale_snapshot_with_read_when_stale_serves_reads_not_writes(
    start_node: NodeFactory,
) -> None:
    node = await start_node(read_when_stale=True)
    node.app.state.node.verifier.revocation.update(
        tt.snapshot(seq=5, iat=int(time.time()) - 1000), signed_by=node.key.kid
    )
    assert (await node.call("vault_stats"))["isError"] is False
    response = await node.post(call_message("inbox_capture", {"text": "x"}))
    assert_generic_401(response)
    tools = (await node.rpc("tools/list"))["result"]["tools"]
    assert {t["name"] for t in tools}.isdisjoint(WRITE_TOOLS)


async def test_a_key_added_to_the_jwks_file_is_picked_up_on_first_use(node: Harness) -> None:
    rotated = tt.throwaway_key()
    node.config.jwks_file.write_text(json.dumps(tt.key_set(node.key, rotated).to_jwks()))  # type: ignore[union-attr]
    assert_pong(await node.post(PING, token=mint(rotated)))


def message(body: dict[str, Any]) -> dict[str, str]:
    return {"message": body["message"]} if isinstance(body.get("message"), str) else {}


def call_message(tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments or {}},
    }


@pytest.mark.parametrize(
    ("scope", "role", "tool", "arguments", "needed"),
    [
        ("read", "reader", "inbox_capture", {"text": "x"}, "write"),
        ("write", "editor", "note_read", {"path": "wiki/backoff"}, "read"),
        ("write", "editor", "note_edit", {"path": "wiki/backoff"}, "read write"),
        ("read write", "editor", "note_delete", {"path": "wiki/backoff"}, "delete read write"),
        ("read write", "editor", "note_merge", {"path": "a", "from": "b"}, "delete read write"),
        ("read write delete", "admin", "vault_create", {"name": "x"}, "delete manage read write"),
        ("read write delete manage", "reader", "inbox_capture", {"text": "x"}, "write"),
    ],
)
async def test_a_missing_permission_is_403_insufficient_scope(
    node: Harness, scope: str, role: str, tool: str, arguments: dict[str, Any], needed: str
) -> None:
    token = node.token(scope, role=role)
    response = await node.post(call_message(tool, arguments), token=token)
    assert response.status_code == 403
    body = response.json()
    data = {"code": "forbidden", "status": 403, "scope": needed}
    error = {"code": -32001, "data": data, **message(body["error"])}
    assert body == {"jsonrpc": "2.0", "id": 7, "error": error}
    assert body["error"]["message"].startswith(f"{tool} needs the ")
    assert "ask for a grant with scope" in body["error"]["message"]
    challenge = response.headers["www-authenticate"]
    assert f'error="insufficient_scope", scope="{needed}"' in challenge
    assert "resource_metadata=" in challenge


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("note_create", {"path": "wiki/backoff", "overwrite": True}),
        ("note_move", {"path": "wiki/backoff", "to": "wiki/rate-limiting", "overwrite": True}),
        ("attachment_put", {"path": "attachments/diagram.png", "data": "AAAA", "overwrite": True}),
    ],
)
async def test_an_overwrite_that_displaces_needs_the_delete_permission(
    start_node: NodeFactory, tool: str, arguments: dict[str, Any]
) -> None:
    node = await start_node()
    token = node.token("read write", role="editor")
    response = await node.post(call_message(tool, arguments), token=token)
    assert response.status_code == 403
    assert response.json()["error"]["data"]["scope"] == "delete read write"


async def test_an_overwrite_flag_on_a_new_path_needs_no_delete(node: Harness) -> None:
    token = node.token("read write", role="editor")
    result = await node.call("note_create", {"path": "wiki/fresh", "overwrite": True}, token=token)
    assert result["isError"] is False


async def test_a_forbidden_call_inside_a_batch_is_an_error_object(node: Harness) -> None:
    token = node.token("read", role="reader")
    response = await node.post(
        [call_message("inbox_capture", {"text": "x"}), {**PING, "id": 8}], token=token
    )
    assert response.status_code == 200
    first, second = response.json()
    assert first["error"]["code"] == -32001
    assert first["error"]["data"]["code"] == "forbidden"
    assert second["result"] == {}


@pytest.mark.parametrize(
    ("scope", "role", "expected"),
    [
        ("read", "reader", 35 - len(WRITE_TOOLS) - len(DELETE_TOOLS) - 1),
        ("write", "editor", len(ADDING_TOOLS)),
        ("read write", "editor", 35 - len(DELETE_TOOLS) - 1),
        ("read write delete", "admin", 34),
        ("read write delete manage", "owner", 35),
        ("read write delete manage", "reader", 35 - len(WRITE_TOOLS) - len(DELETE_TOOLS) - 1),
    ],
)
async def test_tools_list_shows_exactly_the_permitted_tools(
    node: Harness, scope: str, role: str, expected: int
) -> None:
    tools = (await node.rpc("tools/list", token=node.token(scope, role=role)))["result"]["tools"]
    names = {tool["name"] for tool in tools}
    assert len(names) == expected
    if scope == "write":
        assert names == ADDING_TOOLS


async def test_an_unknown_and_a_forbidden_vault_answer_identically(
    start_node: NodeFactory,
) -> None:
    node = await start_node(vaults={"team": {"a.md": "# A\n"}, "secret": {"b.md": "# B\n"}})
    token = node.token(vaults=["team"])
    forbidden = await node.fails("note_read", {"path": "b", "vault": "secret"}, token=token)
    missing = await node.fails("note_read", {"path": "b", "vault": "nosuch"}, token=token)
    assert forbidden[0] == missing[0] == "unknown_vault"
    assert forbidden[1].replace("secret", "X") == missing[1].replace("nosuch", "X")
    default = await node.fails("vault_stats", {}, token=token)
    assert default[0] == "unknown_vault"
    listed = await node.ok("vault_list", token=token)
    assert [v["name"] for v in listed["vaults"]] == ["team"]


@pytest.mark.parametrize(
    "path", ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"]
)
async def test_protected_resource_metadata_is_public_and_cached(node: Harness, path: str) -> None:
    response = await node.client.get(path)
    assert response.status_code == 200
    assert response.headers["cache-control"] == "max-age=300"
    document = response.json()
    assert document["resource"] == RESOURCE
    assert document["authorization_servers"] == [ISSUER]
    assert document["bearer_methods_supported"] == ["header"]


@pytest.mark.parametrize("path", ["/mcp", "/.well-known/oauth-protected-resource"])
async def test_cors_preflight_needs_no_token(node: Harness, path: str) -> None:
    response = await node.client.options(
        path,
        headers={
            "Origin": "https://inspector.example",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type, mcp-protocol-version",
        },
    )
    assert response.status_code == 200
    assert "authorization" in response.headers["access-control-allow-headers"].lower()
    assert response.headers["access-control-allow-origin"] in ("*", "https://inspector.example")


async def test_keys_and_revocations_come_from_the_center_url(start_node: NodeFactory) -> None:
    center = StubCenter(tt.throwaway_key())
    try:
        node = await start_node(
            center_url=center.url, issuer=tt.ISSUER, jwks_file=None, revocation_file=None
        )
        token = mint(center.key, jti="jti-online")
        assert_pong(await node.post(PING, token=token))
        center.snapshot = tt.snapshot(seq=2, tokens={"jti-online": 2**40})
        assert node.app.state.node.feed.poll_once()
        assert_generic_401(await node.post(PING, token=token))
        center.snapshot = tt.snapshot(seq=1)
        assert not node.app.state.node.feed.poll_once()  # a rollback is refused
        assert_generic_401(await node.post(PING, token=token))
    finally:
        center.close()
