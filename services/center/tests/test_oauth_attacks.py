"""The attack matrix of the OAuth flow: PKCE, code and refresh-token replay, foreign
clients, redirect URIs, resources — each refused the way RFC 6749/7636/8707 and
docs/design.md#token-endpoint say, each refusal logged with a reason, and nothing secret in a
log."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import pytest_asyncio
from fastapi import FastAPI

from center import testing as t
from center.config import Settings
from center.oauth import testing as o
from center.oauth.refresh import GRACE, MAX_DUPLICATES
from tickets import TokenError


@pytest_asyncio.fixture
async def http(center: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with t.client(center) as client:
        await o.add_node(client)
        await o.add_member(client)
        yield client


def refused(response: httpx.Response, error: str, status: int = 400) -> None:
    """An RFC 6749 §5.2 error body, not cacheable."""
    assert response.status_code == status, response.text
    assert response.json()["error"] == error
    assert response.json()["error_description"]
    assert response.headers["cache-control"] == "no-store"


async def session(http: httpx.AsyncClient) -> tuple[str, dict[str, Any]]:
    client_id, proof = await o.register(http), o.pkce()
    code = await o.code_for(http, client_id, proof)
    issued = await o.exchange(http, client_id, code, proof)
    assert issued.status_code == 200, issued.text
    return client_id, issued.json()


async def audit_actions(http: httpx.AsyncClient) -> list[str]:
    lines = (await http.get("/v1/audit", headers=t.ADMIN)).text.splitlines()
    return [json.loads(line)["action"] for line in lines]


def log_events(output: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")]


# ---------------------------------------------------------------- codes and PKCE


@pytest.mark.asyncio
async def test_a_wrong_verifier_is_refused_and_spends_the_code(http: httpx.AsyncClient) -> None:
    client_id, proof = await o.register(http), o.pkce()
    code = await o.code_for(http, client_id, proof)
    refused(await o.exchange(http, client_id, code, o.pkce()), "invalid_grant")
    refused(await o.exchange(http, client_id, code, proof), "invalid_grant")


@pytest.mark.asyncio
@pytest.mark.parametrize("verifier", ["", "short", "x" * 129, "ä" * 43, "a b" * 20])
async def test_a_malformed_verifier_is_refused(http: httpx.AsyncClient, verifier: str) -> None:
    client_id, proof = await o.register(http), o.pkce()
    code = await o.code_for(http, client_id, proof)
    body = {
        "grant_type": "authorization_code",
        "client_id": client_id,
        "code": code,
        "code_verifier": verifier,
    }
    response = await http.post("/token", data=body)
    refused(response, "invalid_request" if verifier == "" else "invalid_grant")


@pytest.mark.asyncio
async def test_a_reused_code_kills_what_it_produced(
    http: httpx.AsyncClient, clock: t.Clock, capsys: pytest.CaptureFixture[str]
) -> None:
    client_id, proof = await o.register(http), o.pkce()
    code = await o.code_for(http, client_id, proof)
    first = (await o.exchange(http, client_id, code, proof)).json()
    refused(await o.exchange(http, client_id, code, proof), "invalid_grant")
    refused(await o.refresh(http, client_id, first["refresh_token"]), "invalid_grant")
    with pytest.raises(TokenError, match="revoked"):
        (await t.verifier(http, clock)).verify(first["access_token"])
    events = log_events(capsys.readouterr().out)
    assert any(
        e["event"] == "token_reuse_detected" and e["reason"] == "code_reused" for e in events
    )
    assert "token.reuse_detected" in await audit_actions(http)


@pytest.mark.asyncio
async def test_a_code_for_another_client_is_refused(http: httpx.AsyncClient) -> None:
    mine, theirs, proof = await o.register(http), await o.register(http), o.pkce()
    code = await o.code_for(http, mine, proof)
    refused(await o.exchange(http, theirs, code, proof), "invalid_grant")
    refused(await o.exchange(http, mine, code, proof), "invalid_grant")


@pytest.mark.asyncio
async def test_a_code_lives_sixty_seconds(http: httpx.AsyncClient, clock: t.Clock) -> None:
    client_id, proof = await o.register(http), o.pkce()
    code = await o.code_for(http, client_id, proof)
    clock.advance(61)
    refused(await o.exchange(http, client_id, code, proof), "invalid_grant")


@pytest.mark.asyncio
async def test_redirect_uri_is_optional_at_the_token_endpoint_but_checked_if_sent(
    http: httpx.AsyncClient,
) -> None:
    client_id, proof = await o.register(http, (o.REDIRECT, "https://app.test/cb")), o.pkce()
    code = await o.code_for(http, client_id, proof)
    other = await o.exchange(http, client_id, code, proof, redirect_uri="https://app.test/cb")
    refused(other, "invalid_grant")
    code = await o.code_for(http, client_id, proof)
    same = await o.exchange(http, client_id, code, proof, redirect_uri=o.REDIRECT)
    assert same.status_code == 200


@pytest.mark.asyncio
async def test_an_unknown_code_is_refused(http: httpx.AsyncClient) -> None:
    client_id = await o.register(http)
    refused(await o.exchange(http, client_id, "made-up", o.pkce()), "invalid_grant")


# ---------------------------------------------------------------- /authorize


@pytest.mark.asyncio
async def test_an_unknown_client_gets_a_page_and_no_redirect(http: httpx.AsyncClient) -> None:
    response = await http.get("/authorize", params=o.authorize_params("nobody", o.pkce()))
    assert response.status_code == 400
    assert "location" not in response.headers
    assert response.headers["content-type"].startswith("text/html")
    assert "not registered" in response.text


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "attempt",
    [
        "https://evil.test/callback",
        "http://127.0.0.1:33418/callback/../../evil",
        "http://127.0.0.1:33418/callback?next=https://evil.test",
        "http://127.0.0.1:33418/callback#fragment",
        "http://127.0.0.1:33418/Callback",
        "http://127.0.0.1.evil.test:33418/callback",
        "http://evil@127.0.0.1:33418/callback",
        "http://localhost:33418/callback",
        "https://127.0.0.1:33418/callback",
        "//evil.test/callback",
        "javascript:alert(1)",
        "",
    ],
)
async def test_an_unregistered_redirect_uri_gets_a_page_and_no_redirect(
    http: httpx.AsyncClient, attempt: str
) -> None:
    client_id = await o.register(http)
    params = o.authorize_params(client_id, o.pkce(), redirect_uri=attempt)
    for response in (
        await http.get("/authorize", params=params),
        await http.post("/authorize", params=params, data={"csrf": "x"}),
    ):
        assert response.status_code == 400
        assert "location" not in response.headers
        assert "evil" not in response.text


@pytest.mark.asyncio
async def test_a_loopback_redirect_uri_matches_on_any_port(http: httpx.AsyncClient) -> None:
    client_id = await o.register(http, ("http://127.0.0.1/callback",))
    for port in (1, 33418, 65535):
        uri = f"http://127.0.0.1:{port}/callback"
        page = await http.get(
            "/authorize", params=o.authorize_params(client_id, o.pkce(), redirect_uri=uri)
        )
        assert page.status_code == 200
        assert (
            f"form-action 'self' http://127.0.0.1:{port};"
            in page.headers["content-security-policy"]
        )


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"response_type": "token"}, "unsupported_response_type"),
        ({"code_challenge_method": "plain"}, "invalid_request"),
        ({"code_challenge_method": None}, "invalid_request"),
        ({"code_challenge": None}, "invalid_request"),
        ({"code_challenge": "too-short"}, "invalid_request"),
        ({"state": "s" * 1025}, "invalid_request"),
        ({"resource": "https://unknown.test/mcp"}, "invalid_target"),
        ({"resource": "not a url"}, "invalid_target"),
        ({"resource": "https://node-a.test/mcp#frag"}, "invalid_target"),
    ],
)
async def test_a_bad_request_goes_back_to_the_proven_redirect_uri(
    http: httpx.AsyncClient, change: dict[str, str | None], error: str
) -> None:
    client_id = await o.register(http)
    params = dict(o.authorize_params(client_id, o.pkce()))
    for name, value in change.items():
        params.pop(name)
        if value is not None:
            params[name] = value
    response = await http.get("/authorize", params=params)
    back = o.redirect_params(response)
    assert response.headers["location"].startswith(o.REDIRECT + "?")
    assert back["error"] == error
    assert back["iss"] == t.ISSUER
    assert back.get("state") == (
        params.get("state") if len(params.get("state") or "") <= 1024 else None
    )


@pytest.mark.asyncio
async def test_a_parameter_sent_twice_is_refused(http: httpx.AsyncClient) -> None:
    client_id = await o.register(http)
    params = (*o.authorize_params(client_id, o.pkce()), ("client_id", client_id))
    response = await http.get("/authorize", params=params)
    assert response.status_code == 400
    assert "location" not in response.headers
    params = (*o.authorize_params(client_id, o.pkce()), ("scope", "read"), ("scope", "write"))
    assert o.redirect_params(await http.get("/authorize", params=params))["error"] == (
        "invalid_request"
    )


# ---------------------------------------------------------------- refresh tokens


@pytest.mark.asyncio
async def test_a_rotated_refresh_token_replayed_later_kills_the_family(
    http: httpx.AsyncClient, clock: t.Clock, capsys: pytest.CaptureFixture[str]
) -> None:
    client_id, first = await session(http)
    second = (await o.refresh(http, client_id, first["refresh_token"])).json()
    clock.advance(GRACE + 1)
    refused(await o.refresh(http, client_id, first["refresh_token"]), "invalid_grant")
    refused(await o.refresh(http, client_id, second["refresh_token"]), "invalid_grant")
    verifier = await t.verifier(http, clock)
    for issued in (first, second):
        with pytest.raises(TokenError, match="revoked"):
            verifier.verify(issued["access_token"])
    events = log_events(capsys.readouterr().out)
    reuse = [e for e in events if e["event"] == "token_reuse_detected"]
    assert [e["reason"] for e in reuse] == ["refresh_reused"]
    failures = [e["reason"] for e in events if e["event"] == "token_failed"]
    assert failures == ["refresh_reused", "family_revoked"]
    assert "token.reuse_detected" in await audit_actions(http)


@pytest.mark.asyncio
async def test_a_duplicate_refresh_within_the_grace_gets_the_same_tokens(
    http: httpx.AsyncClient, clock: t.Clock
) -> None:
    client_id, first = await session(http)
    one = await o.refresh(http, client_id, first["refresh_token"])
    clock.advance(GRACE - 1)
    two = await o.refresh(http, client_id, first["refresh_token"])
    assert one.status_code == two.status_code == 200
    assert one.json()["refresh_token"] == two.json()["refresh_token"]
    assert one.json()["access_token"] == two.json()["access_token"]
    assert two.json()["expires_in"] == one.json()["expires_in"] - (GRACE - 1)
    (await t.verifier(http, clock)).verify(two.json()["access_token"])  # live, not revoked
    third = await o.refresh(http, client_id, one.json()["refresh_token"])
    assert third.status_code == 200
    refused(await o.refresh(http, client_id, first["refresh_token"]), "invalid_grant")


@pytest.mark.asyncio
async def test_concurrent_refreshes_rotate_once(http: httpx.AsyncClient) -> None:
    client_id, first = await session(http)
    answers = await asyncio.gather(
        *(o.refresh(http, client_id, first["refresh_token"]) for _ in range(1 + MAX_DUPLICATES))
    )
    assert {answer.status_code for answer in answers} == {200}
    assert len({answer.json()["refresh_token"] for answer in answers}) == 1
    assert len({answer.json()["access_token"] for answer in answers}) == 1
    successor = answers[0].json()["refresh_token"]
    assert (await o.refresh(http, client_id, successor)).status_code == 200


@pytest.mark.asyncio
async def test_more_duplicates_than_a_client_would_retry_are_a_replay(
    http: httpx.AsyncClient, clock: t.Clock, capsys: pytest.CaptureFixture[str]
) -> None:
    client_id, first = await session(http)
    answers = [await o.refresh(http, client_id, first["refresh_token"])]
    for _ in range(MAX_DUPLICATES):
        clock.advance(1)
        answers.append(await o.refresh(http, client_id, first["refresh_token"]))
    assert [a.status_code for a in answers] == [200] * (1 + MAX_DUPLICATES)
    refused(await o.refresh(http, client_id, first["refresh_token"]), "invalid_grant")
    refused(await o.refresh(http, client_id, answers[0].json()["refresh_token"]), "invalid_grant")
    with pytest.raises(TokenError, match="revoked"):
        (await t.verifier(http, clock)).verify(answers[0].json()["access_token"])
    reuse = [e for e in log_events(capsys.readouterr().out) if e["event"] == "token_reuse_detected"]
    assert [e["reason"] for e in reuse] == ["refresh_repeated"]
    assert "token.reuse_detected" in await audit_actions(http)


@pytest.mark.asyncio
async def test_twelve_concurrent_refreshes_over_http_get_one_token_and_end_the_session(
    server: str, capsys: pytest.CaptureFixture[str]
) -> None:
    async with httpx.AsyncClient(base_url=server, timeout=60) as http:
        await o.add_node(http)
        await o.add_member(http)
        client_id, first = await session(http)
        answers = await asyncio.gather(
            *(o.refresh(http, client_id, first["refresh_token"]) for _ in range(12))
        )
        issued = [a.json() for a in answers if a.status_code == 200]
        assert len(issued) == 1 + MAX_DUPLICATES
        assert len({i["access_token"] for i in issued}) == 1
        assert len({i["refresh_token"] for i in issued}) == 1
        for answer in answers:
            if answer.status_code != 200:
                refused(answer, "invalid_grant")
        refused(await o.refresh(http, client_id, issued[0]["refresh_token"]), "invalid_grant")
        with pytest.raises(TokenError, match="revoked"):
            (await t.verifier(http, t.Clock(time.time()))).verify(issued[0]["access_token"])
        assert (await audit_actions(http)).count("token.reuse_detected") == 1


@pytest.mark.asyncio
async def test_a_duplicate_at_another_center_process_gets_the_same_tokens(
    twin_servers: tuple[str, str],
) -> None:
    one_url, other_url = twin_servers
    async with (
        httpx.AsyncClient(base_url=one_url, timeout=60) as one,
        httpx.AsyncClient(base_url=other_url, timeout=60) as other,
    ):
        await o.add_node(one)
        await o.add_member(one)
        client_id, first = await session(one)
        answers = await asyncio.gather(
            o.refresh(one, client_id, first["refresh_token"]),
            o.refresh(other, client_id, first["refresh_token"]),
        )
        assert [a.status_code for a in answers] == [200, 200]
        tokens = [(a.json()["access_token"], a.json()["refresh_token"]) for a in answers]
        assert tokens[0] == tokens[1]
        (await t.verifier(other, t.Clock(time.time()))).verify(tokens[0][0])
        assert (await o.refresh(other, client_id, tokens[0][1])).status_code == 200


@pytest.mark.asyncio
async def test_a_refresh_token_sent_by_another_client_kills_the_family(
    http: httpx.AsyncClient,
) -> None:
    client_id, first = await session(http)
    thief = await o.register(http)
    refused(await o.refresh(http, thief, first["refresh_token"]), "invalid_grant")
    refused(await o.refresh(http, client_id, first["refresh_token"]), "invalid_grant")


@pytest.mark.asyncio
async def test_an_unknown_client_at_the_token_endpoint_is_invalid_client(
    http: httpx.AsyncClient,
) -> None:
    _, first = await session(http)
    refused(await o.refresh(http, "nobody", first["refresh_token"]), "invalid_client", 401)


@pytest.mark.asyncio
async def test_a_refresh_token_expires(http: httpx.AsyncClient, clock: t.Clock) -> None:
    client_id, first = await session(http)
    clock.advance(30 * 86400 + 1)
    refused(await o.refresh(http, client_id, first["refresh_token"]), "invalid_grant")


# ---------------------------------------------------------------- resources (RFC 8707)


@pytest.mark.asyncio
async def test_an_unknown_resource_at_the_token_endpoint_is_invalid_target(
    http: httpx.AsyncClient,
) -> None:
    client_id, proof = await o.register(http), o.pkce()
    code = await o.code_for(http, client_id, proof)
    unknown = await o.exchange(http, client_id, code, proof, resource="https://unknown.test/mcp")
    refused(unknown, "invalid_target")
    client_id, first = await session(http)
    widened = await o.refresh(
        http, client_id, first["refresh_token"], resource="https://unknown.test/mcp"
    )
    refused(widened, "invalid_target")


@pytest.mark.asyncio
async def test_a_configured_resource_is_known_without_a_node(
    settings: Settings, clock: t.Clock
) -> None:
    extra = "https://extra.test/mcp"
    configured = settings.model_copy(update={"oauth_resources": (extra,)})
    passwords = o.fast_passwords()
    async with t.running(configured, clock, passwords=passwords) as app, t.client(app) as http:
        await o.add_member(http)
        client_id, proof = await o.register(http), o.pkce()
        code = await o.code_for(http, client_id, proof, resource=(extra,))
        issued = await o.exchange(http, client_id, code, proof)
        assert issued.status_code == 200, issued.text
        token = issued.json()["access_token"]
        assert (await t.verifier(http, clock, audience=extra)).verify(token)


# ---------------------------------------------------------------- the token endpoint


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("body", "content_type", "error"),
    [
        ("grant_type=password&client_id=x", None, "invalid_client"),
        ("client_id=x", None, "invalid_request"),
        ("grant_type=refresh_token", None, "invalid_request"),
        ('{"grant_type": "refresh_token"}', "application/json", "invalid_request"),
        ("grant_type=a&grant_type=b&client_id=x", None, "invalid_request"),
        (b"grant_type=\xff", None, "invalid_request"),
    ],
)
async def test_malformed_token_requests_are_refused_and_logged(
    http: httpx.AsyncClient,
    capsys: pytest.CaptureFixture[str],
    body: str | bytes,
    content_type: str | None,
    error: str,
) -> None:
    headers = {"Content-Type": content_type or "application/x-www-form-urlencoded"}
    response = await http.post("/token", content=body, headers=headers)
    refused(response, error, 401 if error == "invalid_client" else 400)
    failed = [e for e in log_events(capsys.readouterr().out) if e["event"] == "token_failed"]
    assert len(failed) == 1
    assert failed[0]["reason"]


@pytest.mark.asyncio
async def test_an_unsupported_grant_is_refused(http: httpx.AsyncClient) -> None:
    client_id = await o.register(http)
    body = {"grant_type": "client_credentials", "client_id": client_id}
    refused(await http.post("/token", data=body), "unsupported_grant_type")


# ---------------------------------------------------------------- the leak check


@pytest.mark.asyncio
async def test_no_password_code_or_token_reaches_a_log_line(
    http: httpx.AsyncClient, clock: t.Clock, capsys: pytest.CaptureFixture[str]
) -> None:
    secrets: list[str] = [o.PASSWORD, "WRONG-password-TELLTALE"]
    client_id, proof = await o.register(http), o.pkce()
    params = o.authorize_params(client_id, proof)
    failed = await o.sign_in(http, params, username="alice", password=secrets[1])
    t.refused(failed, 401, None, "Invalid username or password.")
    unknown = await o.sign_in(http, params, username="TELLTALE-user", password=secrets[1])
    t.refused(unknown, 401, None, "Invalid username or password.")
    code = o.redirect_params(await o.sign_in(http, params))["code"]
    secrets += [code, proof.verifier]
    issued = (await o.exchange(http, client_id, code, proof)).json()
    secrets += [issued["access_token"], issued["refresh_token"]]
    renewed = (await o.refresh(http, client_id, issued["refresh_token"])).json()
    secrets += [renewed["access_token"], renewed["refresh_token"]]
    await o.refresh(http, renewed["refresh_token"], renewed["refresh_token"])
    clock.advance(GRACE + 1)
    await o.refresh(http, client_id, issued["refresh_token"])
    await o.exchange(http, client_id, code, proof)
    output = capsys.readouterr().out
    assert "login_failed" in output
    assert "token_reuse_detected" in output
    assert "TELLTALE-user" not in output
    exported = (await http.get("/v1/audit", headers=t.ADMIN)).text
    for secret in secrets:
        assert secret not in output
        assert secret not in exported
