"""Logs: JSON lines, and no secret, token or password in any log line or error message.

The leak test runs a broad set of calls — successes and failures — and searches all
captured output and every error message for each secret the calls used or produced.
"""

from __future__ import annotations

import io
import json

import pytest

from center import testing as t
from center.config import Settings
from center.log import REDACTED, configure_logging, get_logger, scrub


def test_secret_shapes_are_scrubbed() -> None:
    samples = [
        "sbm_" + "A" * 43,
        "sbn_" + "b" * 43,
        "eyJhbGciOiJFZDI1NTE5In0.eyJzdWIiOiJ4In0.c2ln",
        "Bearer something-secret",
        "$argon2id$v=19$m=65536,t=3,p=1$c2FsdA$aGFzaA",
    ]
    for sample in samples:
        assert scrub(f"before {sample} after") == f"before {REDACTED} after"
    assert scrub({"k": ["Bearer x"]}) == {"k": [REDACTED]}
    assert scrub(7) == 7


def test_log_lines_are_json_and_scrubbed() -> None:
    stream = io.StringIO()
    configure_logging("info", stream)
    get_logger().info("event", note="Bearer abc", count=2)
    get_logger().debug("hidden")
    line = json.loads(stream.getvalue())
    assert (line["event"], line["note"], line["count"], line["level"]) == (
        "event",
        REDACTED,
        2,
        "info",
    )
    assert stream.getvalue().count("\n") == 1


async def _broad_flow(settings: Settings, password: str) -> tuple[list[str], list[str]]:
    """Run many calls; returns (secrets seen, error messages received)."""
    secrets, messages = [t.ADMIN_TOKEN, t.SECRET, password], []
    async with t.running(settings) as app, t.client(app) as client:
        owner = await t.add_member(client, "olga", role="owner", scope="all", password=password)
        bob = await t.add_member(client, "bob", role="editor", scope="rw")
        secrets += [owner, bob]
        token = await client.post(
            "/v1/tokens", json={"resource": [t.RESOURCE]}, headers=t.bearer(owner)
        )
        grant = await client.post(
            "/v1/grants",
            json={"vault": "team", "grantee": "bob", "resource": [t.RESOURCE]},
            headers=t.bearer(owner),
        )
        rotated = await client.patch(
            "/v1/members/bob", json={"rotate_credential": True}, headers=t.ADMIN
        )
        secrets += [token.json()["token"], grant.json()["token"], rotated.json()["credential"]]
        node = await client.post(
            "/v1/nodes", json={"id": "node-a", "resource": t.RESOURCE}, headers=t.ADMIN
        )
        node_credential = node.json()["credential"]
        secrets.append(node_credential)
        beat = {"vaults": ["team"], "audit_checkpoint": {"seq": 99999, "hash": "a" * 64}}
        await client.post("/v1/nodes/heartbeat", json=beat, headers=t.bearer(node_credential))
        await client.get("/v1/nodes", headers=t.ADMIN)
        await client.get("/v1/vaults", headers=t.bearer(owner))
        failures = [
            await client.get("/v1/session", headers=t.ADMIN),
            await client.get("/v1/session", headers=t.bearer(bob)),
            await client.get(f"/v1/members/{owner}", headers=t.ADMIN),
            await client.get(f"/v1/access/{owner}", headers=t.bearer(owner)),
            await client.delete(f"/v1/grants/{grant.json()['token']}", headers=t.ADMIN),
            await client.post("/v1/members", json={"id": owner, "vaults": ["t"]}, headers=t.ADMIN),
            await client.post(
                "/v1/members",
                json={"id": "x", "vaults": ["t"], "password": "short"},
                headers=t.ADMIN,
            ),
            await client.post(
                "/v1/members", json={"id": "y", "vaults": [password]}, headers=t.ADMIN
            ),
            await client.post(
                "/v1/grants",
                json={"vault": "team", "reason": token.json()["token"]},
                headers=t.ADMIN,
            ),
            await client.post(
                "/v1/tokens", json={"resource": [f"https://{owner}.test"]}, headers=t.bearer(bob)
            ),
            await client.post(
                "/v1/nodes/heartbeat", json={}, headers=t.bearer(node_credential + "x")
            ),
            await client.post("/v1/nodes/heartbeat", json={}, headers=t.bearer(owner)),
            await client.get("/v1/vaults", headers=t.bearer(node_credential)),
            await client.post(
                "/v1/nodes", json={"id": node_credential, "resource": t.RESOURCE}, headers=t.ADMIN
            ),
            await client.post(
                "/v1/nodes",
                json={"id": "node-b", "resource": f"http://{node_credential}.test"},
                headers=t.ADMIN,
            ),
        ]
        for response in failures:
            assert response.status_code >= 400
            messages.append(response.json()["error"]["message"])
        await client.get("/v1/audit", headers=t.ADMIN)
    return secrets, messages


@pytest.mark.asyncio
async def test_no_secret_appears_in_any_log_line_or_error_message(
    settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    password = "TELLTALE correct horse battery"
    secrets, messages = await _broad_flow(settings, password)
    captured = capsys.readouterr()
    output = captured.out + captured.err
    assert '"event": "request"' in output
    audit = (settings.data_dir / "audit.jsonl").read_text() if settings.backend == "sqlite" else ""
    for secret in secrets:
        assert secret not in output
        assert secret not in audit
        for message in messages:
            assert secret not in message, message
