"""Write tests/vectors/center_tokens.json: tokens a real center issued, each with the
verdict a node must reach — the center-side companion of tokens.json.

A center runs in process on a fixed clock and the TEST-ONLY secret; it issues agent
tokens, a grant, a grant delegated with a grant token, then revokes and changes what the
invalid vectors need, and publishes the revocation snapshot every vector is checked
against. Ids and jtis are random, so a rerun writes other tokens with the same verdicts;
test_vectors.py checks the verdicts and that a center today still issues tokens of the
recorded shape.

    .venv/bin/python services/center/tests/make_vectors.py
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

import httpx

from center import testing as t
from tickets import SigningKey, sign
from tickets.keys import b64url_decode

OUTPUT = Path(__file__).resolve().parents[3] / "tests" / "vectors" / "center_tokens.json"
NODE_B = "https://node-b.test/mcp"
SKEW = 60


class Mint:
    """Drives the center over HTTP; every call must succeed."""

    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http = http

    async def call(self, method: str, path: str, bearer: str, **body: Any) -> Any:
        answer = await self.http.request(method, path, json=body or None, headers=t.bearer(bearer))
        assert answer.status_code in (200, 201), answer.text
        return answer.json()

    async def member(self, member_id: str, role: str, scope: str) -> str:
        body = {"id": member_id, "vaults": ["team"], "role": role, "scope": scope}
        created = await self.call("POST", "/v1/members", t.ADMIN_TOKEN, **body)
        return str(created["credential"])

    async def token(self, bearer: str, **body: Any) -> dict[str, Any]:
        minted: dict[str, Any] = await self.call(
            "POST", "/v1/tokens", bearer, resource=[t.RESOURCE], **body
        )
        return minted

    async def grant(self, bearer: str, **body: Any) -> dict[str, Any]:
        issued: dict[str, Any] = await self.call(
            "POST", "/v1/grants", bearer, vault="team", resource=[t.RESOURCE], **body
        )
        return issued


def ok(token: dict[str, Any], **ticket: Any) -> dict[str, Any]:
    base = {
        "principal": token.get("grantee", token.get("subject")),
        "vaults": ["team"],
        "grant_id": None,
        "chain": [],
        "client_id": None,
        "exp": token.get("expiry", token.get("expires_at")),
        "kind": "agent",
        "stale": False,
    }
    return {"ok": True, "ticket": {**base, **ticket}}


def no(reason: str) -> dict[str, Any]:
    return {"ok": False, "reason": reason}


def tampered(token: str) -> str:
    header, payload, signature = token.split(".")
    other = "A" if signature[10] != "A" else "B"
    return f"{header}.{payload}.{signature[:10]}{other}{signature[11:]}"


async def issue(mint: Mint, clock: t.Clock) -> list[dict[str, Any]]:
    olga = await mint.member("olga", "owner", "allow_all")
    ada = await mint.member("ada", "admin", "read_write_delete")
    await mint.member("ed", "editor", "read_write")
    agent = await mint.token(olga, minutes=60)
    long = await mint.token(olga, minutes=90 * 24 * 60, scope="read")
    grant = await mint.grant(t.ADMIN_TOKEN, scope="rw", grantee="ed", minutes=15)
    root = await mint.grant(t.ADMIN_TOKEN, scope="all", minutes=30)
    child = await mint.grant(root["token"], scope="rw", minutes=10)
    revoked_grant = await mint.grant(t.ADMIN_TOKEN, scope="read", minutes=30)
    await mint.call("DELETE", f"/v1/grants/{revoked_grant['id']}", t.ADMIN_TOKEN)
    revoked_agent = await mint.token(olga, minutes=60)
    await mint.call("DELETE", f"/v1/tokens/{revoked_agent['jti']}", t.ADMIN_TOKEN)
    doomed_root = await mint.grant(t.ADMIN_TOKEN, scope="all", minutes=30)
    orphan = await mint.grant(doomed_root["token"], scope="read", minutes=10)
    await mint.call("DELETE", f"/v1/grants/{doomed_root['id']}", t.ADMIN_TOKEN)
    changed = await mint.token(ada, minutes=60)
    await mint.call("PATCH", "/v1/members/ada", t.ADMIN_TOKEN, scope="read")
    stranger = SigningKey.generate()
    foreign = sign(_payload(agent["token"]), stranger, typ="at+jwt")
    rw, every = ["read", "write"], ["delete", "manage", "read", "write"]
    return [
        _v("valid_agent_token", agent, ok(agent, permissions=every, role="owner")),
        _v("valid_agent_token_90_days", long, ok(long, permissions=["read"], role="owner")),
        _v("valid_grant_token", grant, ok(grant, permissions=rw, role="editor", **_of(grant))),
        _v(
            "valid_delegated_grant_token",
            child,
            ok(child, permissions=rw, role="owner", **_of(child)),
        ),
        _v("bad_aud_other_node", agent, no("bad_aud"), audience=NODE_B),
        _v("expired_agent_token", agent, no("expired"), now=agent["expires_at"] + SKEW),
        _v("expired_grant_token", grant, no("expired"), now=grant["expiry"] + SKEW),
        _v("bad_signature_tampered", {"token": tampered(agent["token"])}, no("bad_signature")),
        _v("unknown_kid_other_center", {"token": foreign}, no("unknown_kid")),
        _v("revoked_grant", revoked_grant, no("revoked")),
        _v("revoked_agent_token", revoked_agent, no("revoked")),
        _v("revoked_ancestor", orphan, no("revoked")),
        _v("generation_after_member_change", changed, no("generation")),
        _v("stale_without_snapshot", agent, no("stale"), revocation=None),
        _v("stale_old_snapshot", agent, no("stale"), now=clock() + 121),
    ]


def _payload(token: str) -> dict[str, Any]:
    payload: dict[str, Any] = json.loads(b64url_decode(token.split(".")[1]))
    return payload


def _of(grant: dict[str, Any]) -> dict[str, Any]:
    """The ticket fields a grant token adds."""
    return {"grant_id": grant["id"], "chain": grant["chain"], "kind": "grant"}


def _v(name: str, issued: dict[str, Any], expect: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"name": name, "token": issued["token"], "expect": expect, **extra}


async def build() -> dict[str, Any]:
    """The whole vector document, from a fresh center."""
    clock = t.Clock()
    with tempfile.TemporaryDirectory() as folder:
        settings = t.settings(Path(folder) / "center", log_level="error")
        async with t.running(settings, clock) as app, t.client(app) as http:
            mint = Mint(http)
            vectors = await issue(mint, clock)
            jwks = (await http.get("/.well-known/jwks.json")).json()
            snapshot = (await http.get("/v1/revocations")).json()["snapshot"]
    return {
        "description": "tokens a secondbrain center issued, and each one's verdict at a node",
        "warning": "TEST-ONLY key derived from a public string; never use it for anything real",
        "test_secret_hex": t.SECRET,
        "jwks": jwks,
        "issuer": t.ISSUER,
        "audience": t.RESOURCE,
        "now": int(clock()),
        "skew": SKEW,
        "max_stale": 120,
        "revocation": snapshot,
        "vectors": vectors,
    }


def render(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def main() -> None:
    document = asyncio.run(build())
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(render(document), encoding="utf-8")
    print(f"wrote {len(document['vectors'])} vectors to {OUTPUT}")


if __name__ == "__main__":
    main()
